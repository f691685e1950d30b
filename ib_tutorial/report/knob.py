"""What a chapter renders of a knob sweep (:mod:`ib_tutorial.reproduction.knob`): its runs
as a table, its k-NN curves, its profiles and the paper's two gaps along the knob, and the
claims tested on it, for a committed sweep and a live one alike."""
from __future__ import annotations

import dataclasses

from IPython.display import Markdown

from ..command_line import command_line, reproduce_argv
from ..reproduction import claims
from ..reproduction.claims import ClaimTest
from ..measure.bootstrap import LEVEL
from ..measure.shape import middle_dip
from ..reproduction.knob import KNOB_DATASET, KnobRecipe, KnobSweep
from ..reproduction.bundles import BundleRun
from ..reproduction.learning import knn_interval, region_change
from ..reproduction.plateau import GAIN, NOISE_ERRORS, plateau
from ..training.dino_step import INFORMATION_FRACTION
from .captions import profile_caption
from .claims import claims_markdown, claims_summary, interval_text, knob_sentence, lowest_text, plateau_sentence
from .plots import plot_knob_knn, plot_knob_profiles, plot_knob_shapes
from .tables import bundle_markdown


def knob_command(preset: str, recipe: KnobRecipe, out: str, seed: int = 0) -> str:
    """The ``reproduce`` command that trains, profiles and prunes a sweep into ``out``."""
    return command_line(reproduce_argv(preset, recipe.specs(seed), out=out))


def sweep_caption(sweep: KnobSweep) -> str:
    """What made a sweep's figures: bundle, objective, weights, settings, and the last
    profile's provenance (:func:`~ib_tutorial.report.captions.profile_caption`)."""
    settings = ",".join(f"{key}={value}" for key, value in sweep.overrides) or "the tier's own"
    world = "".join(f", {key}={value}" for key, value in sweep.world)
    _, run = next(iter(sweep.runs.values()))
    return (f"bundle {sweep.bundle.name}: {sweep.objective}, {KNOB_DATASET}{world} at w = "
            f"{', '.join(f'{w:g}' for w in sweep.weights)}, settings {settings}; {profile_caption(run.profiles[-1])}")


def sweep_claims(sweep: KnobSweep) -> list[tuple[str, ClaimTest]]:
    """The paper's claims on every weight's last saved profile, and claim 3 along the knob
    (``not applicable`` where a network it reads did not learn)."""
    tested = []
    last = {weight: claims.profile_shape(run.profiles[-1]) for weight, (_, run) in sweep.runs.items()}
    learned = sweep.learned()
    for weight, (_, run) in sweep.runs.items():
        end = last[weight]
        subject = f"w = {weight:g}, epoch {end.epoch}"
        tested += [(subject, claims.on_learned(test, weight in learned))
                   for test in (claims.mid_depth_minimum(end), claims.deepens(claims.profile_shape(run.profiles[0]), end),
                                claims.late_reexpansion(end))]
    tested.append((f"every weight, w = {sweep.weights[0]:g} to {sweep.weights[-1]:g}, epoch {sweep.epochs}",
                   claims.on_learned(claims.deeper_along_knob(sweep.weights, list(last.values())),
                                     learned == sweep.weights)))
    if len(learned) >= 2 and learned != sweep.weights:  # the knob without the networks that did not learn
        tested.append((f"the weights that learned, w = {', '.join(f'{w:g}' for w in learned)}",
                       claims.deeper_along_knob(learned, [last[w] for w in learned])))
    return tested


def sweep_table(sweep: KnobSweep) -> str:
    """One row per weight: whether the network learned (by the plateau rule's threshold), k-NN
    top-1 from the random initialisation to the end with the end's Wilson interval, the last
    profile's shape with the share of bootstrap replicates that give it, its middle dip in
    effective directions, the middle blocks' mean EED% from the initialisation to the end, and
    that change with its paired interval: what learning did, apart from the input's own
    statistics. Intervals (90 %) need the profiles' bootstraps; a dash where a run has none."""
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
    """Which weights' networks learned (:meth:`KnobSweep.learned`: k-NN top-1 above the random
    initialisation by the plateau rule's threshold, at least its gain and two standard errors,
    and for DINO a teacher that did not collapse) and which did not."""
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
    """Everything a chapter shows of ``sweep``, in order, for ``display``: the runs' table,
    the change of each from its initialisation (:func:`sweep_table`), the k-NN curves with a plateau sentence per weight and which weights learned, the
    profiles, the two gaps against the knob with their sentence, and the claims' table and
    summary. The figures stay open in pyplot, since closing one drops the canvas that saves
    its caption into its PNG: close them once displayed (``plt.close("all")``)."""
    caption = sweep_caption(sweep)
    runs = {weight: run for weight, (_, run) in sweep.runs.items()}
    first = [claims.profile_shape(run.profiles[0]) for run in runs.values()]
    last = [claims.profile_shape(run.profiles[-1]) for run in runs.values()]
    chance = next(iter(runs.values())).chance  # every weight's world has the same classes
    table = bundle_markdown(dataclasses.replace(sweep.bundle, runs={spec: run for spec, run in sweep.runs.values()}))
    tested = sweep_claims(sweep)
    items = [Markdown(table), Markdown(sweep_table(sweep)),
             plot_knob_knn({w: run.knn for w, run in runs.items()}, chance, caption)]
    items += [Markdown(plateau_sentence(f"w = {w:g}", plateau(run.knn))) for w, run in runs.items()]
    items.append(Markdown(learned_sentence(sweep)))
    items += [plot_knob_profiles({w: run.profiles for w, run in runs.items()}, caption),
              plot_knob_shapes(sweep.weights, first, last, caption),
              Markdown(knob_sentence(sweep.weights, first, last)),
              Markdown(claims_markdown(tested)), Markdown(claims_summary(tested))]
    return items



def factors_markdown(factors: dict[str, dict | None], pool: str = "cls") -> str:
    """What each run's networks learned besides the class: ``{label: the run's factors.json}``
    (:func:`~ib_tutorial.reproduction.run_factors.measure_factors`; None where not measured)
    as one row per run, the k-NN top-1 of the class and of each factor's median split from
    the ``pool`` token, from the random initialisation to the last measured epoch with that
    accuracy's 90 % Wilson interval, and a row of each split's chance."""
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
    """Two runs on the same images and network, each read from its own random initialisation:
    the objective control (:func:`objective_pair`).

    Attributes:
        shapes: by name, the first and the last profile's shape summary.
        changes: by name and region (``early``, ``middle``, ``late``), the EED change from the
            initialisation with its paired interval (:func:`~ib_tutorial.reproduction.learning.region_change`).
        markdown: one bullet per run: k-NN from the initialisation to the end, the last shape and
            lowest block, and the three changes.
    """

    shapes: dict
    changes: dict
    markdown: str


def objective_pair(pair: dict[str, BundleRun]) -> ObjectivePair:
    """The objective control of ``pair`` (name -> run), as :class:`ObjectivePair`."""
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
