"""What a chapter renders of a knob sweep (:mod:`ib_tutorial.reproduction.knob`): its runs
as a table, its k-NN curves, its profiles and the paper's two gaps along the knob, and the
claims tested on it, for a committed sweep and a live one alike."""
from __future__ import annotations

import dataclasses

from IPython.display import Markdown

from ..command_line import command_line, reproduce_argv
from ..reproduction import claims
from ..reproduction.claims import ClaimTest
from ..reproduction.knob import KNOB_DATASET, KnobSweep
from ..reproduction.plateau import GAIN, plateau
from .captions import profile_caption
from .claims import claims_markdown, claims_summary, knob_sentence, plateau_sentence
from .plots import plot_knob_knn, plot_knob_profiles, plot_knob_shapes
from .tables import bundle_markdown


def knob_specs(weights, settings: str) -> list[str]:
    """The run specs of a sweep: ``synthetic-mix:texture_weight=W@SETTINGS`` for each weight."""
    return [f"{KNOB_DATASET}:texture_weight={weight:g}@{settings}" for weight in weights]


def knob_command(preset: str, weights, settings: str, out: str) -> str:
    """The ``reproduce`` command that trains, profiles and prunes a sweep into ``out``."""
    return command_line(reproduce_argv(preset, knob_specs(weights, settings), out=out))


def sweep_caption(sweep: KnobSweep) -> str:
    """What made a sweep's figures: bundle, objective, weights, settings, and the last
    profile's provenance (:func:`~ib_tutorial.report.captions.profile_caption`)."""
    settings = ",".join(f"{key}={value}" for key, value in sweep.overrides) or "the tier's own"
    _, run = next(iter(sweep.runs.values()))
    return (f"bundle {sweep.bundle.name}: {sweep.objective}, {KNOB_DATASET} at w = "
            f"{', '.join(f'{w:g}' for w in sweep.weights)}, settings {settings}; {profile_caption(run.profiles[-1])}")


def sweep_claims(sweep: KnobSweep) -> list[tuple[str, ClaimTest]]:
    """The paper's claims on every weight's last saved profile, and claim 3 along the knob."""
    tested = []
    last = {weight: claims.profile_shape(run.profiles[-1]) for weight, (_, run) in sweep.runs.items()}
    for weight, (_, run) in sweep.runs.items():
        end = last[weight]
        subject = f"w = {weight:g}, epoch {end.epoch}"
        tested += [(subject, claims.mid_depth_minimum(end)), (subject, claims.deepens(claims.profile_shape(run.profiles[0]), end)),
                   (subject, claims.late_reexpansion(end))]
    tested.append((f"every weight, w = {sweep.weights[0]:g} to {sweep.weights[-1]:g}, epoch {sweep.epochs}",
                   claims.deeper_along_knob(sweep.weights, list(last.values()))))
    learned = sweep.learned()
    if len(learned) >= 2 and learned != sweep.weights:  # the knob without the networks that did not learn
        tested.append((f"the weights that learned, w = {', '.join(f'{w:g}' for w in learned)}",
                       claims.deeper_along_knob(learned, [last[w] for w in learned])))
    return tested


def learned_sentence(sweep: KnobSweep) -> str:
    """Which weights' networks learned (k-NN top-1 at least the plateau rule's gain above
    the random initialisation) and which did not."""
    learned = sweep.learned()
    others = [weight for weight in sweep.weights if weight not in learned]
    names = lambda weights: ", ".join(f"w = {w:g}" for w in weights)
    if not others:
        return f"Every network of the sweep learned: its k-NN top-1 rose at least {GAIN:g} point above its random initialisation."
    return ((f"Learned (k-NN top-1 at least {GAIN:g} point above the random initialisation): {names(learned)}. "
             if learned else "No network of the sweep learned. ")
            + f"Did not: {names(others)}, whose profiles are those of networks that have not learned their data; "
              "the knob's claim is tested with and without them.")


def render_sweep(sweep: KnobSweep) -> list:
    """Everything a chapter shows of ``sweep``, in order, for ``display``: the runs' table,
    the k-NN curves with a plateau sentence per weight and which weights learned, the
    profiles, the two gaps against the knob with their sentence, and the claims' table and
    summary. The figures stay open in pyplot, since closing one drops the canvas that saves
    its caption into its PNG: close them once displayed (``plt.close("all")``)."""
    caption = sweep_caption(sweep)
    runs = {weight: run for weight, (_, run) in sweep.runs.items()}
    first = [claims.profile_shape(run.profiles[0]) for run in runs.values()]
    last = [claims.profile_shape(run.profiles[-1]) for run in runs.values()]
    pruned = [run.pruning[-1] for run in runs.values() if run.pruning]
    chance = pruned[0]["chance"] if pruned else None  # 100 / classes, as the pruning records state it
    table = bundle_markdown(dataclasses.replace(sweep.bundle, runs={spec: run for spec, run in sweep.runs.values()}))
    tested = sweep_claims(sweep)
    items = [Markdown(table), plot_knob_knn({w: run.knn for w, run in runs.items()}, chance, caption)]
    items += [Markdown(plateau_sentence(f"w = {w:g}", plateau(run.knn))) for w, run in runs.items()]
    items.append(Markdown(learned_sentence(sweep)))
    items += [plot_knob_profiles({w: run.profiles for w, run in runs.items()}, caption),
              plot_knob_shapes(sweep.weights, first, last, caption),
              Markdown(knob_sentence(sweep.weights, first, last)),
              Markdown(claims_markdown(tested)), Markdown(claims_summary(tested))]
    return items

