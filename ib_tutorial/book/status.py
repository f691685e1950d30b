"""Where the paper's claims stand on the networks trained here: every test the chapters ask of
them in one list, and every network read with the book's learned rule
(:mod:`~ib_tutorial.book.learned`). The claims chapter shows the list
(:func:`~ib_tutorial.book.claims.status_markdown`) and the introduction its summary
(:func:`status_summary`), so the two cannot disagree.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..measure.shape import ProfileShape, Verdict
from . import claims
from .bundles import BundleRun, load_bundle, stored_entry
from .claims import ClaimTest, SeedSpread, ShapeSummary, knob_end_tests, run_tests, seed_tests
from .dataset_runs import DatasetRun, longest_run
from .knob import DINO_HUE_SWEEP, DINO_TIER_ENDS, KnobSweep, recipe_sweep, seeds_by_weight, sweep_claims, widest_sweep
from .learned import Learned, knn_standard_error, learned_rule

#: The two kinds of data the paper contrasts, and the objectives trained on both.
DATA = {"tiny-imagenet": "objects", "dtd": "textures"}
OBJECTIVES = ("supervised", "dino")
#: The DINO recipes run along the knob, by the views they draw.
DINO_KNOB_RECIPES = {"tier's views": DINO_TIER_ENDS, "every hue drawn": DINO_HUE_SWEEP}

Tested = list[tuple[str, ClaimTest]]


@dataclass(frozen=True)
class Network:
    """One trained network: the learned rule on its records and its last saved profile."""

    label: str
    objective: str
    rule: Learned
    last: ShapeSummary

    @classmethod
    def of(cls, label: str, run: BundleRun) -> Network:
        return cls(label, run.config.train.objective, learned_rule(run), claims.profile_shape(run.profiles[-1]))


@dataclass(frozen=True)
class SeedGroup:
    """The seeds of one setting (``"dino, dtd (textures)"``), ascending, and their claims
    (:func:`~ib_tutorial.book.claims.seed_tests`): each seed's, then the verdicts over them."""

    setting_label: str
    spread: SeedSpread
    runs: list[BundleRun]
    per_seed: Tested
    setting: list[ClaimTest]

    @property
    def epochs(self) -> int:
        return self.spread.runs[0].last.epoch

    @property
    def label(self) -> str:
        return f"{self.setting_label}, seeds {', '.join(map(str, self.spread.seeds))}, {self.epochs} epochs"

    def seed_label(self, seed: int) -> str:
        return f"{self.setting_label}, seed {seed}, {self.epochs} epochs"


@dataclass(frozen=True)
class ClaimStatus:
    """Every ``(network or group of seeds, test)`` of the chapters, and every network they read, each once."""

    tests: Tested
    networks: list[Network]

    def counts(self) -> Counter:
        return Counter(test.verdict for _, test in self.tests)

    def held(self) -> Tested:
        return [(subject, test) for subject, test in self.tests if test.verdict is Verdict.HOLDS]


def longest_runs() -> dict[tuple[str, str], DatasetRun]:
    """The committed run that trained longest for each (data set, objective), where there is one."""
    found = {(dataset, objective): longest_run(dataset, objective) for dataset in DATA for objective in OBJECTIVES}
    return {key: entry for key, entry in found.items() if entry is not None}


def run_label(key: tuple[str, str], entry: DatasetRun) -> str:
    dataset, objective = key
    return f"{objective}, {dataset} ({DATA[dataset]}), seed {entry.run.config.seed}, {entry.run.profiles[-1].epoch} epochs"


def seed_group(key: str, dataset: str) -> SeedGroup | None:
    """The seeds of manifest entry ``key`` on ``dataset`` and their claims; None for fewer than two."""
    folder = stored_entry(key)
    found = load_bundle(folder).runs.values() if folder.exists() else ()
    runs = sorted((run for run in found if run.spec.dataset == dataset), key=lambda run: run.config.seed)
    if len(runs) < 2:
        return None
    spread = SeedSpread.of(runs)
    per_seed, setting = seed_tests(spread, runs)
    return SeedGroup(f"{runs[0].config.train.objective}, {dataset} ({DATA.get(dataset, dataset)})", spread, runs,
                     per_seed, setting)


def longest_run_tests(found: dict[tuple[str, str], DatasetRun], lenders: Tested = ()) -> Tested:
    """The claims on each longest run and, per objective, objects against textures. The supervised
    Tiny ImageNet run, profiled without a bootstrap, borrows an interval
    (:func:`~ib_tutorial.book.claims.borrowed_test`) from ``lenders``, its seeds' tests."""
    by_claim: dict[str, list[ClaimTest]] = {}
    for _, test in lenders:
        by_claim.setdefault(test.claim, []).append(test)
    shapes = {key: [claims.profile_shape(record) for record in entry.run.profiles] for key, entry in found.items()}
    learned = {key: learned_rule(entry.run).learned for key, entry in found.items()}
    tested = []
    for key, run in shapes.items():
        for test in (claims.mid_depth_minimum(run[-1]), claims.deepens(run[0], run[-1]), claims.late_reexpansion(run[-1])):
            if key == ("tiny-imagenet", "supervised") and test.interval is None and test.claim in by_claim:
                test = claims.borrowed_test(test, by_claim[test.claim])
            tested.append((run_label(key, found[key]), claims.on_learned(test, learned[key])))
    for objective in OBJECTIVES:
        objects, textures = ("tiny-imagenet", objective), ("dtd", objective)
        if objects in shapes and textures in shapes:
            test = claims.deeper_for_objects(shapes[objects][-1], shapes[textures][-1])
            tested.append((f"{objective}: Tiny ImageNet (objects) against DTD (textures), "
                           f"{shapes[objects][-1].epoch} and {shapes[textures][-1].epoch} epochs",
                           claims.on_learned(test, learned[objects] and learned[textures])))
    return tested


def _sweep_status(name: str, sweep: KnobSweep) -> tuple[Tested, list[Network]]:
    """A knob sweep's tests (:func:`~ib_tutorial.book.knob.sweep_claims`), every seed's own, and at
    each weight trained from more seeds, the verdict over them."""
    runs = [run for _, run in sweep.runs.values()]
    runs += [run for pair in seeds_by_weight(sweep).values() for run in pair if run.config.seed != runs[0].config.seed]
    networks, tested = [], []
    for run in runs:
        network = Network.of(f"{name}, w = {float(run.config.dataset_options['texture_weight']):g}, "
                             f"seed {run.config.seed}", run)
        networks.append(network)
        tested += [(f"{network.label}, epoch {network.last.epoch}", test) for test in run_tests(run)]
    tested += [(f"{name}, {subject}", test) for subject, test in sweep_claims(sweep) if not subject.startswith("w = ")]
    for weight, pair in seeds_by_weight(sweep).items():
        seeds = ", ".join(str(run.config.seed) for run in pair)
        tested += [(f"{name}, w = {weight:g}, seeds {seeds} ({reading})", together)
                   for reading, (_, together) in knob_end_tests(SeedSpread.of(pair), pair).items()]
    return tested, networks


def knob_status() -> tuple[Tested, list[Network]]:
    """Every test of the knob chapter: the supervised sweep and the DINO sweeps, with their seeds."""
    sweeps = {"supervised knob": widest_sweep("supervised")}
    sweeps |= {f"DINO knob ({views})": recipe_sweep(recipe) for views, recipe in DINO_KNOB_RECIPES.items()}
    found = [_sweep_status(name, sweep) for name, sweep in sweeps.items() if sweep is not None]
    return [test for tests, _ in found for test in tests], [network for _, networks in found for network in networks]


def claim_status() -> ClaimStatus:
    """Every test the chapters ask of the committed networks, each network once."""
    found = longest_runs()
    networks = [Network.of(run_label(key, entry), entry.run) for key, entry in found.items()]
    supervised = seed_group("supervised-seeds", "tiny-imagenet")
    groups = [group for group in (supervised, seed_group("dino-tier-48-seeds", "tiny-imagenet"),
                                  seed_group("dino-tier-48-seeds", "dtd")) if group is not None]
    tested: Tested = []
    for group in groups:
        for run in group.runs:
            network = Network.of(group.seed_label(run.config.seed), run)
            # Two networks are one where their objective and last profile are.
            if (network.objective, network.last.n_eff) not in {(n.objective, n.last.n_eff) for n in networks}:
                networks.append(network)
                tested += [(network.label, claims.on_learned(test, network.rule.learned))
                           for seed, test in group.per_seed if seed == f"seed {run.config.seed}"]
        tested += [(group.label, test) for test in group.setting]
    tested += longest_run_tests(found, supervised.per_seed if supervised is not None else ())
    for key, label in (("dino-48-epochs", "dino, {dataset} ({kind}), {epochs} epochs, before the warm-up floors"),
                       ("gpu-dino-paper-recipe", "DINO ViT-S, `paper` recipe, {dataset}, one GPU, {epochs} epochs")):
        folder = stored_entry(key)
        for run in (load_bundle(folder).runs.values() if folder.exists() else ()):
            network = Network.of(label.format(dataset=run.spec.dataset, kind=DATA.get(run.spec.dataset),
                                              epochs=run.knn[-1]["epoch"]), run)
            networks.append(network)
            tested += [(network.label, test) for test in run_tests(run)]
    knob_tests, knob_networks = knob_status()
    return ClaimStatus(tested + knob_tests, networks + knob_networks)


def status_summary(status: ClaimStatus) -> str:
    """How many tests hold, fail, are undetermined or not applicable; the ones that hold, named."""
    counts = status.counts()
    held = "; ".join(f"{test.claim} on {subject}" for subject, test in status.held())
    return (f"Of {len(status.tests)} tests, {counts[Verdict.HOLDS]} hold, {counts[Verdict.FAILS]} fail and "
            f"{counts[Verdict.UNDETERMINED]} are undetermined on networks that learned; "
            f"{counts[Verdict.NOT_APPLICABLE]} read networks that did not learn, on which the claims are not applicable."
            + (f" The ones that hold: {held}." if held else ""))


def learned_summary(status: ClaimStatus) -> str:
    """Which networks learned, objective by objective: the DINO ones named, the supervised counted."""
    parts = []
    for objective in OBJECTIVES:
        mine = [network for network in status.networks if network.objective == objective]
        learned = [network.label for network in mine if network.rule.learned]
        if objective == "supervised":
            parts.append(f"{len(learned)} of the {len(mine)} supervised networks learned")
        else:
            parts.append(f"{len(learned)} of the {len(mine)} DINO networks learned: {'; '.join(learned) or 'none'}")
    return "By the book's learned rule, " + ", and ".join(parts) + "."


def u_profiles(status: ClaimStatus) -> list[Network]:
    """The networks whose last profile the shape rule names a U."""
    return [network for network in status.networks if network.last.shape is ProfileShape.U]


def knn_gains(found: dict[tuple[str, str], DatasetRun], dataset: str) -> str:
    """One sentence: the CLS k-NN top-1 of each objective's longest run on ``dataset``, from the
    random initialisation to the last epoch."""
    gains = []
    for objective in OBJECTIVES:
        if (entry := found.get((dataset, objective))) is not None:
            first, last = entry.run.knn[0], entry.run.knn[-1]
            gains.append(f"{objective} {last['top1'] - first['top1']:+.1f} points ({first['top1']:.1f} % -> "
                         f"{last['top1']:.1f} % in {last['epoch']} epochs; one standard error "
                         f"{knn_standard_error(last):.1f} points on {last['n_eval']:,} images)")
    return (f"k-NN top-1 on {dataset} ({DATA[dataset]}), CLS token, random initialisation to last epoch: "
            + "; ".join(gains) + ".")


def status_values(status: ClaimStatus) -> dict[str, float | str]:
    """What the claims chapter's text glues of the table."""
    counts = status.counts()
    ends = [network.last for network in status.networks]
    return {
        "status_tests": len(status.tests), "status_holds": counts[Verdict.HOLDS], "status_fails": counts[Verdict.FAILS],
        "status_undetermined": counts[Verdict.UNDETERMINED],
        "trained_u_runs": "; ".join(f"{network.label}, middle dip {network.last.middle_dip:+.1f} directions"
                                    for network in u_profiles(status)) or "none",
        "trained_end_shapes": ", ".join(sorted({str(end.shape) for end in ends})),
        "trained_networks": len(ends),
        "trained_early_max": max(end.early for end in ends),
    }


def seed_group_values(group: SeedGroup, prefix: str) -> dict[str, str]:
    """What a chapter's text glues of two seeds (``prefix`` names them)."""
    first, second = (run.last for run in group.spread.runs[:2])
    dip = claims.mid_depth_minimum(second)
    interval = "" if dip.interval is None else f", 90 % interval {dip.interval.low:+.1f} to {dip.interval.high:+.1f}"
    return {f"{prefix}_seed0_shape": f"{first.shape.value} (middle dip {first.middle_dip:+.1f} directions)",
            f"{prefix}_seed1_shape": f"{second.shape.value} (middle dip {second.middle_dip:+.1f} directions{interval})",
            f"{prefix}_seed1_lowest": f"L{second.lowest_block}",
            f"{prefix}_seed1_share": f"{group.spread.runs[1].shape_share:.0%}"}
