"""The committed runs of a dataset, found in the bundles under ``results/``.

A chapter of the Results part covers one family of datasets (:data:`FAMILIES`): the one the
``laptop`` tier trains on a CPU and the one the GPU tiers train, the same or its neighbour (the
DTD subset on a CPU, UC Merced on a GPU); :mod:`ib_tutorial.book.dataset_chapters` renders them.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..models import VIT_SMALL
from ..presets import PRESETS, get_preset
from ..training.run_config import RunSpec
from .bundles import Bundle, BundleRun, load_bundles
from .paper import REPORTED, ReportedProfile
from .recipes import tier_changes


# Tiers that run on a GPU: what a bundle from a GPU run was made with.
GPU_TIERS = tuple(name for name, preset in PRESETS.items() if preset.device != "cpu")


@dataclass(frozen=True)
class Family:
    """The dataset specs of one chapter: the ``laptop`` tier's and the GPU tiers'."""

    cpu_spec: RunSpec
    gpu_spec: RunSpec

    @property
    def specs(self) -> tuple[RunSpec, ...]:
        return tuple(dict.fromkeys((self.cpu_spec, self.gpu_spec)))


#: The chapters of the Results part, by key: each one's CPU and GPU datasets.
FAMILIES: dict[str, Family] = {
    key: Family(RunSpec.parse(cpu), RunSpec.parse(gpu)) for key, cpu, gpu in (
        ("tiny-imagenet", "tiny-imagenet", "tiny-imagenet"),
        ("textures", "dtd:folder=dtd", "uc-merced"),
        ("cifar100", "cifar100", "cifar100"),
    )
}


@dataclass(frozen=True)
class DatasetRun:
    """One committed run of a dataset, with the bundle that holds it."""

    bundle: Bundle
    run: BundleRun

    @property
    def spec(self) -> RunSpec:
        return self.run.spec

    @property
    def overrides(self) -> dict:
        return self.spec.overrides

    @property
    def plain(self) -> bool:
        """A run of the paper's objective (DINO) with the tier's own settings."""
        return not self.overrides and self.run.config.objective.compared_with_paper

    @property
    def tier_changes(self) -> dict:
        """``{setting: (the run's value, the tier's today)}`` (:func:`~ib_tutorial.book.recipes.tier_changes`)."""
        config = self.run.config
        return tier_changes(config.train, config.view, get_preset(self.tier), config.dataset)

    @property
    def current(self) -> bool:
        """A plain run at the tier's settings as they stand today."""
        return self.plain and not self.tier_changes

    @property
    def tier(self) -> str:
        return self.bundle.preset

    @property
    def on_gpu(self) -> bool:
        return self.tier in GPU_TIERS

    @property
    def label(self) -> str:
        """A run's name on a figure: ``"tiny-imagenet (laptop-real, preset laptop)"``."""
        return f"{self.spec} ({self.bundle.name}, preset {self.tier})"

    @property
    def reported(self) -> ReportedProfile | None:
        """The paper's values for the dataset, only at the paper's width (ViT-S, D = 384)."""
        same_width = self.run.config.model["embed_dim"] == VIT_SMALL["embed_dim"]
        return REPORTED.get(self.spec.dataset) if same_width else None

    @property
    def chance(self) -> float | None:
        return self.run.chance


def dataset_runs(dataset: str, bundles: Iterable[str | Path | Bundle] | None = None,
                 plain: bool = True) -> list[DatasetRun]:
    """The runs of ``dataset`` (a name, e.g. ``"dtd"``) in ``bundles`` (default: those committed),
    CPU tiers first; with ``plain``, only the :attr:`~DatasetRun.plain` ones."""
    order = list(PRESETS)
    runs = [DatasetRun(bundle, run) for bundle in load_bundles(bundles) for run in bundle.runs.values()
            if run.spec.dataset == dataset]
    runs = [entry for entry in runs if entry.plain or not plain]
    return sorted(runs, key=lambda e: (order.index(e.tier) if e.tier in order else len(order), e.bundle.name))


def objective_runs(dataset: str, objective: str, bundles: Iterable[str | Path | Bundle] | None = None
                   ) -> list[DatasetRun]:
    """The runs of ``dataset`` trained with ``objective`` at the tiers' own width, in any bundle."""
    return [entry for entry in dataset_runs(dataset, bundles, plain=False)
            if entry.run.config.train.objective == objective and "arch" not in entry.overrides]


def longest_run(dataset: str, objective: str, bundles: Iterable[str | Path | Bundle] | None = None) -> DatasetRun | None:
    """The run of :func:`objective_runs` trained longest; of runs as long, one at its tier's
    settings today (:attr:`DatasetRun.current`), then the first."""
    return max(objective_runs(dataset, objective, bundles),
               key=lambda entry: (entry.run.profiles[-1].epoch, entry.current), default=None)
