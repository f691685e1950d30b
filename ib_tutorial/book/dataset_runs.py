"""The committed runs of a dataset, found in the bundles under ``results/``.

A chapter of the Results part covers one family of datasets (:data:`FAMILIES`): the
dataset the ``laptop`` tier trains on a CPU, and the one the GPU tiers (``quick``,
``paper``) train, the same dataset or its neighbour (the DTD subset on a CPU, UC Merced
on a GPU). :func:`dataset_runs` finds the runs of a dataset in the committed bundles;
:mod:`ib_tutorial.book.dataset_chapters` turns them into the chapter's tables,
sentences and gallery.
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
    """The datasets of one chapter.

    Attributes:
        cpu_spec: the dataset spec (``NAME[:KEY=VALUE,...]``) the ``laptop`` tier trains.
        gpu_spec: the one the GPU tiers train.
    """

    cpu_spec: RunSpec
    gpu_spec: RunSpec

    @property
    def specs(self) -> tuple[RunSpec, ...]:
        """The family's dataset specs, the CPU tier's first."""
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
        """The run's spec, as its bundle names it."""
        return self.run.spec

    @property
    def overrides(self) -> dict:
        """The training settings its spec changes after ``@`` (none for a plain run)."""
        return self.spec.overrides

    @property
    def plain(self) -> bool:
        """A run of the paper's objective (DINO) with the tier's own settings: what a dataset chapter shows."""
        return not self.overrides and self.run.config.objective.compared_with_paper

    @property
    def tier_changes(self) -> dict:
        """``{setting: (the run's value, the tier's)}`` where the run's recorded settings differ
        from what its tier runs on its dataset today (:func:`~ib_tutorial.book.recipes.tier_changes`)."""
        config = self.run.config
        return tier_changes(config.train, config.view, get_preset(self.tier), config.dataset)

    @property
    def current(self) -> bool:
        """A plain run that is also the tier as it stands today: a plain run made before the tier
        changed (more epochs, the phases' floors) is not."""
        return self.plain and not self.tier_changes

    @property
    def tier(self) -> str:
        return self.bundle.preset

    @property
    def on_gpu(self) -> bool:
        return self.tier in GPU_TIERS

    @property
    def label(self) -> str:
        """``"tiny-imagenet (laptop-real, preset laptop)"``: a run's name on a figure."""
        return f"{self.spec} ({self.bundle.name}, preset {self.tier})"

    @property
    def reported(self) -> ReportedProfile | None:
        """The paper's values for the run's dataset when the run has the paper's width
        (ViT-S, D = 384); None otherwise, where EED% would be a share of another width."""
        same_width = self.run.config.model["embed_dim"] == VIT_SMALL["embed_dim"]
        return REPORTED.get(self.spec.dataset) if same_width else None

    @property
    def chance(self) -> float | None:
        """Chance k-NN accuracy in percent (:attr:`BundleRun.chance <ib_tutorial.book.bundles.BundleRun.chance>`)."""
        return self.run.chance

def dataset_runs(dataset: str, bundles: Iterable[str | Path | Bundle] | None = None,
                 plain: bool = True) -> list[DatasetRun]:
    """The runs of ``dataset`` (a name, e.g. ``"dtd"``) in ``bundles`` (default: every
    bundle committed under ``results/``), CPU tiers first.

    Args:
        plain: only the DINO runs with the tier's own settings (:attr:`DatasetRun.plain`);
            ``False`` for every run, e.g. ``tiny-imagenet@objective=supervised`` too.
    """
    loaded = load_bundles(bundles)
    order = list(PRESETS)
    runs = [DatasetRun(bundle, run) for bundle in loaded for run in bundle.runs.values() if run.spec.dataset == dataset]
    runs = [entry for entry in runs if entry.plain or not plain]
    return sorted(runs, key=lambda e: (order.index(e.tier) if e.tier in order else len(order), e.bundle.name))


def objective_runs(dataset: str, objective: str, bundles: Iterable[str | Path | Bundle] | None = None
                   ) -> list[DatasetRun]:
    """The committed runs of ``dataset`` trained with ``objective`` (``"dino"`` or
    ``"supervised"``) at the tiers' own width, in any bundle (:func:`dataset_runs` order)."""
    return [entry for entry in dataset_runs(dataset, bundles, plain=False)
            if entry.run.config.train.objective == objective and "arch" not in entry.overrides]


def longest_run(dataset: str, objective: str, bundles: Iterable[str | Path | Bundle] | None = None) -> DatasetRun | None:
    """The run of :func:`objective_runs` trained for the most epochs; of runs as long, one at its
    tier's settings today (:attr:`DatasetRun.current`), then the first (CPU tiers first); None
    when there is none."""
    return max(objective_runs(dataset, objective, bundles),
               key=lambda entry: (entry.run.profiles[-1].epoch, entry.current), default=None)
