r"""Whether a run learned: the plateau of its k-NN accuracy, and the one rule every chapter applies.

A run has reached its plateau when its k-NN top-1 gained less than a threshold over the last
:data:`FRACTION` of its schedule. The threshold is :data:`GAIN` points or, where the records say
how many images the accuracy was measured on, :data:`NOISE_ERRORS` binomial standard errors of
the last accuracy when that is more: a change within the noise says nothing either way.

A run learned when both hold, read from its own records:

1. **Its k-NN accuracy rose** from its random initialisation by at least that threshold
   (:func:`smallest_detectable_gain`).
2. **For DINO, its teacher still said something about the image**: its information about the
   image, averaged over the last logged tenth of training, stayed at or above the collapse
   threshold the training loop warns at (:data:`~ib_tutorial.training.dino.INFORMATION_FRACTION`
   of :math:`\log K`). A collapsed teacher leaves no objective, yet the backbone keeps moving and
   its k-NN accuracy can drift either way (20.6 -> 31.1 % in ``results/laptop-knob-dino``).

A run with no teacher records is read on condition 1 alone.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..training.dino import INFORMATION_FRACTION
from ..training.runs import RunDirectory
from .bundles import BundleRun


#: The share of the schedule the rule looks back over.
FRACTION = 0.25
#: Points of k-NN top-1 accuracy below which the run counts as flat, at least.
GAIN = 1.0
#: Standard errors of the last accuracy below which a change is noise.
NOISE_ERRORS = 2.0


@dataclass(frozen=True)
class Plateau:
    """The plateau rule applied to one run, gains in k-NN top-1 points: ``reached`` when
    ``gained`` (from ``since_epoch`` to ``last_epoch``) stayed below ``threshold``; ``learned``
    is the gain over the whole run, ``best`` the largest at any evaluation (at ``best_epoch``)."""

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
    """The plateau rule on a run's k-NN records (epoch 0 first), on the CLS token by default."""
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
    """The smallest k-NN gain (points) the rule tells from noise at ``accuracy`` % on ``n_images``:
    ``gain`` or :data:`NOISE_ERRORS` standard errors, whichever is more. On 1,000 images at
    20-40 %, about 2.5-3.1 points; on 144 at 40-55 %, about 8."""
    return max(gain, NOISE_ERRORS * knn_standard_error({"top1": accuracy, "n_eval": n_images}))


def knn_standard_error(record: dict, key: str = "top1") -> float:
    """The binomial standard error :math:`100 \\sqrt{p (1 - p) / n}`, in points, of a k-NN line
    with ``key`` in % and ``n_eval`` images."""
    share = record[key] / 100
    return 100 * math.sqrt(share * (1 - share) / record["n_eval"])


@dataclass(frozen=True)
class Learned:
    """The learned rule applied to one run: the plateau rule on its CLS k-NN, and the teacher's
    information and collapse threshold in nats (None for a run that logged no teacher)."""

    knn: Plateau
    teacher_information: float | None
    teacher_floor: float | None

    @property
    def teacher_kept(self) -> bool:
        """Whether the teacher stayed above the collapse threshold (True without one)."""
        return self.teacher_information is None or self.teacher_information >= self.teacher_floor

    @property
    def learned(self) -> bool:
        """Both conditions hold."""
        return self.knn.learned_beyond_noise and self.teacher_kept

    def reason(self) -> str:
        """Why the run counts as learned or not, in words."""
        gain = f"CLS k-NN {self.knn.learned:+.1f} points from the random initialisation (threshold {self.knn.threshold:.1f})"
        if self.teacher_information is None:
            return gain
        teacher = (f"teacher information {self.teacher_information:.2f} nats over the last tenth "
                   f"({'at or above' if self.teacher_kept else 'under'} the collapse threshold {self.teacher_floor:.2f})")
        return f"{gain}; {teacher}"


def last_tenth(records: Sequence[dict]) -> Sequence[dict]:
    """The last tenth of a run's logged training records (at least one)."""
    return records[-max(1, len(records) // 10):]


def teacher_information(train: Sequence[dict]) -> float | None:
    """The teacher's mean information about the image (nats) over the last tenth of a run's
    training records, None where none logged it."""
    information = [r["teacher_information"] for r in last_tenth(train) if "teacher_information" in r]
    return sum(information) / len(information) if information else None


def learned_rule(run: BundleRun | RunDirectory, gain: float = GAIN) -> Learned:
    """The rule on a run of a bundle, or on a run directory read from its own records."""
    if isinstance(run, RunDirectory):
        knn, train, out_dim = run.read_metrics("knn"), run.read_metrics("train"), run.read_config().train.out_dim
    else:
        knn, train, out_dim = run.knn, run.train, run.config.train.out_dim
    information = teacher_information(train)
    floor = None if information is None else INFORMATION_FRACTION * math.log(out_dim)
    return Learned(plateau(knn, gain=gain), information, floor)


def run_learned(run: BundleRun | RunDirectory, gain: float = GAIN) -> bool:
    """Whether ``run`` learned by :func:`learned_rule`."""
    return learned_rule(run, gain).learned
