"""Whether a run's held-out k-NN accuracy has stopped rising: the rule that says a
schedule was long enough.

A run has reached its plateau when its k-NN top-1 accuracy gained less than a threshold
over the last ``fraction`` of its schedule (default :data:`FRACTION`): from the last
evaluation at or before ``(1 - fraction)`` of the final epoch to the final one. A run whose
accuracy still climbs by more is cut short, and a profile of it is one of a network still
learning. The threshold is ``gain`` points (default :data:`GAIN`) or, where the records say
how many images the accuracy was measured on, :data:`NOISE_ERRORS` binomial standard errors
of the last accuracy (:func:`knn_standard_error`) when that is more: a change within the
noise of the held-out images says nothing either way. The same threshold says whether the
run learned at all, from its random initialisation.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The share of the schedule the rule looks back over.
FRACTION = 0.25
#: Points of k-NN top-1 accuracy below which the run counts as flat, at least.
GAIN = 1.0
#: Standard errors of the last accuracy below which a change is noise.
NOISE_ERRORS = 2.0


@dataclass(frozen=True)
class Plateau:
    """The rule applied to one run.

    Attributes:
        reached: whether the gain stayed below ``threshold``.
        gained: k-NN top-1 points gained from ``since_epoch`` to ``last_epoch``.
        learned: points gained over the whole run, from the random initialisation (the first
            record): a plateau at the initialisation's accuracy is not one of a network that learned.
        since_epoch, last_epoch: the evaluations compared.
        threshold: the gain the rule allowed, in points.
        fraction: the share of the schedule it looked back over.
        best: the most points gained from the random initialisation at any evaluation, and
            best_epoch: where; a run read at its end may have stood higher before.
    """

    reached: bool
    gained: float
    learned: float
    since_epoch: int
    last_epoch: int
    threshold: float
    fraction: float
    best: float = float("nan")
    best_epoch: int = 0

    @property
    def learned_beyond_noise(self) -> bool:
        """Whether the run gained at least the threshold over the whole run."""
        return self.learned >= self.threshold


def plateau(knn: Sequence[dict], fraction: float = FRACTION, gain: float = GAIN, key: str = "top1") -> Plateau:
    """The plateau rule on a run's k-NN records (``metrics.jsonl``'s ``"knn"`` lines, epoch 0
    first), on the CLS token's accuracy by default (``key="top1_mean"``: mean patch token)."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must lie between 0 and 1, not {fraction}")
    if len(knn) < 2:
        raise ValueError("the plateau rule needs at least two k-NN evaluations (the random initialisation and one more)")
    last = knn[-1]
    start = max((r for r in knn if r["epoch"] <= (1 - fraction) * last["epoch"]), key=lambda r: r["epoch"])
    gained = last[key] - start[key]
    threshold = smallest_detectable_gain(last["n_eval"], last[key], gain) if "n_eval" in last else gain
    best = max(knn[1:], key=lambda r: r[key])
    return Plateau(gained < threshold, gained, last[key] - knn[0][key], start["epoch"], last["epoch"], threshold,
                   fraction, best[key] - knn[0][key], best["epoch"])


def smallest_detectable_gain(n_images: int, accuracy: float, gain: float = GAIN) -> float:
    """The rule's power: the smallest k-NN gain, in points, it tells from noise when the
    accuracy (in %) is measured on ``n_images`` held-out images: ``gain`` or
    :data:`NOISE_ERRORS` binomial standard errors (:func:`knn_standard_error`), whichever is
    more. On 1,000 images at 20-40 %, about 2.5-3.1 points; on 144 at 40-55 %, about 8."""
    return max(gain, NOISE_ERRORS * knn_standard_error({"top1": accuracy, "n_eval": n_images}))


def knn_standard_error(record: dict, key: str = "top1") -> float:
    """The binomial standard error, in points, of a k-NN accuracy ``record`` (a
    ``metrics.jsonl`` k-NN line with ``key`` in % and ``n_eval`` images):
    :math:`100 \\sqrt{p (1 - p) / n}`."""
    share = record[key] / 100
    return 100 * math.sqrt(share * (1 - share) / record["n_eval"])
