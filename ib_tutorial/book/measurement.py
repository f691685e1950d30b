r"""Which input and which measurement give a network's profile its levels, and one network in front of its controls.

* **Controls** (input against learning): the same network on the images, on them
  phase-scrambled (:class:`~ib_tutorial.data.controls.PhaseScrambled`) and on white noise with
  their per-channel moments, beside the rank and :math:`N_\mathrm{eff}` of each input's raw patches.
* **Measurement**: every variant (:data:`~ib_tutorial.measure.variants.VARIANTS`) with every
  token choice, with bootstrap intervals, and whether its levels come near the paper's.

The paper's three levels are read from a profile :math:`v_0, \dots, v_{L-1}` (EED%) over the
regions of :func:`~ib_tutorial.measure.shape.depth_regions`:

.. math::

    \text{early} = \frac{1}{|E|}\sum_{l \in E} v_l, \qquad
    \text{middle} = \min_{l \in M} v_l, \qquad
    \text{late} = \max_{l \in \mathcal L} v_l

A level is *near* the paper's range :math:`[a, b]` when its interval :math:`[u, w]` comes within
``tolerance`` points of it, :math:`u \le b + \tau` and :math:`w \ge a - \tau`.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

from ..command_line import argument
from ..compact import read_json
from ..data.controls import GaussianNoiseImages, PatchStatistics, PhaseScrambled, raw_patch_statistics
from ..files import write_json_atomic
from ..measure.block_profile import TOKEN_CHOICES
from ..measure.bootstrap import (BootstrapProfile, Interval, LEVEL, MAX_BYTES, METHODS, Measurement, StoredReplicates,
    bootstrap_blocks)
from ..measure.shape import DIRECTIONS, classify_shape, depth_regions, middle_dip
from ..measure.variants import VARIANTS, get_variant
from ..schema import from_json
from ..training.runs import RunDirectory
from .paper import REPORTED
from .records import Provenance
from .run_profiles import measurement_provenance, profile_device, profile_images, profile_settings
from .tables import markdown_table


#: The inputs, the images first: the images, their phase-scrambled versions, matched noise.
INPUTS = ("images", "phase-scrambled", "noise")
#: The default measurement: the tokens' covariance, all tokens (the paper's).
DEFAULT = ("tokens", "all")
#: Replicates of each bootstrap: fewer than the bootstrap's default, for a table of many variants read to a few points.
REPLICATES = 200
#: Profile images a saved network is measured on by default (:func:`measure_run`).
IMAGES = 512
#: How far, in EED points, a level may lie from the paper's range and still count as near it.
TOLERANCE = 10.0
#: The paper's three levels, in the order tables show them, and their columns' headers.
LEVELS = ("early", "middle", "late")
LEVEL_HEADERS = ("early EED%", "middle (min) EED%", "late (max) EED%")


def measurements(variants: Sequence[str] = tuple(VARIANTS), tokens: Sequence[str] = TOKEN_CHOICES
                 ) -> list[Measurement]:
    """Every (variant, tokens) pair that is defined and distinct: a variant that reads the tokens within
    an image (``per_image``, ``position_centred``) is left out for ``cls`` and ``mean``."""
    for name in variants:
        get_variant(name)
    if unknown := set(tokens) - set(TOKEN_CHOICES):
        raise ValueError(f"unknown token choices {sorted(unknown)}; choose from {', '.join(TOKEN_CHOICES)}")
    single = {"cls", "mean"}
    return [(variant, choice) for variant in variants for choice in tokens
            if not (get_variant(variant).needs and choice in single)]


def paper_levels(values: Sequence[float]) -> tuple[float, float, float]:
    """The early mean, the middle minimum and the late maximum of one value per block."""
    regions = depth_regions(len(values))
    early = sum(values[block] for block in regions.early) / len(regions.early)
    return early, min(values[block] for block in regions.middle), max(values[block] for block in regions.late)


@dataclass(frozen=True)
class MeasuredProfile:
    """One input (of :data:`INPUTS`) measured one way, and the summaries tables show."""

    input: str
    variant: str
    tokens: str
    profile: BootstrapProfile

    def levels(self) -> dict[str, Interval]:
        """The paper's three levels (EED%) with their intervals, by name."""
        return {name: self.profile.interval(lambda values, index=index: paper_levels(values)[index], percent=True)
                for index, name in enumerate(LEVELS)}

    def middle_dip(self) -> Interval:
        """The middle dip (:func:`~ib_tutorial.measure.shape.middle_dip`) in EED points."""
        return self.profile.interval(middle_dip, percent=True)

    def shape(self) -> tuple[str, float]:
        """The profile's shape (one direction of tolerance) and the share of replicates that give it."""
        shape = classify_shape(self.profile.n_eff, DIRECTIONS)
        return str(shape), self.profile.shape_shares(DIRECTIONS).get(shape, 0.0)

    def to_dict(self) -> dict:
        """Every number, the replicates included, and for a reader of the file the intervals."""
        shape, share = self.shape()
        return {
            "input": self.input, "variant": self.variant, "tokens": self.tokens, "dim": self.profile.dim,
            "n_eff": self.profile.n_eff, "eed_percent": self.profile.eed_percent,
            "eed_intervals": [[i.low, i.high] for i in self.profile.intervals(percent=True)],
            "bias": self.profile.bias, "shape": shape, "shape_share": share,
            "middle_dip": _interval_dict(self.middle_dip()),
            "levels": {name: _interval_dict(interval) for name, interval in self.levels().items()},
            "bootstrap": asdict(self.profile.stored()),
        }

    @classmethod
    def from_dict(cls, data: dict, level: float, method: str = METHODS[0]) -> MeasuredProfile:
        """The profile :meth:`to_dict` wrote, its intervals read at ``level``."""
        stored = StoredReplicates(**data["bootstrap"])
        profile = BootstrapProfile.from_stored(data["n_eff"], data["dim"], stored, level, method)
        return cls(data["input"], data["variant"], data["tokens"], profile)


def _interval_dict(interval: Interval) -> dict[str, float]:
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high}


@dataclass(frozen=True)
class MeasurementResult:
    """One network measured on every input and every way (no ``provenance`` outside a run)."""

    label: str
    img_size: int
    patch_size: int
    images: int
    replicates: int
    level: float
    seed: int
    raw_patches: dict[str, PatchStatistics]
    profiles: tuple[MeasuredProfile, ...]
    provenance: Provenance | None = None

    def get(self, input: str = INPUTS[0], measurement: Measurement = DEFAULT) -> MeasuredProfile:
        """The profile of ``input`` measured by ``measurement`` (variant, tokens)."""
        for measured in self.profiles:
            if (measured.input, (measured.variant, measured.tokens)) == (input, tuple(measurement)):
                return measured
        raise KeyError(f"{self.label}: no profile of {input!r} measured as {measurement}")

    def to_dict(self) -> dict:
        """Every number, replicates included."""
        return {
            "label": self.label, "img_size": self.img_size, "patch_size": self.patch_size, "images": self.images,
            "replicates": self.replicates, "level": self.level, "seed": self.seed,
            "raw_patches": {name: {"rank": s.rank, "n_eff": s.n_eff, "dim": s.dim, "eed_percent": s.eed_percent}
                            for name, s in self.raw_patches.items()},
            "profiles": [measured.to_dict() for measured in self.profiles],
            "provenance": self.provenance.to_dict() if self.provenance is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> MeasurementResult:
        """The result :meth:`to_dict` wrote."""
        raw = {name: PatchStatistics(s["rank"], s["n_eff"], s["dim"]) for name, s in data["raw_patches"].items()}
        profiles = tuple(MeasuredProfile.from_dict(measured, data["level"]) for measured in data["profiles"])
        return cls(data["label"], data["img_size"], data["patch_size"], data["images"], data["replicates"],
                   data["level"], data["seed"], raw, profiles,
                   from_json(Provenance, data["provenance"]) if data.get("provenance") else None)

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_dict` as JSON, atomically."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> MeasurementResult:
        """Read a file :meth:`save` wrote."""
        return cls.from_dict(read_json(path))


def control_inputs(dataset: Dataset, seed: int = 0) -> dict[str, Dataset]:
    """The images, phase-scrambled and as noise with their moments, by :data:`INPUTS` name."""
    return {"images": dataset, "phase-scrambled": PhaseScrambled(dataset, seed=seed),
            "noise": GaussianNoiseImages.matching(dataset, seed=seed)}


def measure_controls(model: torch.nn.Module, dataset: Dataset, label: str, measured: Sequence[Measurement] | None = None,
                     controls: Sequence[Measurement] = (DEFAULT,), replicates: int = REPLICATES, level: float = LEVEL,
                     seed: int = 0, batch_size: int = 64, max_bytes: int = 16 * MAX_BYTES,
                     device: torch.device | str = "cpu", progress: bool = True) -> MeasurementResult:
    """``model`` (a timm ViT) on each of :data:`INPUTS` made of ``dataset``, with bootstrap intervals
    (:func:`~ib_tutorial.measure.bootstrap.bootstrap_blocks`), beside their raw patches. The
    images are measured every way of ``measured`` (default: :func:`measurements`), the controls
    every way of ``controls``."""
    measured = measurements() if measured is None else list(measured)
    patch_size = int(model.patch_embed.patch_size[0])
    raw, profiles = {}, []
    for name, inputs in tqdm(control_inputs(dataset, seed).items(), desc=label, disable=not progress, leave=False):
        chosen = measured if name == INPUTS[0] else list(controls)
        raw[name] = raw_patch_statistics(DataLoader(inputs, batch_size=batch_size), patch_size)
        found = bootstrap_blocks(model, inputs, chosen, replicates, level, seed, batch_size, max_bytes, device)
        profiles += [MeasuredProfile(name, variant, tokens, profile) for (variant, tokens), profile in found.items()]
    first = dataset[0]
    image_side = int((first[0] if isinstance(first, (tuple, list)) else first).shape[-1])
    return MeasurementResult(label, image_side, patch_size, len(dataset), replicates, level, seed, raw, tuple(profiles))


def measure_run(run_dir: str | os.PathLike, epoch: int | None = None, images: int = IMAGES,
                measured: Sequence[Measurement] | None = None, controls: Sequence[Measurement] = (DEFAULT,),
                replicates: int = REPLICATES, level: float = LEVEL, root=None, download: bool = False,
                max_bytes: int = 16 * MAX_BYTES, progress: bool = True) -> Path:
    """:func:`measure_controls` of the network a run saved at ``epoch`` (default: the last) on
    ``images`` of its profile images, with the run's seed, written to :func:`measurement_path`."""
    if images < 1:
        raise ValueError(f"{argument('images', images)}: it must be at least 1.")
    run = RunDirectory(run_dir)
    config = run.read_config()
    saved = run.backbone_epochs()
    epoch = saved[-1] if epoch is None and saved else epoch
    if epoch not in saved:
        raise ValueError(f"{run.path} saved no network at epoch {epoch}; it saved epochs {saved}")
    device = profile_device(config)
    label = f"{config.dataset} {config.train.objective} {config.model['arch']}, epoch {epoch}"
    result = measure_controls(run.load_backbone(epoch, device), profile_images(config, images, root, download), label,
                              measured=measured, controls=controls, replicates=replicates, level=level,
                              seed=config.seed, batch_size=profile_settings(config).batch_size, max_bytes=max_bytes,
                              device=device, progress=progress)
    tokens = result.images * (config.view.img_size // config.view.patch_size) ** 2
    origin = measurement_provenance(config, result.images, tokens, device)
    path = measurement_path(run.path, epoch, images)
    dataclasses.replace(result, provenance=origin).save(path)
    return path


def measurement_path(run_dir: str | os.PathLike, epoch: int, images: int = IMAGES) -> Path:
    """``measurement/<epoch>.json``, or ``<epoch>-<images>-images.json`` off the default :data:`IMAGES`."""
    name = f"{epoch}.json" if images == IMAGES else f"{epoch}-{images}-images.json"
    return Path(run_dir) / "measurement" / name


def measured_epochs(run_dir: str | os.PathLike, images: int = IMAGES) -> list[int]:
    """The epochs at which :func:`measure_run` measured a run's network on ``images`` images, in order."""
    folder = Path(run_dir) / "measurement"
    found = (int(path.stem.split("-")[0]) for path in folder.glob("*.json") if path.stem.split("-")[0].isdigit())
    return sorted(epoch for epoch in set(found) if measurement_path(run_dir, epoch, images).exists())


# --- tables -------------------------------------------------------------------------------

def _cell(interval: Interval) -> str:
    return f"{interval.estimate:.1f} [{interval.low:.1f}, {interval.high:.1f}]"


def controls_table(results: Sequence[MeasurementResult], measurement: Measurement = DEFAULT) -> str:
    """A Markdown table, one row per network and input: raw patches, the levels, the shape and the middle dip."""
    rows = []
    for result in results:
        for name in INPUTS:
            measured, patches = result.get(name, measurement), result.raw_patches[name]
            levels, (shape, share) = measured.levels(), measured.shape()
            rows.append([result.label, name, f"{patches.rank} / {patches.n_eff:.1f} ({patches.dim})",
                         *(_cell(levels[level]) for level in LEVELS), f"{shape} ({share:.0%})",
                         _cell(measured.middle_dip())])
    return markdown_table(["network", "input", "raw patches: rank / N_eff (of dim)", *LEVEL_HEADERS,
                           "shape (share)", "middle dip"], rows) + "\n"


def near(interval: Interval, reported: tuple[float | None, float | None] | None, tolerance: float = TOLERANCE
         ) -> bool | None:
    """Whether ``interval`` comes within ``tolerance`` points of the ``reported`` (low, high; an
    end None where open); None where nothing is reported."""
    if reported is None:
        return None
    low = -math.inf if reported[0] is None else reported[0]
    high = math.inf if reported[1] is None else reported[1]
    return interval.low <= high + tolerance and interval.high >= low - tolerance


def paper_ranges(reference: str = "tiny-imagenet") -> tuple:
    """The paper's ranges (EED%) for ``reference``, in the order of :data:`LEVELS`."""
    reported = REPORTED[reference]
    return reported.early_eed, reported.minimum_eed, reported.late_eed


def near_paper(measured: MeasuredProfile, reference: str = "tiny-imagenet", tolerance: float = TOLERANCE
               ) -> dict[str, bool | None]:
    """For each level, whether ``measured`` comes :func:`near` the paper's for ``reference``."""
    ranges = dict(zip(LEVELS, paper_ranges(reference)))
    return {name: near(interval, ranges[name], tolerance) for name, interval in measured.levels().items()}


def variants_table(results: Sequence[MeasurementResult], reference: str = "tiny-imagenet",
                   tolerance: float = TOLERANCE) -> str:
    """A Markdown table, one row per network and measurement of its images: the levels and how
    many come near the paper's for ``reference`` (:func:`near_paper`)."""
    paper = " / ".join("-" if r is None else f"{r[0]:g}-{r[1]:g}" for r in paper_ranges(reference))
    rows = []
    for result in results:
        for measured in (m for m in result.profiles if m.input == INPUTS[0]):
            levels = measured.levels()
            flags = [flag for flag in near_paper(measured, reference, tolerance).values() if flag is not None]
            rows.append([result.label, measured.variant, measured.tokens, *(_cell(levels[level]) for level in LEVELS),
                         "**near**" if all(flags) else f"{sum(flags)} of {len(flags)}"])
    return markdown_table(["network", "variant", "tokens", *LEVEL_HEADERS,
                           f"near the paper ({reference}: {paper}, ±{tolerance:g})"], rows) + "\n"


def run_measurements(run_folder: str | os.PathLike, images: int | None = None) -> dict[int, MeasurementResult]:
    """The measurements of a run's networks by epoch, ascending, of the epochs measured on the
    default number of images: on it, or on ``images`` where given and measured."""
    paths = {epoch: measurement_path(run_folder, epoch, images or IMAGES) for epoch in measured_epochs(run_folder)}
    return {epoch: MeasurementResult.load(path) for epoch, path in paths.items() if path.exists()}


def level(result: MeasurementResult, source: str, which: str) -> float:
    """The paper's level ``which`` (early, middle, late) of input ``source``, default measurement, in EED%."""
    return result.get(source).levels()[which].estimate


@dataclass(frozen=True)
class ControlFindings:
    """What the controls show of one network, at its random initialisation and trained.

    ``scrambled_gap``: the largest gap (EED points) between the images and their phase-scrambled
    versions over the levels and both networks; ``shapes`` and ``levels`` by (``"init"`` or
    ``"trained"``, input[, level]); ``noise_ratio``: noise's early level over the images', at init.
    """

    scrambled_gap: float
    shapes: dict[tuple[str, str], str]
    noise_ratio: float
    levels: dict[tuple[str, str, str], float]


def control_findings(init: MeasurementResult, trained: MeasurementResult) -> ControlFindings:
    """:class:`ControlFindings` of one network measured at its initialisation and trained."""
    networks = {"init": init, "trained": trained}
    gap = max(abs(level(r, "images", which) - level(r, "phase-scrambled", which)) for r in networks.values()
              for which in LEVELS)
    shapes = {(name, source): r.get(source).shape()[0] for name, r in networks.items() for source in INPUTS}
    levels = {(name, source, which): level(r, source, which) for name, r in networks.items() for source in INPUTS
              for which in LEVELS}
    return ControlFindings(gap, shapes, levels["init", "noise", "early"] / levels["init", "images", "early"], levels)


@dataclass(frozen=True)
class RowsComparison:
    """One network measured on the default number of images and on fewer: the table, the largest
    change of a level (EED points), whether every epoch keeps its shape, and the two numbers."""

    markdown: str
    largest_shift: float
    same_shapes: bool
    images: tuple[int, int]


def rows_comparison(many: Mapping[int, MeasurementResult], few: Mapping[int, MeasurementResult]) -> RowsComparison:
    """:class:`RowsComparison` of the epochs measured both ways (``many`` and ``few``, by epoch)."""
    rows = ["| network | images | " + " | ".join(LEVEL_HEADERS) + " | shape (share of replicates) |",
            "| --- | ---: | --- | --- | --- | --- |"]
    shifts, same = [], True
    for epoch, fewer in few.items():
        for result in (many[epoch], fewer):
            levels, (shape, share) = result.get("images").levels(), result.get("images").shape()
            rows.append(f"| epoch {epoch} | {result.images} | "
                        + " | ".join(_cell(levels[name]) for name in LEVELS)
                        + f" | {shape} ({share:.0%}) |")
        shifts += [level(fewer, "images", which) - level(many[epoch], "images", which) for which in LEVELS]
        same &= fewer.get("images").shape()[0] == many[epoch].get("images").shape()[0]
    epoch = next(iter(few))
    return RowsComparison("\n".join(rows), max(map(abs, shifts)), same, (many[epoch].images, few[epoch].images))
