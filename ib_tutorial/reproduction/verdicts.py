"""The paper's claims (:mod:`~ib_tutorial.reproduction.claims`) asked of groups of committed
runs, as the book asks them: of one run, of the seeds of one setting, and of the seeds at one
weight of the texture knob, on the trained level and on the change from the random
initialisation. Each group's verdict follows the rules of that module: a network that did not
learn (:mod:`~ib_tutorial.reproduction.learned`) gets no verdict, and a setting's verdict holds or fails only where
every seed learned and agrees (:func:`~ib_tutorial.reproduction.claims.across_seeds`).
"""
from __future__ import annotations

from collections.abc import Sequence

from . import claims
from .bundles import BundleRun
from .claims import ClaimTest, ShapeSummary
from .learned import run_learned
from .seeds import SeedSpread

#: The two readings of a knob end's profile: the trained level, and what training changed.
READINGS = ("level", "change from init")


def _learned(runs: Sequence[BundleRun]) -> list[bool]:
    """Whether each run learned (:mod:`~ib_tutorial.reproduction.learned`), in ascending seed, as :class:`SeedSpread` orders them."""
    return [run_learned(run) for run in sorted(runs, key=lambda run: run.config.seed)]


def _own_claims(first: ShapeSummary, last: ShapeSummary) -> list[ClaimTest]:
    """The three claims a run's own profiles answer: a mid-depth minimum, that it deepens over
    training, a late re-expansion."""
    return [claims.mid_depth_minimum(last), claims.deepens(first, last), claims.late_reexpansion(last)]


def run_tests(run: BundleRun) -> list[ClaimTest]:
    """The three claims of :func:`_own_claims` on one run's first and last profiles; each
    ``not applicable`` where the run did not learn."""
    first, last = claims.profile_shape(run.profiles[0]), claims.profile_shape(run.profiles[-1])
    learned = run_learned(run)
    return [claims.on_learned(test, learned) for test in _own_claims(first, last)]


def seed_tests(spread: SeedSpread, runs: Sequence[BundleRun]) -> tuple[list[tuple[str, ClaimTest]], list[ClaimTest]]:
    """The three claims of :func:`run_tests` on every seed of one setting (``spread`` of its
    ``runs``): each seed's tests as ``("seed N", test)``, then the setting's verdict on each
    claim over the seeds."""
    per_seed = [(f"seed {run.seed}", test) for run in spread.runs for test in _own_claims(run.first, run.last)]
    by_claim: dict[str, list[ClaimTest]] = {}
    for _, test in per_seed:
        by_claim.setdefault(test.claim, []).append(test)
    learned = _learned(runs)
    return per_seed, [claims.across_seeds(tests, learned, spread.seeds) for tests in by_claim.values()]


def knob_end_tests(spread: SeedSpread, runs: Sequence[BundleRun]) -> dict[str, tuple[list[ClaimTest], ClaimTest]]:
    """The mid-depth minimum at one weight of the knob, trained with several seeds (``spread``
    of its ``runs``), for each of :data:`READINGS`: every seed's test, then the verdict over
    the seeds. On the change from the initialisation, a minimum means a middle that gained less
    than both ends."""
    learned = _learned(runs)
    profiles = {"level": lambda run: run.last,
                "change from init": lambda run: claims.change_from_initialisation(run.first, run.last)}
    tested = {}
    for reading in READINGS:
        per_seed = [claims.mid_depth_minimum(profiles[reading](run)) for run in spread.runs]
        tested[reading] = (per_seed, claims.across_seeds(per_seed, learned, spread.seeds))
    return tested
