"""Whether a run learned: the one rule every chapter applies before it reads a profile.

Two conditions, both measured from the run's own records:

1. **Its k-NN accuracy rose** (:attr:`~ib_tutorial.reproduction.plateau.Plateau.learned_beyond_noise`):
   the CLS token's held-out k-NN top-1 ended above its random initialisation by at least
   the plateau rule's threshold (one point, or two standard errors of the last evaluation
   when that is more). That threshold is the rule's power, the smallest gain it tells from
   the noise of the held-out images
   (:func:`~ib_tutorial.reproduction.plateau.smallest_detectable_gain`: about 2.5-3.1 points
   on 1,000 images at 20-40 %, about 8 on DTD's 144).
2. **For DINO, its teacher still said something about the image**: the teacher's
   information about its image (:class:`~ib_tutorial.training.dino.DINOLossOutput`),
   averaged over the last logged tenth of training, stayed at or above the collapse
   threshold the training loop warns at
   (:data:`~ib_tutorial.training.dino_step.INFORMATION_FRACTION` of :math:`\\log K`).

The second condition is there because a DINO run whose teacher has collapsed to the same
output for every image has a flat loss at :math:`\\log K` and no objective left, yet its
backbone keeps moving under the optimiser and its k-NN accuracy can drift either way: on
the knob's object end, views whose colour carries nothing across views collapsed the
teacher by step 280 while the k-NN accuracy went 20.6 -> 31.1 % (``results/laptop-knob-dino``).
That rise is not DINO learning, and its profile is not a DINO network's. A run with no
teacher (supervised) or one that predates the teacher's records is read on condition 1 alone.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..training.dino_step import INFORMATION_FRACTION
from ..training.runs import RunDirectory
from .bundles import BundleRun
from .plateau import GAIN, Plateau, plateau


@dataclass(frozen=True)
class Learned:
    """The rule applied to one run.

    Attributes:
        knn: the plateau rule on its CLS k-NN records (condition 1).
        teacher_information: the teacher's mean information about the image over the last
            logged tenth of training, in nats; None for a run that logged no teacher.
        teacher_floor: the collapse threshold it is held to, in nats; None likewise.
    """

    knn: Plateau
    teacher_information: float | None
    teacher_floor: float | None

    @property
    def teacher_kept(self) -> bool:
        """Whether the teacher stayed above the collapse threshold (True for a run without one)."""
        return self.teacher_information is None or self.teacher_information >= self.teacher_floor

    @property
    def learned(self) -> bool:
        """Both conditions: the k-NN gain reached the threshold, and the teacher did not collapse."""
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
    training records (``metrics.jsonl``'s ``"train"`` lines), None where none logged it."""
    information = [r["teacher_information"] for r in last_tenth(train) if "teacher_information" in r]
    return sum(information) / len(information) if information else None


def learned_rule(run: BundleRun | RunDirectory, gain: float = GAIN) -> Learned:
    """The rule on one run: a run of a bundle, or a run directory read from its own records
    (a run committed with its settings and metrics only); ``gain``: the plateau rule's floor
    in points."""
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
