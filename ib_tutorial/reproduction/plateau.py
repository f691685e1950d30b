"""Whether a run's held-out k-NN accuracy has stopped rising: the rule that says a
schedule was long enough.

A run has reached its plateau when its k-NN top-1 accuracy gained less than ``gain``
points (default :data:`GAIN`) over the last ``fraction`` of its schedule (default
:data:`FRACTION`): from the last evaluation at or before ``(1 - fraction)`` of the final
epoch to the final one. A run whose accuracy still climbs by more is cut short, and a
profile of it is one of a network still learning.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The share of the schedule the rule looks back over.
FRACTION = 0.25
#: Points of k-NN top-1 accuracy below which the run counts as flat.
GAIN = 1.0


@dataclass(frozen=True)
class Plateau:
    """The rule applied to one run.

    Attributes:
        reached: whether the gain stayed below ``threshold``.
        gained: k-NN top-1 points gained from ``since_epoch`` to ``last_epoch``.
        learned: points gained over the whole run, from the random initialisation (the first
            record): a plateau at the initialisation's accuracy is not one of a network that learned.
        since_epoch, last_epoch: the evaluations compared.
        threshold: the gain the rule allowed.
        fraction: the share of the schedule it looked back over.
    """

    reached: bool
    gained: float
    learned: float
    since_epoch: int
    last_epoch: int
    threshold: float
    fraction: float


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
    return Plateau(gained < gain, gained, last[key] - knn[0][key], start["epoch"], last["epoch"], gain, fraction)
