"""The texture knob: the sweeps' recipes and runs, and what the knob chapter renders of them.

``synthetic-mix`` blends each image as ``(1 - w) object + w texture`` of the same class
(:mod:`ib_tutorial.data.synthetic`): ``w`` moves the evidence for the label from the shape to the
texture, and with it the pixel statistics, so each run is read against its own random
initialisation. A sweep is the runs of one bundle that differ only in ``w`` (a
:class:`KnobRecipe` writes them); :func:`~ib_tutorial.book.claims.knob_trend` fits a shape
statistic against ``w``. Each ``*_section`` function renders one section of the chapter.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from ..command_line import command_line, reproduce_argv
from ..data.synthetic import SyntheticWorld
from ..measure.bootstrap import LEVEL, Interval
from ..measure.shape import depth_regions, middle_dip
from ..training.dino import INFORMATION_FRACTION
from ..training.run_config import RunSpec
from . import claims
from .bundles import Bundle, BundleRun, load_bundles
from .claims import (ClaimTest, SeedSpread, claims_markdown, claims_summary, interval_text, knn_interval,
    knob_end_tests, knob_trend, lowest_text, region_change, seeds_markdown)
from .learned import GAIN, NOISE_ERRORS, plateau, run_learned
from .plots import (add_caption, epoch_label, plot_block_profile, plot_knn_curves, plot_knob_knn, plot_knob_profiles,
    plot_run_comparison, plot_seed_profiles, profile_caption)
from .tables import ResultSection, absent


#: The dataset whose option ``texture_weight`` is the knob.
KNOB_DATASET = "synthetic-mix"


@dataclass(frozen=True)
class KnobRecipe:
    """A sweep as its commands write it: the weights, the ``settings`` every run sets after
    ``@``, and the world's other options (``object_scale=1.6,clutter=0``)."""

    weights: tuple[float, ...]
    settings: str
    world: str = ""

    def specs(self, seed: int = 0) -> list[str]:
        """One run spec per weight; a ``seed`` other than the preset's 0 is one more setting."""
        world = f",{self.world}" if self.world else ""
        seeded = f",seed={seed}" if seed else ""
        return [f"{KNOB_DATASET}:texture_weight={weight:g}{world}@{self.settings}{seeded}" for weight in self.weights]


#: The sweep at a recipe whose object end learns on one core (pilots in ``results/README.md``),
#: weights dense where a probe on local patches finds the evidence moving from shape to texture.
OBJECT_SWEEP = KnobRecipe(
    (0, 0.05, 0.1, 0.2, 0.4, 1),
    "objective=supervised,epochs=24,lr=0.0005,warmup_epochs=2,local_crops_number=0,global_crop_scale=(0.9,1.0),"
    "blur_radius=(0.0,0.0),color_strength=0.0,knn_every=4",
    "object_scale=1.6,clutter=0")
#: The second seed of :data:`OBJECT_SWEEP`'s two ends.
OBJECT_SEEDS = KnobRecipe((0, 1), OBJECT_SWEEP.settings, OBJECT_SWEEP.world)
#: DINO at the two ends of :data:`OBJECT_SWEEP`'s world and geometry, for about an hour of one
#: core each, with the tier's own views (DINO learns from its augmentations, which the
#: supervised recipe turns off) and its former schedule: neither end learned.
DINO_TIER_ENDS = KnobRecipe((0, 1), "objective=dino,epochs=16,knn_every=2,checkpoint_every=2", OBJECT_SWEEP.world)
#: The DINO chapter's CPU recipe with every view's hue drawn anew (``hue_jitter=0.5``), so that
#: the random colours the worlds paint carry nothing from one view to another. The texture end learns.
DINO_HUE_SWEEP = KnobRecipe(
    (0, 0.2, 1), "objective=dino,epochs=16,batch_size=32,out_dim=1024,momentum_teacher=0.996,local_crops_number=2,"
    "local_crop_size=24,local_crop_scale=(0.2,0.5),hue_jitter=0.5,knn_every=2,checkpoint_every=2,threads=1",
    OBJECT_SWEEP.world)
#: The second seed of :data:`DINO_HUE_SWEEP`'s texture end, the end that learned.
DINO_HUE_SEEDS = KnobRecipe((1,), DINO_HUE_SWEEP.settings, DINO_HUE_SWEEP.world)

#: The small sweep a chapter trains live on ``ci``.
LIVE_SWEEP = KnobRecipe((0, 0.5, 1), "objective=supervised,arch=vit_tiny,checkpoint_every=3")


@dataclass(frozen=True)
class KnobSweep:
    """The runs of one bundle along the knob (``runs``: weight -> (spec, run), ascending) with
    one objective, the same settings after ``@`` and the same world's other options."""

    bundle: Bundle
    objective: str
    overrides: tuple[tuple[str, str], ...]
    runs: dict[float, tuple[str, BundleRun]]
    world: tuple[tuple[str, str], ...] = ()

    @property
    def weights(self) -> list[float]:
        return list(self.runs)

    @property
    def epochs(self) -> int:
        """The last saved epoch the runs share."""
        return min(run.profiles[-1].epoch for _, run in self.runs.values())

    def learned(self, gain: float = GAIN) -> list[float]:
        """The weights whose run learned."""
        return [weight for weight, (_, run) in self.runs.items() if run_learned(run, gain)]


def knob_sweeps(bundles: Iterable[str | Path | Bundle] | None = None) -> list[KnobSweep]:
    """Every sweep of two weights or more in ``bundles`` (default: those committed)."""
    sweeps = []
    for bundle in load_bundles(bundles):
        groups: dict[tuple, dict[float, tuple[str, BundleRun]]] = {}
        for spec, run in bundle.runs.items():
            if run.spec.dataset != KNOB_DATASET:
                continue
            weight = float(run.config.dataset_options["texture_weight"])
            key = (run.config.train.objective, _settings(run.spec.overrides), _world(run.config.dataset_options))
            groups.setdefault(key, {})[weight] = (spec, run)
        sweeps += [KnobSweep(bundle, objective, overrides, dict(sorted(runs.items())), world)
                   for (objective, overrides, world), runs in groups.items() if len(runs) >= 2]
    return sweeps


def widest_sweep(objective: str, bundles: Iterable[str | Path | Bundle] | None = None) -> KnobSweep | None:
    """The sweep of ``objective`` with the most weights, then the most epochs; None for none."""
    return _widest(sweep for sweep in knob_sweeps(bundles) if sweep.objective == objective)


def recipe_sweep(recipe: KnobRecipe, bundles: Iterable[str | Path | Bundle] | None = None) -> KnobSweep | None:
    """The widest sweep that ``recipe``'s specs (seed 0) trained, at two of its weights or more."""
    wanted = RunSpec.parse(recipe.specs()[0])
    overrides, world = _settings(wanted.overrides), _world(wanted.options)
    return _widest(sweep for sweep in knob_sweeps(bundles) if sweep.overrides == overrides and sweep.world == world
                   and set(sweep.weights) <= set(recipe.weights))


def _settings(settings: dict) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, str(value)) for key, value in settings.items()))


def _world(options: dict) -> tuple[tuple[str, str], ...]:
    return _settings({key: value for key, value in options.items() if key != "texture_weight"})


def _widest(sweeps: Iterable[KnobSweep]) -> KnobSweep | None:
    return max(sweeps, key=lambda sweep: (len(sweep.runs), sweep.epochs), default=None)


def seeds_by_weight(sweep: KnobSweep) -> dict[float, list[BundleRun]]:
    """By weight, the runs of the sweep's bundle that differ from its own only in their seed (two or more)."""
    def unseeded(overrides: tuple[tuple[str, str], ...]) -> tuple:
        return tuple((key, value) for key, value in overrides if key != "seed")

    runs: dict[float, list[BundleRun]] = {}
    for run in sweep.bundle.runs.values():
        if (run.spec.dataset == KNOB_DATASET and run.config.train.objective == sweep.objective
                and _world(run.config.dataset_options) == sweep.world
                and unseeded(_settings(run.spec.overrides)) == unseeded(sweep.overrides)):
            runs.setdefault(float(run.config.dataset_options["texture_weight"]), []).append(run)
    return {weight: sorted(seeded, key=lambda run: run.config.seed)
            for weight, seeded in sorted(runs.items()) if len(seeded) >= 2}


def knob_command(preset: str, recipe: KnobRecipe, out: str, seed: int = 0) -> str:
    """The ``reproduce`` command that trains, profiles and prunes a sweep into ``out``."""
    return command_line(reproduce_argv(preset, recipe.specs(seed), out=out))


def sweep_caption(sweep: KnobSweep) -> str:
    """What made a sweep's figures: bundle, objective, weights, settings, and the last profile's provenance."""
    settings = ",".join(f"{key}={value}" for key, value in sweep.overrides) or "the tier's own"
    world = "".join(f", {key}={value}" for key, value in sweep.world)
    _, run = next(iter(sweep.runs.values()))
    return (f"bundle {sweep.bundle.name}: {sweep.objective}, {KNOB_DATASET}{world} at w = "
            f"{', '.join(f'{w:g}' for w in sweep.weights)}, settings {settings}; {profile_caption(run.profiles[-1])}")


def sweep_claims(sweep: KnobSweep) -> list[tuple[str, ClaimTest]]:
    """The paper's claims on every weight's last profile, and claim 3 along the knob."""
    last = {weight: claims.profile_shape(run.profiles[-1]) for weight, (_, run) in sweep.runs.items()}
    learned = sweep.learned()
    tested = [(f"w = {weight:g}, epoch {last[weight].epoch}", test)
              for weight, (_, run) in sweep.runs.items() for test in claims.run_tests(run)]
    tested.append((f"every weight, w = {sweep.weights[0]:g} to {sweep.weights[-1]:g}, epoch {sweep.epochs}",
                   claims.on_learned(claims.deeper_along_knob(sweep.weights, list(last.values())),
                                     learned == sweep.weights)))
    if len(learned) >= 2 and learned != sweep.weights:  # the knob without the networks that did not learn
        tested.append((f"the weights that learned, w = {', '.join(f'{w:g}' for w in learned)}",
                       claims.deeper_along_knob(learned, [last[w] for w in learned])))
    return tested


def sweep_table(sweep: KnobSweep) -> str:
    """A row a weight: whether it learned, its k-NN, shape, middle dip and middle level."""
    lines = ["| w | learned | k-NN top-1 %: init -> end [interval] | shape at the end (share) | middle dip (directions) "
             "| middle EED%: init -> end | middle change (points) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    learned = sweep.learned()
    for weight, (_, run) in sweep.runs.items():
        first, last = claims.profile_shape(run.profiles[0]), claims.profile_shape(run.profiles[-1])
        knn_end = knn_interval(run.knn[-1])
        knn = f"{run.knn[0]['top1']:.1f} -> {run.knn[-1]['top1']:.1f}" + (f" {interval_text(knn_end)}" if knn_end else "")
        if last.bootstrap is not None and first.bootstrap is not None:
            share = last.bootstrap.shape_shares(claims.MARGIN).get(last.shape, 0.0)
            shape = f"{last.shape} ({share:.0%})"
            depth = f"{last.middle_dip:.1f} {interval_text(last.bootstrap.interval(middle_dip), signed=True)}"
            change = region_change(first, last, "middle")
            middle_change = f"{change.estimate:+.1f} {interval_text(change, signed=True)}"
        else:
            shape, depth = str(last.shape), f"{last.middle_dip:.1f}"
            middle_change = f"{last.middle - first.middle:+.1f} (no bootstrap)"
        lines.append(f"| {weight:g} | {'yes' if weight in learned else 'no'} | {knn} | {shape} | {depth} | "
                     f"{first.middle:.1f} -> {last.middle:.1f} | {middle_change} |")
    return "\n".join(lines) + "\n"


def learned_sentence(sweep: KnobSweep) -> str:
    """Which weights' networks learned and which did not."""
    learned = sweep.learned()
    others = [weight for weight in sweep.weights if weight not in learned]
    names = lambda weights: ", ".join(f"w = {w:g}" for w in weights)
    rule = (f"k-NN top-1 above the random initialisation by at least {GAIN:g} point, and by {NOISE_ERRORS:g} "
            "standard errors of the held-out accuracy where the records give its number of images"
            + (f"; for DINO, a teacher that carried at least {INFORMATION_FRACTION:.0%} of log K about the image "
               "over the last tenth of training" if sweep.objective == "dino" else ""))
    if not others:
        return f"Every network of the sweep learned ({rule})."
    tested = ("the knob's claim is tested with and without them" if len(learned) >= 2
              else "the knob's claim is tested on every weight, and cannot be without them")
    return ((f"Learned ({rule}): {names(learned)}. " if learned else f"No network of the sweep learned ({rule}). ")
            + f"Did not: {names(others)}, whose profiles are those of networks that have not learned their data; "
            + tested + ".")


def render_sweep(sweep: KnobSweep) -> list:
    """What a chapter shows of a sweep it trains itself, for ``display``; close the figures once
    shown (closing one earlier drops the canvas that saves its caption into its PNG)."""
    caption = sweep_caption(sweep)
    runs = {weight: run for weight, (_, run) in sweep.runs.items()}
    chance = next(iter(runs.values())).chance  # every weight's world has the same classes
    return [Markdown(sweep_table(sweep)), plot_knob_knn({w: run.knn for w, run in runs.items()}, chance, caption),
            Markdown(learned_sentence(sweep)), plot_knob_profiles({w: run.profiles for w, run in runs.items()}, caption),
            Markdown(claims_summary(sweep_claims(sweep)))]


def factors_markdown(factors: dict[str, dict | None], pool: str = "cls") -> str:
    """What each run's networks learned besides the class, from ``{label: factors.json or None}``
    (:func:`~ib_tutorial.book.run_profiles.measure_factors`): the ``pool`` token's k-NN top-1 of
    the class and of each factor's median split, first to last epoch, and each split's chance."""
    measured = {label: record for label, record in factors.items() if record is not None}
    if not measured:
        return "No run here has its object factors measured (`ib-tutorial factors RUN_DIR`)."
    names = list(next(iter(measured.values()))["thresholds"])
    lines = [f"| run ({pool} token) | class | " + " | ".join(names) + " |",
             "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
    for label, record in measured.items():
        epochs = list(record["epochs"].values())
        first, last, held_out = epochs[0][pool], epochs[-1][pool], record["held_out"]

        def cell(key: str) -> str:
            end = knn_interval({"top1": last[key], "n_eval": held_out}, LEVEL)
            return f"{first[key]:.1f} -> {last[key]:.1f} {interval_text(end)}"
        lines.append(f"| {label} | {cell('class')} | " + " | ".join(cell(name) for name in names) + " |")
    chance = next(iter(measured.values()))["chance"]
    lines.append("| chance | | " + " | ".join(f"{chance[name]:.1f}" for name in names) + " |")
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class ObjectivePair:
    """Two runs on the same images and network, by name: first and last shapes, each region's
    EED change with its paired interval, and a Markdown bullet each."""

    shapes: dict
    changes: dict
    markdown: str


def objective_pair(pair: dict[str, BundleRun]) -> ObjectivePair:
    """The objective control of ``pair`` (name -> run)."""
    shapes = {name: (claims.profile_shape(run.profiles[0]), claims.profile_shape(run.profiles[-1])) for name, run in pair.items()}
    changes = {name: {region: region_change(first, last, region) for region in ("early", "middle", "late")}
               for name, (first, last) in shapes.items()}
    markdown = "\n".join(
        f"- **{name}**: k-NN {run.knn[0]['top1']:.1f} -> {run.knn[-1]['top1']:.1f} %; last profile "
        f"{shapes[name][1].shape}, lowest block {lowest_text(shapes[name][1])}; EED change from the "
        "initialisation " + ", ".join(f"{region} {change.estimate:+.1f} {interval_text(change, signed=True)}"
                                       for region, change in changes[name].items()) + " points"
        for name, run in pair.items())
    return ObjectivePair(shapes, changes, markdown)


def _ranges(values) -> str:
    values = list(values)
    return f"{min(values):.1f}-{max(values):.1f}"


def supervised_section(sweep: KnobSweep | None) -> ResultSection:
    """The supervised sweep along the knob: its table, profiles and paragraph."""
    if sweep is None:
        return absent(knob_command("laptop", OBJECT_SWEEP, "/tmp/knob"), "supervised sweep of the knob")
    runs = {w: run for w, (_, run) in sweep.runs.items()}
    starts = {w: claims.profile_shape(run.profiles[0]) for w, run in runs.items()}
    ends = {w: claims.profile_shape(run.profiles[-1]) for w, run in runs.items()}
    knn = {w: run.knn for w, run in runs.items()}
    raw = {w: run.summary["raw_patch_n_eff"] for w, run in runs.items()}
    change = {w: region_change(starts[w], ends[w], "middle") for w in runs}
    objects, textures = min(runs), max(runs)
    level = knob_trend(sweep.weights, [ends[w].middle for w in sweep.weights])
    level0 = knob_trend(sweep.weights, [starts[w].middle for w in sweep.weights])
    along = claims.deeper_along_knob(sweep.weights, list(ends.values()))
    with_u = [w for w in sweep.weights if ends[w].shape == "U"]
    still = [w for w in sweep.weights if not plateau(knn[w]).reached]
    middle_blocks = depth_regions(len(ends[objects].n_eff)).middle
    values = {
        "knob_learned": f"{len(sweep.learned())} of the {len(runs)}", "knob_epochs": sweep.epochs,
        "knob_knn_init": _ranges(k[0]["top1"] for k in knn.values()), "knob_knn_end": _ranges(k[-1]["top1"] for k in knn.values()),
        "knob_chance": runs[objects].pruning[-1]["chance"],
        "knob_still_learning": ", ".join(f"{w:g}" for w in still), "knob_object_lowest": lowest_text(ends[objects]),
        "knob_end_share": _share(claims.mid_depth_minimum(ends[objects])),
        "knob_fall": along.difference, "knob_claim3": along.verdict.value,
        "knob_middle_gain": f"{min(c.estimate for c in change.values()):+.1f} to {max(c.estimate for c in change.values()):+.1f}",
        "knob_level_change": f"{level.change:+.1f}", "knob_level0_change": f"{level0.change:+.1f}",
        "knob_raw": f"{raw[objects]:.1f} to {raw[textures]:.1f}"}
    statements = {
        "every network of the sweep learned": sweep.learned() == sweep.weights,
        "the object end gained more than 30 points": knn[objects][-1]["top1"] - knn[objects][0]["top1"] > 30,
        "the object end first fell below its initialisation": knn[objects][1]["top1"] < knn[objects][0]["top1"],
        "the object end was still gaining and the texture end had reached its plateau": objects in still and textures not in still,
        "one weight's last profile is a U, at neither end": len(with_u) == 1 and not {objects, textures} & set(with_u),
        "claim 3 along the knob does not hold": not along.holds,
        "the middle dip falls towards the textures beyond the margin":
            along.interval is not None and along.interval.low > claims.MARGIN,
        "every middle region gained EED in training": all(c.low > 0 for c in change.values()),
        "the object end's lowest block lies just past the middle blocks":
            0 < ends[objects].lowest_block - max(middle_blocks) <= 2,
        "the middle level is ordered by w at the random initialisation already, and at the end":
            level0.rank_correlation > 0.9 and level.rank_correlation > 0.5 and raw[textures] > raw[objects]}
    caption = (f"Each weight's last profile (solid) and random initialisation (dashed), and what training changed. "
               f"{_provenance(sweep)}")
    return ResultSection(sweep_table(sweep), (plot_knob_profiles({w: run.profiles for w, run in runs.items()}, caption),),
                         values, statements, claims_markdown(sweep_claims(sweep)))


def u_section(sweep: KnobSweep | None) -> ResultSection:
    """The one supervised network whose last profile is a U: its profiles, claims and the sweep's count."""
    if sweep is None:
        return absent(knob_command("laptop", OBJECT_SWEEP, "/tmp/knob"), "supervised sweep of the knob")
    ends = {w: claims.profile_shape(run.profiles[-1]) for w, (_, run) in sweep.runs.items()}
    u_weight = next((w for w, end in ends.items() if end.shape == "U"), None)
    if u_weight is None:
        return ResultSection("No network of the sweep ends as a U.", statements={"one network ends as a U": False})
    run, end = sweep.runs[u_weight][1], ends[u_weight]
    tested = sweep_claims(sweep)
    subject = f"w = {u_weight:g}, epoch {end.epoch}"
    mine = [(name, test) for name, test in tested if name == subject]
    held = [(name, test) for name, test in tested if test.holds]
    counted = [test for _, test in tested if test.verdict.value != "not applicable"]
    values = {"knob_u_weight": f"{u_weight:g}", "knob_u_lowest": f"L{end.lowest_block}",
              "knob_u_dip": f"{end.middle_dip:+.2f}", "knob_u_rise": f"{end.late_rise:+.1f}",
              "knob_u_knn": f"{run.knn[0]['top1']:.1f} -> {run.knn[-1]['top1']:.1f}",
              "knob_tests": len(counted), "knob_held": len(held),
              "knob_u_share": _share(claims.mid_depth_minimum(end))}
    statements = {"exactly one network ends as a U": sum(e.shape == "U" for e in ends.values()) == 1,
                  "every claim tested on it holds, and none elsewhere": held == mine and len(mine) == 3,
                  "its lowest block is a middle block": end.lowest_block in depth_regions(len(end.n_eff)).middle}
    shown = run.profiles[::4]  # a few epochs, so that every line keeps a colour of its own
    caption = (f"The w = {u_weight:g} network's profile at epochs {', '.join(str(r.epoch) for r in shown)}, from its "
               f"random initialisation. {_provenance(sweep)}")
    figure = plot_block_profile({epoch_label(record): record.profile for record in shown}, caption,
                                title=f"w = {u_weight:g}: EED per block at four epochs").figure
    return ResultSection(claims_markdown(mine), (figure,), values, statements)


def seeds_section(sweep: KnobSweep | None) -> ResultSection:
    """The knob's two ends from a second seed: the object end's profiles and each end's minimum."""
    pairs = seeds_by_weight(sweep) if sweep is not None else {}
    if not pairs:
        return absent(knob_command("laptop", OBJECT_SEEDS, "/tmp/knob", seed=1), "second seed of the knob's ends")
    spreads = {weight: SeedSpread.of(pair) for weight, pair in pairs.items()}
    tests, verdicts = [], {}
    for weight, spread in spreads.items():
        rows, together = _end_tests(weight, spread, pairs[weight])
        tests += rows
        verdicts |= {(weight, reading): test for reading, test in together.items()}
    objects, textures = min(spreads), max(spreads)
    dips = {run.seed: claims.change_from_initialisation(run.first, run.last).middle_dip for run in spreads[objects].runs}
    values = {f"knob_change_dip_{seed}": dip for seed, dip in dips.items()}
    values |= {"knob_seed_knn_spread": f"{spreads[objects].knn_last_spread():.1f}",
               "knob_seed_level_spread": f"{spreads[objects].level_spread('middle'):.1f}"}
    statements = {"at the object end one seed's middle gained less than both ends and the other's did not":
                      max(dips.values()) > claims.MARGIN > min(dips.values()),
                  "no claim holds at either end": not any(test.holds for test in verdicts.values()),
                  "the change's minimum fails at the texture end": verdicts[(textures, "change from init")].verdict.value == "fails"}
    caption = (f"The object end (w = {objects:g}) from two seeds: each one's last profile and initialisation, and what "
               f"training changed. {_provenance(sweep)}")
    return ResultSection(seeds_markdown(spreads[objects]), (plot_seed_profiles(spreads[objects], caption),),
                         values, statements, claims_markdown(tests))


def _end_tests(weight: float, spread: SeedSpread, runs: list[BundleRun]) -> tuple[list[tuple[str, ClaimTest]], dict]:
    """The mid-depth minimum at ``weight`` as rows, each seed then together, and the joint verdicts."""
    rows, together = [], {}
    for reading, (per_seed, joint) in knob_end_tests(spread, runs).items():
        rows += [(f"w = {weight:g}, {reading}, seed {run.seed}", test) for run, test in zip(spread.runs, per_seed)]
        rows.append((f"w = {weight:g}, {reading}, seeds together", joint))
        together[reading] = joint
    return rows, together


def _middle_change(run: BundleRun) -> Interval:
    return region_change(claims.profile_shape(run.profiles[0]), claims.profile_shape(run.profiles[-1]), "middle")


def _share(test: ClaimTest) -> str:
    share = test.middle_minimum_share
    return "no bootstrap" if share is None else f"{100 * share:.0f} %"


def _provenance(sweep: KnobSweep) -> str:
    return f"From results/{sweep.bundle.name} ({sweep.bundle.preset} preset, {sweep.objective}, epoch {sweep.epochs})."


def dino_section(tier_sweep: KnobSweep | None, hue_sweep: KnobSweep | None) -> ResultSection:
    """DINO at the knob's ends: a line a run, the hue recipe's k-NN curves, the texture end's seeds."""
    if hue_sweep is None:
        return absent(knob_command("laptop", DINO_HUE_SWEEP, "/tmp/knob"), "DINO run of the knob's ends")
    pairs = seeds_by_weight(hue_sweep)
    textures, objects = max(hue_sweep.weights), min(hue_sweep.weights)
    hue_runs = {(f"every hue drawn, w = {w:g}", 0): run for w, (_, run) in hue_sweep.runs.items()}
    hue_runs |= {(f"every hue drawn, w = {w:g}", run.config.seed): run for w, pair in pairs.items() for run in pair[1:]}
    runs = ({(f"tier's views, w = {w:g}", 0): run for w, (_, run) in tier_sweep.runs.items()} if tier_sweep else {}) | hue_runs
    lines = ["| DINO recipe, weight | seed | CLS k-NN %: init -> lowest -> end [90 %] | learned "
             "| middle blocks' EED change (points, 90 %) |",
             "| --- | ---: | --- | --- | --- |"]
    for (label, seed), run in runs.items():
        end, change = knn_interval(run.knn[-1]), _middle_change(run)
        lines.append(f"| {label} | {seed} | {run.knn[0]['top1']:.1f} -> {min(r['top1'] for r in run.knn[1:]):.1f} -> "
                     f"{end.estimate:.1f} {interval_text(end)} | {'yes' if run_learned(run) else 'no'} | "
                     f"{change.estimate:+.1f} {interval_text(change, signed=True)} |")
    texture_pair = pairs.get(textures, [hue_sweep.runs[textures][1]])
    spread = SeedSpread.of(texture_pair) if len(texture_pair) > 1 else None
    tests = _end_tests(textures, spread, texture_pair)[0] if spread is not None else []
    middle = hue_sweep.runs[0.2][1].knn if 0.2 in hue_sweep.runs else None
    peak = max(middle, key=lambda record: record["top1_mean"]) if middle else None
    knn_of = lambda run: f"{run.knn[0]['top1']:.1f} -> {run.knn[-1]['top1']:.1f}"
    values = {f"knob_dino_texture_seed{run.config.seed}": knn_of(run) for run in texture_pair}
    values |= {f"knob_dino_texture_gain{run.config.seed}": f"{run.knn[-1]['top1'] - run.knn[0]['top1']:+.1f}"
               for run in texture_pair}
    values |= {"knob_dino_object_knn": knn_of(hue_sweep.runs[objects][1]),
               "knob_dino_chance": f"{hue_sweep.runs[objects][1].chance:.0f}"}
    if peak:
        values |= {"knob_dino_middle_cls": f"{middle[0]['top1']:.1f} -> {middle[-1]['top1']:.1f}",
                   "knob_dino_middle_patch": f"{middle[0]['top1_mean']:.1f} -> {peak['top1_mean']:.1f}",
                   "knob_dino_middle_patch_epoch": peak["epoch"], "knob_dino_middle_patch_last": f"{middle[-1]['top1_mean']:.1f}"}
    if spread is not None:
        values["knob_dino_seed_shape"] = str(spread.shapes[0])
    chance = hue_sweep.runs[objects][1].chance
    tier_end = tier_sweep.runs[max(tier_sweep.weights)][1] if tier_sweep else None
    tier_texture = _middle_change(tier_end) if tier_end else None
    if tier_texture is not None:
        values["knob_dino_tier_texture_change"] = f"{tier_texture.estimate:+.1f}"
    statements = {
        "with the tier's views neither end learned": tier_sweep is None or not tier_sweep.learned(),
        "with the tier's views the texture end lost more than five points of middle-block EED":
            tier_texture is None or tier_texture.high < -5,
        "every hue drawn, the texture end alone learned, by ten points or more":
            hue_sweep.learned() == [textures] and all(r.knn[-1]["top1"] - r.knn[0]["top1"] >= 10 for r in texture_pair),
        "the texture end's second seed learned too": len(texture_pair) == 2 and all(run_learned(run) for run in texture_pair),
        "every object end ended within three points of chance":
            all(run.knn[-1]["top1"] < chance + 3 for (label, _), run in runs.items() if label.endswith(f"w = {objects:g}")),
        "at w = 0.2 the CLS token fell while the mean patch token rose by more than five points and lost most of it":
            peak is not None and middle[-1]["top1"] < middle[0]["top1"]
            and peak["top1_mean"] - middle[0]["top1_mean"] > 5 > middle[-1]["top1_mean"] - middle[0]["top1_mean"],
        "the texture end's seeds get the same shape, and the minimum fails on both readings":
            spread is not None and len({str(s) for s in spread.shapes}) == 1
            and all(t.verdict.value == "fails" for _, t in tests)}
    caption = f"k-NN top-1 of DINO's teacher along training at the knob's ends, every view's hue drawn anew. {_provenance(hue_sweep)}"
    curves = {f"{label}, seed {seed}": run.knn for (label, seed), run in hue_runs.items()}
    figure = plot_knn_curves(curves, caption, chance={label: chance for label in curves})
    return ResultSection("\n".join(lines) + f"\n\nChance is {chance:.0f} %.", (figure,), values, statements,
                         claims_markdown(tests))


def objectives_section(sweep: KnobSweep | None, hue_sweep: KnobSweep | None) -> ResultSection:
    """The texture end taught by the labels and by DINO: each run's profile and its change."""
    if sweep is None or hue_sweep is None:
        return absent(knob_command("laptop", DINO_HUE_SWEEP, "/tmp/knob"), "supervised and DINO runs of the texture end")
    textures = max(hue_sweep.weights)
    pair = {"supervised": sweep.runs[textures][1], "DINO": hue_sweep.runs[textures][1]}
    control = objective_pair(pair)
    values = {}
    for name in pair:
        for region in ("middle", "late"):
            change = control.changes[name][region]
            values[f"knob_{name.lower()}_{region}_change"] = f"{change.estimate:+.1f} {interval_text(change, signed=True)}"
        values[f"knob_{name.lower()}_shape"] = str(control.shapes[name][1].shape)
    labels, dino, last = control.changes["supervised"], control.changes["DINO"], control.shapes["DINO"][1]
    statements = {"DINO raised the middle blocks, by less than the labels":
                      0 < dino["middle"].low and dino["middle"].high < labels["middle"].low,
                  "at the last blocks the labels raised the EED and DINO lowered it": dino["late"].high < 0 < labels["late"].low,
                  "DINO's last profile is highest in the middle": last.middle > max(last.early, last.late)}
    caption = (f"The texture end (w = {textures:g}) trained with the labels and with DINO, each from its own random "
               f"initialisation. From results/{sweep.bundle.name} and results/{hue_sweep.bundle.name}.")
    return ResultSection(control.markdown, (plot_run_comparison(pair, caption),), values, statements)


def worlds_figure(weights=(0, 0.05, 0.2, 0.4, 1), images: int = 6, world: str = OBJECT_SWEEP.world) -> plt.Figure:
    """The same held-out images of ``synthetic-mix``, a row a weight, in ``world`` (as a spec writes it)."""
    options = {key: float(value) for key, value in (item.split("=") for item in world.split(",") if item)}
    fig, axes = plt.subplots(len(weights), images, figsize=(1.2 * images, 1.25 * len(weights)), layout="constrained")
    for row, weight in zip(axes, weights):
        shown = SyntheticWorld("val", texture_weight=weight, **options)
        for ax, index in zip(row, range(images)):
            image, label = shown[index]
            ax.imshow(image, interpolation="nearest")
            ax.set_xticks([]), ax.set_yticks([])
            if weight == weights[0]:  # a class's shape and texture share its index, not its name
                ax.set_title(f"class {label}", fontsize="x-small")
        row[0].set_ylabel(f"w = {weight:g}", fontsize="small")
    add_caption(fig, f"The same six held-out images of synthetic-mix ({world}) from the object (w = 0) to the "
                     "texture (w = 1), columns titled by their class. Drawn by ib_tutorial.data.synthetic, 32 px.")
    return fig
