"""Converged, published ViTs against the paper, and what the chapter "Converged ViTs" renders.

Profiles of published models come from the committed bundles (``reproduce --pretrained``) and
from :func:`~ib_tutorial.book.pretrained.converged_folder` (``ib-tutorial profile-pretrained``).
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt

from ..models import PRETRAINED_DINO, PROFILE_IMG_SIZE, PUBLISHED_VIT_SMALL
from .bundles import Bundle, load_bundles
from .claims import ClaimTest, ShapeSummary, deeper_for_objects, late_reexpansion, mid_depth_minimum, profile_shape
from .dataset_runs import DatasetRun
from .paper import REPORTED, late_value
from .plots import add_caption, panel_grid, plot_block_profile, published_caption
from .tables import markdown_table
from .pretrained import converged_folder, load_published
from .records import ProfileRecord


#: The chapter's datasets, objects first: the paper's three and the texture data it did not study.
CONVERGED_DATASETS = ("cifar100", "tiny-imagenet", "uc-merced", "dtd")
#: The measurement the paper's numbers are compared with first (the package's default).
DEFAULT_MEASUREMENT = "all tokens, centred"
#: How each published ViT-S was trained, for the comparisons at one width.
TRAINING = {
    PRETRAINED_DINO: "DINO", "vit_small_patch8_224.dino": "DINO",
    "deit_small_patch16_224.fb_in1k": "supervised", "vit_small_patch16_224.augreg_in21k_ft_in1k": "supervised",
    "vit_small_patch14_dinov2.lvd142m": "DINOv2",
}


def converged_profiles(bundles: Iterable[str | Path | Bundle] | None = None,
                       live: str | os.PathLike | None = None) -> dict[str, dict[str, dict[str, ProfileRecord]]]:
    """Dataset name (``dtd`` and ``dtd:folder=dtd`` meet) -> model -> measurement -> record, from
    ``bundles`` (default: all committed) and, newer, the folder ``live`` (:func:`converged_folder`)."""
    loaded = load_bundles(bundles)
    found: dict[str, dict[str, dict[str, ProfileRecord]]] = {}
    sources = [bundle.pretrained for bundle in loaded] + [load_published(converged_folder() if live is None else live)]
    for source in sources:
        for spec, models in source.items():
            found.setdefault(spec.dataset, {}).update(models)
    return {name: found[name] for name in CONVERGED_DATASETS if name in found} | \
        {name: models for name, models in found.items() if name not in CONVERGED_DATASETS}


@dataclass(frozen=True)
class RangeCheck:
    """One statistic of a profile (EED%) against the paper's reported (low, high) for its dataset."""

    statistic: str
    value: float
    reported: tuple[float, float]

    @property
    def inside(self) -> bool:
        return self.reported[0] <= self.value <= self.reported[1]

    @property
    def off_by(self) -> float:
        """Points outside the range (negative: below it; 0 inside)."""
        low, high = self.reported
        return self.value - low if self.value < low else self.value - high if self.value > high else 0.0


def range_checks(dataset: str, record: ProfileRecord) -> list[RangeCheck]:
    """The statistics the paper reports for ``dataset``, measured on ``record``: the early
    blocks' mean, the lowest middle block, the late value, and a flat profile's lowest block."""
    reported = REPORTED.get(dataset)
    if reported is None:
        return []
    eed = record.profile.eed_percent
    checks = []
    if reported.early_eed:
        checks.append(RangeCheck("early", sum(eed[b] for b in reported.early_blocks) / len(reported.early_blocks),
                                 reported.early_eed))
    if reported.minimum_eed:
        checks.append(RangeCheck("minimum", min(eed[b] for b in reported.middle_blocks), reported.minimum_eed))
    if reported.late_eed:  # the late blocks' mean, or their highest block where the paper says "up to"
        checks.append(RangeCheck("late", late_value(reported, eed), reported.late_eed))
    if reported.flat_above is not None:
        checks.append(RangeCheck("lowest block", min(eed), (reported.flat_above, 100.0)))
    return checks


def shapes(profiles: dict, dataset: str) -> dict[str, ShapeSummary]:
    """Model -> :class:`~ib_tutorial.book.claims.ShapeSummary` on ``dataset``, by :data:`DEFAULT_MEASUREMENT`."""
    models = profiles.get(dataset, {})
    return {model: profile_shape(records[DEFAULT_MEASUREMENT]) for model, records in models.items()
            if DEFAULT_MEASUREMENT in records}


def shape_claims(profiles: dict[str, dict[str, dict[str, ProfileRecord]]]) -> list[tuple[str, ClaimTest]]:
    """The claims a single profile can test, for every dataset and model."""
    return [(f"{model} on {dataset}", test(shape)) for dataset in profiles
            for model, shape in shapes(profiles, dataset).items()
            for test in (mid_depth_minimum, late_reexpansion)]


def objects_against_textures(profiles: dict) -> list[tuple[str, ClaimTest]]:
    """For each model profiled on both Tiny ImageNet and DTD: is its U deeper on the objects?"""
    objects, textures = shapes(profiles, "tiny-imagenet"), shapes(profiles, "dtd")
    return [(f"{model}: tiny-imagenet against dtd", deeper_for_objects(objects[model], textures[model]))
            for model in objects if model in textures]


@dataclass(frozen=True)
class Comparison:
    """Two published models' middle dips (effective directions) on one dataset."""

    dataset: str
    first: str
    second: str
    first_dip: float
    second_dip: float

    @property
    def difference(self) -> float:
        return self.first_dip - self.second_dip


def training_comparisons(profiles: dict) -> list[Comparison]:
    """DINO ViT-S/16 against each supervised ViT-S and DINOv2 on every dataset where both were
    profiled: does the objective change the middle dip at the same width?"""
    out = []
    for dataset in profiles:
        measured = shapes(profiles, dataset)
        if PRETRAINED_DINO not in measured:
            continue
        for model, training in TRAINING.items():
            if training in ("supervised", "DINOv2") and model in measured:
                out.append(Comparison(dataset, PRETRAINED_DINO, model, measured[PRETRAINED_DINO].middle_dip, measured[model].middle_dip))
    return out


def profile_command(dataset: str, models=PUBLISHED_VIT_SMALL) -> str:
    """The commands that profile ``models`` on ``dataset`` into the folder this chapter reads."""
    plain = [model for model in models if model not in PROFILE_IMG_SIZE]
    lines = [shlex.join(["ib-tutorial", "profile-pretrained", *plain, "--dataset", dataset, "--download"])] if plain else []
    lines += [shlex.join(["ib-tutorial", "profile-pretrained", model, "--dataset", dataset, "--download",
                          "--img-size", str(size)]) for model, size in PROFILE_IMG_SIZE.items() if model in models]
    return "\n".join(lines)


def availability_markdown(profiles: Mapping[str, Mapping[str, dict]]) -> str:
    """Which model was profiled on which dataset, and the commands that profile those missing."""
    # A row per model: its long name wraps in the first column, the datasets' short names head the others.
    table = markdown_table(["model", *CONVERGED_DATASETS],
                           [[f"`{model}`", *("profiled" if model in profiles.get(dataset, {}) else "-"
                                             for dataset in CONVERGED_DATASETS)] for model in PUBLISHED_VIT_SMALL])
    missing = []
    for dataset in CONVERGED_DATASETS:
        absent = [model for model in PUBLISHED_VIT_SMALL if model not in profiles.get(dataset, {})]
        if absent:
            missing.append(f"- **{dataset}**: {len(absent)} of {len(PUBLISHED_VIT_SMALL)} models not profiled; on a "
                           f"machine with a network (the weights and the data are downloaded once):\n\n"
                           f"  ```bash\n  {profile_command(dataset, absent).replace(chr(10), chr(10) + '  ')}\n  ```")
    if not missing:
        return table
    return (table + "\n\nWhat is not here is not shown, and nothing stands in for it. To fill the gaps:\n\n"
            + "\n".join(missing))


def plot_converged(profiles: Mapping[str, Mapping[str, Mapping[str, ProfileRecord]]],
                   trained: Mapping[str, DatasetRun]) -> plt.Figure:
    """A panel per dataset: each published model's profile, the paper's ranges, our longest runs."""
    measurement = DEFAULT_MEASUREMENT
    fig, axes = panel_grid(len(profiles), 5.0, 3.8)
    captions = []
    for ax, (dataset, models) in zip(axes, profiles.items()):
        lines = {model: records[measurement].profile for model, records in models.items()
                 if measurement in records}
        for key, entry in trained.items():
            if key.startswith(dataset + " "):
                lines[f"ours: {key} (epoch {entry.run.profiles[-1].epoch})"] = entry.run.profiles[-1].profile
        plot_block_profile(lines, caption="", ax=ax, title=dataset, reported=REPORTED.get(dataset), full_range=True)
        first = next(records for records in models.values() if measurement in records)[measurement]
        captions.append(f"{dataset}: {published_caption(first)}")
    fig.suptitle(f"Published, converged ViTs: EED per block ({measurement})")
    add_caption(fig, "; ".join(captions) + ". Our runs: the trained runs of the chapter \"Networks that learned\" "
                "(ViT-Tiny, D = 192, 32 px; EED% of 192).")
    return fig


def ranges_markdown(profiles: Mapping[str, Mapping[str, dict]]) -> str:
    """Each model's statistics against the paper's reported ranges, per dataset it studied."""
    rows = []
    for dataset, models in profiles.items():
        for model, records in models.items():
            for check in range_checks(dataset, records[DEFAULT_MEASUREMENT]) if DEFAULT_MEASUREMENT in records else []:
                verdict = "inside" if check.inside else f"{check.off_by:+.1f} points outside"
                rows.append([dataset, f"`{model}`", check.statistic, f"{check.value:.1f}",
                             f"{check.reported[0]:g}-{check.reported[1]:g}", verdict])
    if not rows:
        return "The paper reports no range for the datasets profiled here."
    return markdown_table(["dataset", "model", "statistic", "ours (EED%)", "paper", "verdict"], rows)


def comparisons_markdown(comparisons: list[Comparison]) -> str:
    """DINO against the other objectives at the same width: the middle dips side by side."""
    if not comparisons:
        return (f"No dataset has both `{PRETRAINED_DINO}` and a supervised or DINOv2 ViT-S profiled, so the "
                "objectives cannot be compared here.")
    header = ["dataset", "DINO ViT-S/16 middle dip", "compared with", "its middle dip", "DINO minus it"]
    rows = [(c.dataset, f"{c.first_dip:.1f}", f"`{c.second}`", f"{c.second_dip:.1f}", f"{c.difference:+.1f}")
            for c in comparisons]
    return markdown_table(header, rows) + (
        "\n\nA middle dip is the lower of the early (L0-L1) and late (L9-L11) blocks' mean N_eff minus the middle "
        "blocks' (L2-L4), in effective directions, signed (negative where the middle lies above either end).")


def measurement_markdown(profiles: Mapping[str, Mapping[str, dict]]) -> str:
    """For DINO ViT-S/16 on each dataset the paper studied: every measurement's distance from the
    paper's ranges (the points outside them, summed), and the one that comes nearest."""
    lines = ["| dataset | measurement | early | minimum | late | points outside the ranges |",
             "| --- | --- | --- | --- | --- | --- |"]
    sentences = []
    for dataset, models in profiles.items():
        distances = {}
        for measurement, record in models.get(PRETRAINED_DINO, {}).items():
            checks = {check.statistic: check for check in range_checks(dataset, record)}
            if not checks:
                continue
            distances[measurement] = sum(abs(c.off_by) for c in checks.values())
            cells = [f"{checks[s].value:.1f}" if s in checks else "-" for s in ("early", "minimum", "late")]
            lines.append(f"| {dataset} | {measurement} | " + " | ".join(cells)
                         + f" | {distances[measurement]:.1f} |")
        if distances:
            measurement = min(distances, key=distances.get)
            distance = distances[measurement]
            sentences.append(f"On {dataset}, {measurement} comes nearest, {distance:.1f} points outside the ranges in all"
                             + (": inside every range the paper reports." if distance == 0 else "."))
    if not sentences:
        return f"`{PRETRAINED_DINO}` was not profiled on a dataset the paper reports ranges for."
    return "\n".join(lines) + "\n\n" + " ".join(sentences)
