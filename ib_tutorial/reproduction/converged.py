"""Converged, published ViTs against the paper: which profiles are at hand, where they
stand against its reported ranges, and its claims tested on them.

Profiles of published models come from two places: the bundles committed under
``results/`` (``reproduce --pretrained``, :attr:`~ib_tutorial.reproduction.bundles.Bundle.pretrained`)
and :func:`~ib_tutorial.reproduction.pretrained.converged_folder` on this machine
(``ib-tutorial profile-pretrained`` writes there by default; the published book's workflow
fills it online). They are keyed by dataset name, so ``dtd`` and ``dtd:folder=dtd`` meet.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..models import PRETRAINED_DINO
from .bundles import Bundle, load_bundles
from .claims import ClaimTest, ShapeSummary, deeper_for_objects, late_reexpansion, mid_depth_minimum, profile_shape
from .paper import REPORTED, late_value
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
    """Dataset name -> model -> measurement -> record, from ``bundles`` (default: every
    committed one) and the folder ``live`` (default: :func:`converged_folder`); a model
    profiled in both is taken from ``live``, the newer measurement."""
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
    """One statistic of a profile against the paper's reported range for its dataset.

    Attributes:
        statistic: ``"early"`` (mean of the early blocks), ``"minimum"`` (lowest middle
            block) or ``"late"`` (mean of the late blocks).
        value: the profile's EED%.
        reported: the paper's (low, high).
    """

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
    """The statistics the paper reports for ``dataset`` (none where it did not study it),
    measured on ``record``; a flat profile's bound is checked at every block's minimum."""
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


def shape_claims(profiles: dict[str, dict[str, dict[str, ProfileRecord]]],
                 measurement: str = DEFAULT_MEASUREMENT) -> list[tuple[str, ClaimTest]]:
    """The claims a single profile can test (mid-depth minimum, late re-expansion), for
    every dataset and model with ``measurement``."""
    tested = []
    for dataset, models in profiles.items():
        for model, records in models.items():
            if measurement in records:
                shape = profile_shape(records[measurement])
                tested += [(f"{model} on {dataset}", mid_depth_minimum(shape)),
                           (f"{model} on {dataset}", late_reexpansion(shape))]
    return tested


def shapes(profiles: dict, dataset: str, measurement: str = DEFAULT_MEASUREMENT) -> dict[str, ShapeSummary]:
    """Model -> :class:`~ib_tutorial.reproduction.claims.ShapeSummary` on ``dataset``."""
    return {model: profile_shape(records[measurement]) for model, records in profiles.get(dataset, {}).items()
            if measurement in records}


def objects_against_textures(profiles: dict, objects: str = "tiny-imagenet", textures: str = "dtd",
                             measurement: str = DEFAULT_MEASUREMENT) -> list[tuple[str, ClaimTest]]:
    """For each model profiled on both: is its U deeper on the object data?"""
    on_objects, on_textures = shapes(profiles, objects, measurement), shapes(profiles, textures, measurement)
    return [(f"{model}: {objects} against {textures}", deeper_for_objects(on_objects[model], on_textures[model]))
            for model in on_objects if model in on_textures]


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


def training_comparisons(profiles: dict, measurement: str = DEFAULT_MEASUREMENT) -> list[Comparison]:
    """DINO ViT-S/16 against each supervised ViT-S and against DINOv2, on every dataset
    where both were profiled: does the objective change the middle dip at the same width?"""
    out = []
    for dataset in profiles:
        measured = shapes(profiles, dataset, measurement)
        if PRETRAINED_DINO not in measured:
            continue
        for model, training in TRAINING.items():
            if training in ("supervised", "DINOv2") and model in measured:
                out.append(Comparison(dataset, PRETRAINED_DINO, model, measured[PRETRAINED_DINO].middle_dip, measured[model].middle_dip))
    return out


def closest_measurement(dataset: str, records: dict[str, ProfileRecord]) -> tuple[str, float] | None:
    """The measurement whose profile lies nearest the paper's ranges for ``dataset`` (the
    sum of points outside them) and that sum; None where the paper reports no range."""
    distances = {measurement: sum(abs(check.off_by) for check in range_checks(dataset, record))
                 for measurement, record in records.items() if range_checks(dataset, record)}
    if not distances:
        return None
    best = min(distances, key=distances.get)
    return best, distances[best]
