r"""The level puzzle: why the EED levels measured here sit far below the paper's at every depth.

The paper reads about 58-60 % EED in the early blocks of a converged DINO ViT-S, a minimum of
23-31 % in the middle and up to 92.5 % late; the supervised ViT-Ti networks the book trained
(which learned, :mod:`~ib_tutorial.book.learned`) and their random initialisations sit far
lower at every depth. The chapter's four sections, each a
:class:`~ib_tutorial.book.tables.ResultSection`: the inputs (:func:`input_levels`), the ways
of measuring (:func:`variant_levels`), rows and tokens (:func:`rows_and_tokens`), and what
reaches the paper's early level (:func:`paper_early_level`).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch.utils.data import Dataset

from ..data import dataset_on_disk
from ..measure.block_profile import profile_measurements
from ..models import build_vit
from ..presets import Preset
from ..training.augment import eval_transform
from ..training.runs import RunDirectory
from .bundles import stored_entry
from .dataset_chapters import shared_samples
from .learned import Learned, learned_rule
from .measurement import (DEFAULT, INPUTS, LEVELS, TOLERANCE, MeasurementResult, control_inputs, measured_epochs,
    measurement_path, near, paper_levels, paper_ranges)
from .paper import REPORTED
from .plots import add_caption, draw_reported
from .run_profiles import seeded_subset
from .tables import ResultSection

#: The committed networks the puzzle reads: supervised ViT-Ti seeds that learned by the book's rule.
BUNDLE = "eed-supervised-seeds"
#: The paper's dataset the levels are set against.
REFERENCE = "tiny-imagenet"
#: The committed networks' architecture, input side and patch side, shared by the live random networks.
ARCH, IMG_SIZE, PATCH = "vit_tiny", 32, 8
#: The patch sides :func:`rows_and_tokens` tries at :data:`IMG_SIZE`: 4, 16 and 64 patch tokens an image.
PATCHES = (16, 8, 4)
#: The fractions of the preset's images :func:`rows_and_tokens` measures on.
ROW_FRACTIONS = (1 / 8, 1 / 4, 1 / 2, 1)
#: The live inputs of :func:`rows_and_tokens` (the phase-scrambled images read as the images do).
ROW_INPUTS = ("images", "noise")
STYLES = {"images": ("tab:blue", "o"), "phase-scrambled": ("tab:orange", "s"), "noise": ("tab:green", "^")}


# --- the images ------------------------------------------------------------------------------

def real_images(images: int, seed: int = 0, img_size: int = IMG_SIZE, root=None) -> tuple[Dataset, str]:
    """``images`` Tiny ImageNet validation images at ``img_size``, drawn with ``seed``, and where
    they came from: ``root``, else :func:`~ib_tutorial.book.dataset_chapters.shared_samples`,
    else the data root; where none holds them, the ``synthetic-objects`` world."""
    roots = [root] if root is not None else [shared_samples(), None]
    transform = eval_transform(img_size)
    for candidate in roots:
        if candidate is not None and not Path(candidate).is_dir():
            continue
        with warnings.catch_warnings():  # a 20-class subset warns that its accuracies are not comparable: none is read here
            warnings.simplefilter("ignore", UserWarning)
            dataset, _ = dataset_on_disk("tiny-imagenet", "val", root=candidate, transform=transform)
        if dataset is not None:
            return seeded_subset(dataset, min(images, len(dataset)), seed), "Tiny ImageNet validation images"
    dataset, _ = dataset_on_disk("synthetic-objects", "val", transform=transform, img_size=img_size)
    return seeded_subset(dataset, images, seed), "synthetic-objects images (no Tiny ImageNet on disk)"


def stacked(dataset: Dataset) -> torch.Tensor:
    """The images of ``dataset`` (tensors or ``(image, label)`` items) as one tensor [B, C, H, W]."""
    return torch.stack([item[0] if isinstance(item, (tuple, list)) else item for item in dataset])


def random_network(patch_size: int = PATCH, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised :data:`ARCH` at :data:`IMG_SIZE` px with ``patch_size`` patches, seeded."""
    torch.manual_seed(seed)
    return build_vit(ARCH, img_size=IMG_SIZE, patch_size=patch_size).eval()


def eed_profile(model: torch.nn.Module, images: torch.Tensor, batch_size: int = 64) -> list[float]:
    """EED% per block of ``model`` on ``images`` [B, C, H, W], all tokens, centred."""
    (profile,) = profile_measurements(model, torch.split(images, batch_size), [("all", True)], progress=False)
    return list(profile.eed_percent)


# --- the committed networks -------------------------------------------------------------------

def committed_measurements(epoch: str = "last", folder: Path | None = None) -> list[MeasurementResult]:
    """The committed measurements of every run of :data:`BUNDLE` (or ``folder``), seed by seed, at
    the last measured epoch (``"last"``) or the random initialisation (``"first"``)."""
    folder = stored_entry(BUNDLE) if folder is None else folder
    results = []
    for run in sorted(path.parent for path in folder.glob("*/config.json")):
        if epochs := measured_epochs(run):
            results.append(MeasurementResult.load(measurement_path(run, epochs[-1 if epoch == "last" else 0])))
    return results


def seed_rules(folder: Path | None = None) -> list[Learned]:
    """:func:`~ib_tutorial.book.learned.learned_rule` of every run of :data:`BUNDLE` (or ``folder``)."""
    folder = stored_entry(BUNDLE) if folder is None else folder
    return [learned_rule(RunDirectory(config.parent)) for config in sorted(folder.glob("*/config.json"))]


def mean_levels(results: Sequence[MeasurementResult], input: str = INPUTS[0], measurement=DEFAULT
                ) -> tuple[float, float, float]:
    """The paper's three levels (EED%) of ``input`` measured by ``measurement``, averaged over results."""
    levels = [paper_levels(result.get(input, measurement).profile.eed_percent) for result in results]
    return tuple(sum(column) / len(column) for column in zip(*levels))


def _range_text(values: tuple[float, float] | None) -> str:
    return "-" if values is None else f"{values[0]:g}-{values[1]:g}"


def _row(cells: Sequence) -> str:
    return "| " + " | ".join(f"{c:.1f}" if isinstance(c, float) else str(c) for c in cells) + " |"


# --- 1. inputs ----------------------------------------------------------------------------------

def input_levels(preset: Preset, dataset: Dataset, source: str) -> ResultSection:
    """A random :data:`ARCH` on the images of ``dataset`` (named by ``source``), phase-scrambled
    and as noise, live, beside the committed initialisations and learned networks (seeds averaged)."""
    model = random_network(seed=preset.seed)
    live = {name: eed_profile(model, stacked(inputs), preset.profile.batch_size)
            for name, inputs in control_inputs(dataset, preset.seed).items()}
    initial, learned = committed_measurements("first"), committed_measurements("last")
    header = ["network", "input", "raw patches EED%", *(f"{level} EED%" for level in LEVELS)]
    rows = [_row(header), _row(["---"] * len(header))]
    for name, profile in live.items():
        rows.append(_row([f"random, live ({len(dataset)} images)", name, "", *paper_levels(profile)]))
    for label, results in (("random, committed", initial), ("learned, committed", learned)):
        for name in INPUTS if results else ():
            rows.append(_row([f"{label} ({len(results)} seeds, {results[0].images} images)", name,
                              results[0].raw_patches[name].eed_percent, *mean_levels(results, name)]))
    rows.append(_row(["paper (converged DINO ViT-S)", REFERENCE, "", *map(_range_text, paper_ranges(REFERENCE))]))
    values = {"pz_live_images_early": paper_levels(live["images"])[0],
              "pz_live_scrambled_early": paper_levels(live["phase-scrambled"])[0],
              "pz_live_noise_early": paper_levels(live["noise"])[0], "pz_images": len(dataset)}
    if initial and learned:
        values |= {"pz_init_images_early": mean_levels(initial)[0], "pz_init_noise_early": mean_levels(initial, "noise")[0],
                   "pz_learned_images_early": mean_levels(learned)[0],
                   "pz_learned_noise_early": mean_levels(learned, "noise")[0],
                   "pz_raw_images": initial[0].raw_patches["images"].eed_percent,
                   "pz_raw_noise": initial[0].raw_patches["noise"].eed_percent}
    figure = _inputs_figure(live, learned, f"preset {preset.name}: live random ViT-Ti ({IMG_SIZE} px, patch {PATCH}) on "
                            f"{len(dataset)} {source}; learned: committed laptop-tier supervised ViT-Ti, "
                            f"seed 0, {learned[0].images if learned else 0} images")
    return ResultSection("\n".join(rows) + "\n", (figure,), values)


def _inputs_figure(live: Mapping[str, Sequence[float]], learned: Sequence[MeasurementResult], provenance: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    for name, profile in live.items():
        colour, marker = STYLES[name]
        ax.plot(range(len(profile)), profile, color=colour, marker=marker, ls="--", label=f"random: {name}")
        if learned:
            trained = learned[0].get(name).profile.eed_percent
            ax.plot(range(len(trained)), trained, color=colour, marker=marker, ls="-", label=f"learned: {name}")
    draw_reported(ax, REPORTED[REFERENCE])
    ax.set(xlabel="block", ylabel="EED (% of width D)", ylim=(0, 100), xticks=range(len(profile)))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    ax.set_title("EED per block of a random and a learned ViT-Ti on three inputs", fontsize="medium")
    add_caption(fig, provenance)
    return fig


# --- 2. measurement variants ---------------------------------------------------------------------

@dataclass(frozen=True)
class VariantSpan:
    """How far the ways of measuring move one level (``spread``: the highest over the lowest
    variant's level), against the ``gap`` from the default measurement to the paper's range
    (its nearer end over the default, or the default over its upper end); both factors."""

    spread: float
    gap: float
    lowest: tuple[str, str]
    highest: tuple[str, str]


def variant_spans(results: Sequence[MeasurementResult]) -> tuple[dict[str, VariantSpan], dict]:
    """By level, the :class:`VariantSpan` of the images' variants; and every variant's mean levels."""
    measured = [(m.variant, m.tokens) for m in results[0].profiles if m.input == INPUTS[0]]
    levels = {measurement: mean_levels(results, measurement=measurement) for measurement in measured}
    spans = {}
    for index, (name, paper) in enumerate(zip(LEVELS, paper_ranges(REFERENCE))):
        low = min(measured, key=lambda m: levels[m][index])
        high = max(measured, key=lambda m: levels[m][index])
        default = levels[DEFAULT][index]
        gap = paper[0] / default if default < paper[0] else default / paper[1]
        spans[name] = VariantSpan(levels[high][index] / levels[low][index], gap, low, high)
    return spans, levels


def variants_sentence(spans: Mapping[str, VariantSpan]) -> str:
    """What the spans say: how far the choices move each level, against the gap to the paper's."""
    def said(which: str, span: VariantSpan) -> str:
        compared = "less than" if span.spread < span.gap else "more than"
        return f"the {which} level by a factor of {span.spread:.1f}, {compared} the factor of {span.gap:.1f} to the paper's"
    moved = "; ".join(said(which, span) for which, span in spans.items())
    more = [which for which, span in spans.items() if span.spread >= span.gap]
    close = (f"for the {' and '.join(more)} level the choices move it further than the gap, for the others less"
             if more else "no choice of measurement moves a level as far as its gap")
    return f"The choices the paper leaves open move {moved}: {close}."


def variant_levels(results: Sequence[MeasurementResult] | None = None) -> ResultSection:
    """The measurement variants of the learned networks' images (default: the committed last
    epochs), per level (:func:`variant_spans`)."""
    results = committed_measurements("last") if results is None else list(results)
    if not results:
        return ResultSection("No measurement of the learned networks is committed.\n")
    spans, levels = variant_spans(results)
    header = ["level", "paper", "default (tokens, all)", "lowest variant", "highest variant", "spread", "gap to the paper"]
    rows = [_row(header), _row(["---"] * len(header))]
    values = {"pz_variants": len(levels), "pz_sentence": variants_sentence(spans)}
    for index, (name, paper) in enumerate(zip(LEVELS, paper_ranges(REFERENCE))):
        span = spans[name]
        low, high = levels[span.lowest][index], levels[span.highest][index]
        rows.append(_row([name, _range_text(paper), levels[DEFAULT][index], f"{low:.1f} ({', '.join(span.lowest)})",
                          f"{high:.1f} ({', '.join(span.highest)})", f"x{span.spread:.1f}", f"x{span.gap:.1f}"]))
        values |= {f"pz_spread_{name}": span.spread, f"pz_gap_{name}": span.gap, f"pz_highest_{name}": high}
    return ResultSection("\n".join(rows) + "\n", (), values)


# --- 3. rows and tokens ----------------------------------------------------------------------------

def rows_and_tokens(preset: Preset, dataset: Dataset, source: str) -> ResultSection:
    """The early level of a random :data:`ARCH` on images and noise, live, against the rows
    (:data:`ROW_FRACTIONS` of the images) and the tokens per image (:data:`PATCHES`)."""
    inputs = {name: stacked(data) for name, data in control_inputs(dataset, preset.seed).items() if name in ROW_INPUTS}
    rows_model = random_network(PATCH, preset.seed)
    tokens_per_image = (IMG_SIZE // PATCH) ** 2 + 1
    by_rows = {name: {max(2, round(f * len(dataset))) * tokens_per_image:
                      paper_levels(eed_profile(rows_model, images[:max(2, round(f * len(dataset)))]))[0]
                      for f in ROW_FRACTIONS} for name, images in inputs.items()}
    by_tokens = {name: {} for name in inputs}
    for patch in PATCHES:
        model = random_network(patch, preset.seed)
        for name, images in inputs.items():
            by_tokens[name][(IMG_SIZE // patch) ** 2] = paper_levels(eed_profile(model, images))[0]
    header = ["input", *(f"{rows} rows" for rows in by_rows[ROW_INPUTS[0]]),
              *(f"{tokens} patches/image" for tokens in by_tokens[ROW_INPUTS[0]])]
    table = [_row(header), _row(["---"] * len(header))]
    table += [_row([name, *by_rows[name].values(), *by_tokens[name].values()]) for name in inputs]
    noise_rows = list(by_rows["noise"].items())
    values = {"pz_rows_few": noise_rows[0][0], "pz_noise_few_rows": noise_rows[0][1],
              "pz_rows_most": noise_rows[-1][0], "pz_noise_most_rows": noise_rows[-1][1],
              "pz_images_rows_change": max(by_rows["images"].values()) - min(by_rows["images"].values()),
              "pz_noise_patch4": by_tokens["noise"][(IMG_SIZE // 4) ** 2],
              "pz_noise_patch8": by_tokens["noise"][(IMG_SIZE // 8) ** 2],
              "pz_images_patch16": by_tokens["images"][(IMG_SIZE // 16) ** 2],
              "pz_images_patch4": by_tokens["images"][(IMG_SIZE // 4) ** 2], "pz_width": rows_model.embed_dim,
              "pz_images_highest": max(*by_rows["images"].values(), *by_tokens["images"].values())}
    figure = _rows_figure(by_rows, by_tokens, f"preset {preset.name}: live random ViT-Ti at {IMG_SIZE} px, "
                          f"{len(dataset)} {source} and matched noise; early level = mean of blocks 0-1")
    return ResultSection("\n".join(table) + "\n", (figure,), values)


def _rows_figure(by_rows: Mapping[str, Mapping[int, float]], by_tokens: Mapping[str, Mapping[int, float]],
                 provenance: str) -> plt.Figure:
    fig, (rows_ax, tokens_ax) = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained", sharey=True)
    early = REPORTED[REFERENCE].early_eed
    for ax, data, xlabel in ((rows_ax, by_rows, "rows (images x tokens per image), patch 8"),
                             (tokens_ax, by_tokens, "patch tokens per image (patch 16, 8, 4)")):
        for name, points in data.items():
            colour, marker = STYLES[name]
            ax.plot(list(points), list(points.values()), color=colour, marker=marker, label=name)
        ax.axhspan(*early, color="0.4", alpha=0.25, lw=0, label="paper's early range")
        ticks = sorted(next(iter(data.values())))
        ax.set(xscale="log", xlabel=xlabel)
        ax.set_xticks(ticks, labels=[f"{tick:,}" for tick in ticks])
        ax.minorticks_off()
    rows_ax.set_ylabel("early EED (% of width D)")
    rows_ax.set_ylim(0, 100)
    tokens_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.suptitle("Early EED of a random ViT-Ti against the rows measured and the tokens per image", fontsize="medium")
    add_caption(fig, provenance)
    return fig


# --- 4. the paper's early level ------------------------------------------------------------------

def paper_early_level(results: Sequence[MeasurementResult] | None = None, tolerance: float = TOLERANCE) -> ResultSection:
    """Every measurement of the learned networks whose early level comes
    :func:`~ib_tutorial.book.measurement.near` the paper's on every seed, and the closest on the images."""
    results = committed_measurements("last") if results is None else list(results)
    if not results:
        return ResultSection("No measurement of the learned networks is committed.\n")
    early = REPORTED[REFERENCE].early_eed
    measured = [(m.input, m.variant, m.tokens) for m in results[0].profiles]
    header = ["input", "variant", "tokens", "early EED% (seed range)", f"near {_range_text(early)} (±{tolerance:g})"]
    rows, reaching = [_row(header), _row(["---"] * len(header))], []
    closest = max((m for m in measured if m[0] == INPUTS[0]), key=lambda m: mean_levels(results, m[0], m[1:])[0])
    for key in measured:
        intervals = [result.get(key[0], key[1:]).levels()["early"] for result in results]
        close = all(near(interval, early, tolerance) for interval in intervals)
        if close or key == closest:
            reaching += [key] if close else []
            estimates = [interval.estimate for interval in intervals]
            rows.append(_row([*key, f"{min(estimates):.1f}-{max(estimates):.1f}", "yes" if close else "no"]))
    values = {"pz_reaching": len(reaching), "pz_measured": len(measured), "pz_tolerance": tolerance,
              "pz_reaching_inputs": ", ".join(sorted({key[0] for key in reaching})) or "none",
              "pz_closest_images": mean_levels(results, closest[0], closest[1:])[0],
              "pz_closest_variant": f"{closest[1]}, {closest[2]}"}
    return ResultSection("\n".join(rows) + "\n", (), values)
