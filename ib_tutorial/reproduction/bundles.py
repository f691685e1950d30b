"""Results bundles: what ``ib-tutorial reproduce`` writes, and ``--export`` commits under
``results/``, read back whole.

A bundle is a folder with ``summary.json`` and one run folder per dataset (its
``config.json``, ``metrics.jsonl`` and ``profiles/``). :func:`load_bundle` finds a
committed bundle by name from the package's location, so a notebook reads the same files
whatever its working directory; :func:`ib_tutorial.report.tables.bundle_markdown` and
:func:`ib_tutorial.report.plots.plot_bundle` turn one into the table and figures of the book.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..compact import read_json
from ..paths import stored_results
from ..training.run_config import RunConfig
from ..training.run_spec import RunSpec
from ..training.runs import RunDirectory
from .paper import MIDDLE
from .pretrained import load_published
from .records import ProfileRecord
from .run_factors import read_factors
from .run_profiles import VARIANTS, load_run_profiles, variant_label


@dataclass(frozen=True)
class BundleRun:
    """One dataset of a bundle.

    Attributes:
        spec: the run as ``reproduce`` named it (``NAME[:KEY=VALUE,...][@SETTING=VALUE,...]``),
            parsed once as the bundle is read.
        config: the run's configuration.
        summary: its entry in ``summary.json`` (raw-patch baseline, comparison, ...).
        profiles: its profile records by epoch; the first is the random initialisation.
        knn: its k-NN records (``metrics.jsonl``), epoch 0 first.
        train: its training records, for throughput and the teacher's state.
        pruning: its pruning records (:func:`~ib_tutorial.reproduction.run_pruning.prune_run`), if any.
        variants: the profile records of each other measurement
            (:data:`~ib_tutorial.reproduction.run_profiles.VARIANTS`) that the run holds, by its label.
        factors: what its networks learned besides the class, on a world with objects
            (``factors.json``, :func:`~ib_tutorial.reproduction.run_factors.measure_factors`), if measured.
    """

    spec: RunSpec
    config: RunConfig
    summary: dict
    profiles: list[ProfileRecord]
    knn: list[dict]
    train: list[dict]
    pruning: list[dict]
    variants: dict[str, list[ProfileRecord]]
    factors: dict | None = None

    @property
    def chance(self) -> float | None:
        """Chance k-NN accuracy in percent, 100 / classes: the classes the run's ``config.json``
        lists, or for a run that predates that list, those its pruning record counted; None
        when neither is there."""
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
    #: model -> measurement -> record (:func:`~ib_tutorial.reproduction.pretrained.load_published`).
    pretrained: dict[RunSpec, dict[str, dict[str, ProfileRecord]]] = field(default_factory=dict)


def load_bundle(where: str | os.PathLike) -> Bundle:
    """The bundle in folder ``where``, or the committed one of that name under ``results/``
    (e.g. ``"laptop-real"``). A committed bundle is read once per process while its
    ``summary.json`` is unchanged: a chapter finds its runs, sweeps and published models among
    all of them, many times over.

    Raises:
        FileNotFoundError: naming the folder and how a bundle is made.
    """
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
        variants = {variant_label(tokens, center): load_run_profiles(run.path, tokens, center) for tokens, center in VARIANTS}
        runs[spec] = BundleRun(RunSpec.parse(spec), run.read_config(), entry, load_run_profiles(run.path), run.read_metrics("knn"),
                               run.read_metrics("train"), pruning, {label: recs for label, recs in variants.items() if recs},
                               read_factors(run.path))
    return Bundle(path.name, path, summary["preset"], runs, load_published(path / "pretrained"))


def runs_differing_in(bundle: Bundle, setting: str) -> dict[str, dict[str, BundleRun]]:
    """The runs of ``bundle`` made with ``setting`` overridden (``tiny-imagenet@objective=supervised``),
    each beside the plain run of the same dataset: dataset spec -> {value of ``setting``: run},
    the plain run first."""
    groups: dict[str, dict[str, BundleRun]] = {}
    for run in bundle.runs.values():
        plain = bundle.runs.get(run.spec.dataset_spec)
        if set(run.spec.overrides) == {setting} and plain is not None:
            group = groups.setdefault(run.spec.dataset_spec, {str(getattr(plain.config.train, setting)): plain})
            group[str(run.spec.overrides[setting])] = run
    return groups


def load_bundles(bundles: Iterable[str | os.PathLike | Bundle] | None = None) -> list[Bundle]:
    """``bundles`` (folders, names under ``results/`` or loaded bundles) as loaded bundles;
    default: every bundle committed under ``results/``."""
    return [b if isinstance(b, Bundle) else load_bundle(b) for b in (stored_bundles() if bundles is None else bundles)]


def stored_bundles() -> list[str]:
    """The names of the bundles committed under ``results/`` (none for an installed package)."""
    return sorted(p.parent.name for p in stored_results().glob("*/summary.json"))


def middle_eed(record: ProfileRecord) -> float:
    """Mean EED% of the middle blocks (:data:`~ib_tutorial.reproduction.paper.MIDDLE`), where the paper
    finds its minimum."""
    eed = record.profile.eed_percent
    return sum(eed[block] for block in MIDDLE) / len(MIDDLE)


