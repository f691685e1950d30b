"""What the chapter "Beyond the paper" reads off its runs: one list of statements a section
(pruning, objective, measurement, width), each read from the runs' records and the book's rule
for whether a run learned, and the figures that put its runs side by side."""
from __future__ import annotations

import matplotlib.pyplot as plt

from .bundles import Bundle, BundleRun, load_bundle, middle_eed, stored_entry
from .claims import lowest_text, profile_shape
from .learned import knn_standard_error, run_learned
from .paper import MIDDLE
from .plots import (add_caption, bundle_caption, panel_grid, plot_knn_curves, plot_measurements, plot_pruning,
    plot_run_comparison, profile_caption, pruning_caption)

#: The manifest keys of the committed bundles whose last teachers' pruning the chapter reads.
PRUNED = ("beyond-real", "beyond-dino-48", "beyond-tier-48", "beyond-supervised-real")


def pruning_of(bundle: Bundle) -> dict[str, dict]:
    """The last teacher's pruning record of each run of a bundle."""
    return {spec: run.pruning[-1] for spec, run in bundle.runs.items() if run.pruning}


def plot_last_pruning(records: dict[str, dict]) -> plt.Figure:
    """The pruning curves of :func:`pruning_of`'s records, their provenance in the caption."""
    return plot_pruning(records, "; ".join(pruning_caption(record) for record in records.values()))


def committed_pruning(keys=PRUNED) -> tuple[dict[str, dict], dict[str, BundleRun]]:
    """The last pruning record and the run of each run of the committed bundles ``keys`` that has
    one, by ``"<bundle>: <spec>"``."""
    records, runs = {}, {}
    for folder in (folder for folder in map(stored_entry, keys) if folder.exists()):
        bundle = load_bundle(folder)
        for spec, record in pruning_of(bundle).items():
            label = f"{folder.name}: {spec}"
            records[label], runs[label] = record, bundle.runs[spec]
    return records, runs


def gain_text(run: BundleRun) -> str:
    first, last = run.knn[0], run.knn[-1]
    return f"CLS k-NN {last['top1'] - first['top1']:+.1f} points from the initialisation, one standard error {knn_standard_error(last):.1f}"


def pruning_statements(records, runs):
    """One line per run on the middle blocks, then the answer from the runs that learned."""
    lines, ratios = [], {}
    for spec, record in records.items():
        blocks = {b["block"]: b for b in record["blocks"]}
        middle, last = [blocks[b] for b in MIDDLE], blocks[max(blocks)]
        unpruned = ", ".join(f"{b['unpruned']:.1f}" for b in middle)
        if not run_learned(runs[spec]):
            lines.append(f"- **{spec}**: did not learn ({gain_text(runs[spec])}), so its directions say nothing about what "
                         f"a task needs (unpruned middle-block k-NN {unpruned} %, guessing {record['chance']:.1f} %).")
            continue
        share = [b["sufficient_k"] / b["n_eff"] for b in middle]
        ratios[spec] = share
        lines.append(
            f"- **{spec}** ({gain_text(runs[spec])}): the middle blocks L{MIDDLE[0]}-L{MIDDLE[-1]} keep 95 % of their "
            f"k-NN accuracy (unpruned {unpruned} %, guessing {record['chance']:.1f} %) with k = "
            + ", ".join(str(b["sufficient_k"]) for b in middle)
            + f" of {len(blocks[0]['ks'])} directions, against N_eff = " + ", ".join(f"{b['n_eff']:.1f}" for b in middle)
            + f": {min(share):.1f} to {max(share):.1f} times N_eff. The last block needs k = {last['sufficient_k']} "
            f"(N_eff {last['n_eff']:.1f}).")
    every = [r for share in ratios.values() for r in share]
    if not every:
        lines.append("- No run here learned, so whether a middle block needs about N_eff directions is undetermined.")
    else:
        near = all(0.5 <= r <= 2 for r in every)
        lines.append(f"- So, on the runs that learned, the fewest directions that keep 95 % of a middle block's accuracy are "
                     f"{min(every):.1f} to {max(every):.1f} times its N_eff ("
                     + "; ".join(f"{spec} {min(s):.1f}-{max(s):.1f}" for spec, s in ratios.items()) + "): "
                     + ("about N_eff, within a factor of two" if near else "not within a factor of two of N_eff everywhere")
                     + ". Whether this holds for converged networks is undetermined.")
    return "\n".join(lines)


def knn_text(run: BundleRun) -> str:
    first, last = run.knn[0]["top1"], run.knn[-1]["top1"]
    return f"k-NN top-1 {first:.1f} % at initialisation, {last:.1f} % after epoch {run.knn[-1]['epoch']}"


def mid_minimum(record) -> bool:
    return profile_shape(record).lowest_block in MIDDLE


def objective_statements(groups):
    """Per dataset: what each objective did to the k-NN accuracy and the middle blocks."""
    lines = []
    for dataset, runs in groups.items():
        for objective, run in runs.items():
            first, last = run.profiles[0], run.profiles[-1]
            lines.append(f"- **{dataset}, {objective}**: {knn_text(run)}; middle blocks' EED "
                         f"{middle_eed(first):.1f} % -> {middle_eed(last):.1f} %, lowest block {lowest_text(profile_shape(last))}.")
        with_minimum = [objective for objective, run in runs.items() if mid_minimum(run.profiles[-1])]
        gained = [objective for objective, run in runs.items() if run_learned(run)]
        lines.append(f"- So on {dataset}: the objectives whose features beat their random initialisation by at least "
                     f"two standard errors of the k-NN accuracy and one point: {', '.join(gained) or 'none'}; a mid-depth minimum (lowest block in "
                     f"L{MIDDLE[0]}-L{MIDDLE[-1]}) after training: {', '.join(with_minimum) or 'neither'}.")
    return "\n".join(lines)


def plot_setting_comparison(groups, setting: str) -> list[plt.Figure]:
    """Per dataset of ``groups`` (:func:`~ib_tutorial.book.bundles.runs_differing_in`), its runs'
    k-NN curves and profiles, one per value of ``setting``."""
    figures = []
    for dataset, runs in groups.items():
        labelled = {f"{dataset}, {setting} {value}": run for value, run in runs.items()}
        caption = "; ".join(f"{label}: {profile_caption(run.profiles[-1])}" for label, run in labelled.items())
        figures += [plot_knn_curves({label: run.knn for label, run in labelled.items()}, caption),
                    plot_run_comparison(labelled, caption)]
    return figures


def plot_all_measurements(bundle: Bundle) -> plt.Figure:
    """One panel a run: its first and last profile under every measurement."""
    fig, axes = panel_grid(len(bundle.runs), 5.5, 4.2)
    for ax, (spec, run) in zip(axes, bundle.runs.items()):
        plot_measurements({"all tokens, centred": run.profiles, **run.variants}, caption="", ax=ax, title=spec)
    add_caption(fig, bundle_caption(bundle))
    return fig


def measurement_table(bundle):
    """Per run and measurement: middle-block EED% from the random init to the end, and the
    lowest block at the end; then what every measurement agrees on."""
    specs = list(bundle.runs)
    measured = {spec: {"all tokens, centred": run.profiles, **run.variants} for spec, run in bundle.runs.items()}
    labels = list(measured[specs[0]])
    rows = [f"Middle blocks' EED% (L{MIDDLE[0]}-L{MIDDLE[-1]}) from the random initialisation to the end, and "
            "in brackets the lowest block at the end, under each measurement:\n",
            "| run | " + " | ".join(labels) + " |", "| --- |" + " --- |" * len(labels)]
    for spec in specs:
        cells = [f"{middle_eed(recs[0]):.1f} -> {middle_eed(recs[-1]):.1f} ({lowest_text(profile_shape(recs[-1]))})"
                 for recs in (measured[spec][label] for label in labels)]
        rows.append(f"| {spec} | " + " | ".join(cells) + " |")
    survive = []
    for spec in specs:
        run, images = bundle.runs[spec], measured[spec][labels[0]][-1].provenance.n_images
        survive.append(f"- **{spec}** {'learned' if run_learned(run) else 'did not learn'} ({gain_text(run)}): "
                       + ("" if run_learned(run) else f"what these lines call training is {run.config.train.epochs} epochs that did not learn; ")
                       + f"the CLS and mean-token measurements rest on {images} rows, one per image.")
        # Read at the table's precision (one decimal): a change that prints as 3.8 -> 3.8 is no change.
        changes = {label: round(middle_eed(recs[-1]), 1) - round(middle_eed(recs[0]), 1)
                   for label, recs in measured[spec].items()}
        moved = {word: [label for label, c in changes.items() if test(c)]
                 for word, test in (("raised", lambda c: c > 0), ("lowered", lambda c: c < 0), ("left", lambda c: c == 0))}
        whole = [word for word, labels_moved in moved.items() if len(labels_moved) == len(labels)]
        if whole and whole[0] != "left":
            survive.append(f"  - training {whole[0]} the middle blocks' EED under every measurement.")
        elif whole:
            survive.append("  - training left the middle blocks' EED where it was (to one decimal) under every measurement.")
        else:
            survive.append("  - whether training raised the middle blocks' EED depends on the measurement: " + "; ".join(
                f"{word} {'unchanged to one decimal ' if word == 'left' else ''}under {', '.join(found)}"
                for word, found in moved.items() if found) + ".")
        minimum = [label for label, recs in measured[spec].items() if mid_minimum(recs[-1])]
        survive.append(f"  - a mid-depth minimum (lowest block in L{MIDDLE[0]}-L{MIDDLE[-1]}) appears under "
                       + (f"{len(minimum)} of {len(labels)} measurements ({'; '.join(minimum)})." if minimum else
                          f"none of the {len(labels)} measurements."))
    return "\n".join(rows) + "\n\n" + "\n".join(survive)


def width_statements(groups):
    """Per dataset and width: middle blocks' N_eff and EED%, then what width did to them."""
    lines = []
    for dataset, runs in groups.items():
        middle, middle_init = {}, {}
        for arch, run in runs.items():
            last = run.profiles[-1]
            n_eff = sum(last.profile.n_eff[b] for b in MIDDLE) / len(MIDDLE)
            middle[arch] = (n_eff, last.profile.dim)
            middle_init[last.profile.dim] = sum(run.profiles[0].profile.n_eff[b] for b in MIDDLE) / len(MIDDLE)
            lines.append(f"- **{dataset}, {arch}** (D = {last.profile.dim}): middle blocks N_eff {n_eff:.1f}, "
                         f"EED {middle_eed(last):.1f} %, lowest block {lowest_text(profile_shape(last))}; "
                         f"{knn_text(run)} ({gain_text(run)}).")
        (narrow, (n_small, d_small)), (wide, (n_large, d_large)) = sorted(middle.items(), key=lambda item: item[1][1])
        ratio = n_large / n_small
        init_ratio = middle_init[d_large] / middle_init[d_small]
        both = all(run_learned(run) for run in runs.values())
        lines.append(f"- So on {dataset}: {d_large / d_small:.0f} times the width gives {ratio:.2f} times the middle "
                     f"blocks' directions after training (EED% {ratio * d_small / d_large:.2f} times the narrow "
                     f"network's), against {init_ratio:.2f} times at the random initialisation. "
                     + ("Both networks learned, so this is what width did to a learned profile here."
                        if both else "Not both networks learned, so how width changes a learned profile is undetermined."))
    return "\n".join(lines)
