"""Results bundles read back whole, and the manifest of the committed results the book reads.

A bundle is what ``ib-tutorial reproduce --export`` commits under ``results/``: ``summary.json``
and one run folder per dataset. :data:`ENTRIES` is the one place a bundle's or a run's folder
name is written: a chapter asks for an entry by its key (:func:`stored_entry`).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..compact import read_json
from ..files import stored_results
from ..training.run_config import RunConfig, RunSpec
from ..training.runs import RunDirectory
from .paper import MIDDLE
from .pretrained import load_published
from .records import ProfileRecord
from .run_profiles import VARIANTS, load_run_profiles, read_factors, variant_label


@dataclass(frozen=True)
class Entry:
    """One committed bundle (or one run inside it): the key chapters ask for, its folder under
    ``results/``, what the book reads it for, and the chapters (notebook stems) that read it."""

    key: str
    folder: str
    purpose: str
    chapters: tuple[str, ...]


ENTRIES: tuple[Entry, ...] = (
    # --- the Results chapters and `reproduce`
    Entry("walkthrough", "laptop-tier-48", "the bundle `reproduce` walks through end to end: the laptop tier "
          "at 48 epochs on the Tiny ImageNet and DTD subsets, two seeds each", ("reproduce",)),
    Entry("gpu-run", "gpu-paper-subsets", "the one committed GPU run: DINO ViT-S at the paper recipe on the Tiny "
          "ImageNet subset, cut to 12 epochs, which did not learn", ("reproduce",)),
    Entry("floors-without", "laptop-dino-48", "the laptop recipe before the warm-up and freeze floors, 48 epochs: "
          "what the floors are set against", ("reproduce",)),
    Entry("worlds-raw-patches", "laptop-real", "the synthetic worlds' raw-patch N_eff, measured by the laptop "
          "tier's first real-image bundle", ("data",)),
    # --- DINO and the lab notes' recipe search
    Entry("dino-former-tier", "old-laptop-vit-small", "the former laptop tier (ViT-S, synthetic worlds) whose teachers went uniform", ("lab_notes_dino",)),
    Entry("dino-first-recipes", "laptop-recipes", "the first CPU recipe rows a-h, before the floors", ("lab_notes_dino",)),
    Entry("dino-tier-6", "laptop-real", "the laptop tier at 6 epochs on the real subsets and both worlds, before the floors", ("lab_notes_dino",)),
    Entry("dino-tier-48-unfloored", "laptop-dino-48", "the laptop tier for 48 epochs before the floors", ("dino", "lab_notes_dino")),
    Entry("dino-floor-rows", "laptop-dino-recipes", "rows r1-r9: the floors' recipe, one setting changed a row", ("lab_notes_dino",)),
    Entry("dino-floor-reference", "laptop-dino-recipes/r1-base", "r1-base: the reference the floors' rows are read against", ("dino", "lab_notes_dino")),
    Entry("dino-floor-rows-2", "laptop-dino-recipes-2", "rows r10-r11: batches of 64, and DTD", ("lab_notes_dino",)),
    Entry("dino-floor-rows-3", "laptop-dino-recipes-3", "rows r12-r14: the colour rows", ("lab_notes_dino",)),
    Entry("dino-long", "laptop-dino-long", "the floors' recipe for thousands of steps on all 10,000 images", ("dino", "lab_notes_dino")),
    Entry("dino-tier-16", "laptop-tier-16", "the laptop tier with the floors at 16 epochs", ("dino", "lab_notes_dino")),
    Entry("dino-tier-48", "laptop-tier-48", "the laptop tier with the floors at 48 epochs, two seeds on each real subset", ("dino", "lab_notes_dino")),
    Entry("dino-gpu-subsets", "gpu-paper-subsets", "the first GPU run of the paper recipe on the Tiny ImageNet subset", ("dino",)),
    # --- the knob and its lab notes
    Entry("knob-supervised", "laptop-knob-objects",
          "the supervised sweep along the texture knob (six weights, a second seed at both ends) and DINO at its ends "
          "with the tier's views", ("knob", "lab_notes_knob")),
    Entry("knob-dino", "laptop-knob-dino",
          "DINO at the knob's ends with every view's hue drawn anew, a second seed at the texture end, and three "
          "changes of views at the object end", ("knob", "lab_notes_knob")),
    Entry("knob-dino-rows", "laptop-knob-dino-rows",
          "the knob's DINO rows at the object end: colour, grey views, tokens, teacher temperature, learning rate, "
          "tone curves, weight decay and the grey palette", ("lab_notes_knob",)),
    # --- claims, trained networks and the intro
    Entry("supervised-seeds", "laptop-supervised-seeds",
          "the supervised ViT-Tiny of Tiny ImageNet from three seeds, measured in front of its controls",
          ("trained", "claims", "intro")),
    Entry("shuffled-labels-control", "laptop-shuffled-labels",
          "the same recipe and seed trained on shuffled labels: how far training moves a profile without learning",
          ("trained",)),
    Entry("dino-tier-48-seeds", "laptop-tier-48", "DINO's `laptop` tier at 48 epochs, two seeds on each data set",
          ("claims", "intro")),
    Entry("dino-48-epochs", "laptop-dino-48", "DINO's `laptop` tier at 48 epochs of 5,000 images",
          ("claims", "intro")),
    Entry("gpu-dino-paper-recipe", "gpu-paper-subsets", "DINO ViT-S at the `paper` recipe on one GPU",
          ("claims", "intro")),
    # --- EED, converged networks and beyond the paper
    Entry("eed-supervised-seeds", "laptop-supervised-seeds",
          "supervised ViT-Ti seeds that learned, measured every way on three inputs: the level puzzle", ("eed",)),
    Entry("beyond-real", "laptop-real", "the laptop tier's real-image runs: pruning, objective, measurement and width",
          ("beyond",)),
    Entry("beyond-dino-48", "laptop-dino-48", "DINO for 48 epochs, which learned: its last teacher's pruning", ("beyond",)),
    Entry("beyond-tier-48", "laptop-tier-48", "the 48-epoch tier's seeds, which learned: their pruning", ("beyond",)),
    Entry("beyond-supervised-real", "laptop-supervised-real", "the supervised control on real images: its pruning",
          ("beyond",)),
)


def manifest_entry(key: str) -> Entry:
    """The entry named ``key``; the error lists the keys there are."""
    for entry in ENTRIES:
        if entry.key == key:
            return entry
    raise KeyError(f"no committed result is named {key!r}; the manifest has: {', '.join(e.key for e in ENTRIES)}")


def stored_entry(key: str) -> Path:
    """The folder of entry ``key`` under ``results/`` (absent from an installed package)."""
    return stored_results(manifest_entry(key).folder)


@dataclass(frozen=True)
class BundleRun:
    """One dataset of a bundle: its spec, config, entry of ``summary.json``, profile records by
    epoch (the random initialisation first), k-NN and training records of ``metrics.jsonl``,
    pruning records, the records of each other measurement by label (:class:`StoredVariants`)
    and its ``factors.json`` (:func:`~ib_tutorial.book.run_profiles.measure_factors`), if any."""

    spec: RunSpec
    config: RunConfig
    summary: dict
    profiles: list[ProfileRecord]
    knn: list[dict]
    train: list[dict]
    pruning: list[dict]
    variants: Mapping[str, list[ProfileRecord]]
    factors: dict | None = None

    @property
    def chance(self) -> float | None:
        """Chance k-NN accuracy in percent, 100 / classes (for an older run, its pruning record's)."""
        if self.config.train_data is not None:
            return 100 / len(self.config.train_data.classes)
        return self.pruning[-1]["chance"] if self.pruning else None


@dataclass(frozen=True)
class Bundle:
    """A results folder: its name, preset and runs by dataset spec."""

    name: str
    path: Path
    preset: str
    runs: dict[str, BundleRun]
    #: Published models profiled beside the runs (``reproduce --pretrained``): dataset spec ->
    #: model -> measurement -> record (:func:`~ib_tutorial.book.pretrained.load_published`).
    pretrained: dict[RunSpec, dict[str, dict[str, ProfileRecord]]] = field(default_factory=dict)


class StoredVariants(Mapping):
    """A run's other measurements, read when first asked for: four records in five, read by one chapter."""

    def __init__(self, run_dir: Path):
        self._run_dir = run_dir

    @functools.cached_property
    def _records(self) -> dict[str, list[ProfileRecord]]:
        loaded = {variant_label(tokens, center): load_run_profiles(self._run_dir, tokens, center)
                  for tokens, center in VARIANTS}
        return {label: records for label, records in loaded.items() if records}

    def __getitem__(self, label: str) -> list[ProfileRecord]:
        return self._records[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


def load_bundle(where: str | os.PathLike) -> Bundle:
    """The bundle in folder ``where``, or the committed one of that name (``"laptop-real"``).

    A committed bundle is read once per process while its ``summary.json`` is unchanged."""
    path = Path(where)
    if not (path / "summary.json").exists():
        path = stored_results(str(where))
    if not (path / "summary.json").exists():
        raise FileNotFoundError(
            f"No results bundle at {where} (nor {path}): make one with `ib-tutorial reproduce --export DEST`, "
            "or clone the repository, whose results/ folder holds the committed bundles.")
    if path.resolve().parent == stored_results().resolve():
        return _read_committed_bundle(path.resolve(), (path / "summary.json").stat().st_mtime_ns)
    return _read_bundle(path)


@functools.cache
def _read_committed_bundle(path: Path, summary_written_ns: int) -> Bundle:
    return _read_bundle(path)


def _read_bundle(path: Path) -> Bundle:
    summary = read_json(path / "summary.json")
    runs = {}
    for spec, entry in summary["datasets"].items():
        run = RunDirectory(path / entry["run"])
        pruning = [read_json(p) for p in sorted((run.path / "pruning").glob("*.json"))]
        runs[spec] = BundleRun(RunSpec.parse(spec), run.read_config(), entry, load_run_profiles(run.path), run.read_metrics("knn"),
                               run.read_metrics("train"), pruning, StoredVariants(run.path), read_factors(run.path))
    return Bundle(path.name, path, summary["preset"], runs, load_published(path / "pretrained"))


def runs_differing_in(bundle: Bundle, setting: str) -> dict[str, dict[str, BundleRun]]:
    """Dataset spec -> {value of ``setting``: run}: the plain run first, then each run of
    ``bundle`` with only ``setting`` overridden (``tiny-imagenet@objective=supervised``)."""
    groups: dict[str, dict[str, BundleRun]] = {}
    for run in bundle.runs.values():
        plain = bundle.runs.get(run.spec.dataset_spec)
        if set(run.spec.overrides) == {setting} and plain is not None:
            group = groups.setdefault(run.spec.dataset_spec, {str(getattr(plain.config.train, setting)): plain})
            group[str(run.spec.overrides[setting])] = run
    return groups


def load_bundles(bundles: Iterable[str | os.PathLike | Bundle] | None = None) -> list[Bundle]:
    """``bundles`` (folders, names or bundles) loaded; default: every committed bundle."""
    return [b if isinstance(b, Bundle) else load_bundle(b) for b in (stored_bundles() if bundles is None else bundles)]


def stored_bundles() -> list[str]:
    """The names of the bundles committed under ``results/``."""
    return sorted(p.parent.name for p in stored_results().glob("*/summary.json"))


def middle_eed(record: ProfileRecord) -> float:
    """Mean EED% of the middle blocks (:data:`~ib_tutorial.book.paper.MIDDLE`)."""
    eed = record.profile.eed_percent
    return sum(eed[block] for block in MIDDLE) / len(MIDDLE)
