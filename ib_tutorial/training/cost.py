"""What a training run costs: the time of a run on a machine where none was timed
(:func:`estimate_run_time`), from the benchmark records in ``benchmarks/results/``."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..data import DATASETS
from ..presets import TrainSettings, ViewSettings, get_preset
from ..files import stored_benchmark
from .run_config import get_objective, resolve_settings
from .runs import saved_epochs

# FLOPs, fraction of the matmul peak and augmentation rate of each CPU tier's step
# (benchmarks/bench_utilisation.py).
UTILISATION_RECORD = "bench_utilisation_cpu.json"


def crop_pixels(view: ViewSettings, train: TrainSettings) -> tuple[int, int]:
    """(crops, output pixels) the multi-crop augmentation writes per image."""
    crops = 2 + train.local_crops_number
    return crops, 2 * view.img_size**2 + train.local_crops_number * view.local_crop_size**2


@dataclass(frozen=True)
class Machine:
    """A machine by its data sheet: its peak (FLOP/s) in the run's precision, and the loader's CPU cores."""

    name: str
    peak_flops: float
    peak_source: str
    loader_cores: int


# Colab's free tier: an NVIDIA T4 (no bf16: `auto` trains in fp16) beside two virtual CPU cores.
COLAB_FREE_GPU = Machine("Colab's free GPU (NVIDIA T4)", 65e12,
                         "fp16 on its tensor cores, NVIDIA's T4 data sheet", loader_cores=2)


@dataclass(frozen=True)
class RunTimeEstimate:
    """The time of a run's training steps on a machine, and how it was reckoned (``utilisation``:
    the best fraction of peak the benchmarks measured)."""

    dataset: str
    preset: str
    machine: Machine
    images: int
    epochs: int
    gflop_per_image: float
    utilisation: float
    utilisation_source: str
    gpu_seconds: float
    loader_images_per_s: tuple[float, float]
    reference: str

    @property
    def seconds(self) -> tuple[float, float]:
        """(low, high) seconds: GPU and loader overlap, so the slower one sets the pace."""
        slow, fast = self.loader_images_per_s
        return max(self.gpu_seconds, self.images / fast), max(self.gpu_seconds, self.images / slow)


def estimate_run_time(dataset: str, preset: str = "quick", machine: Machine = COLAB_FREE_GPU,
                      record: dict | None = None) -> RunTimeEstimate | None:
    """The training time of ``preset`` on ``dataset`` on ``machine`` from a utilisation record
    (default: the stored one; None without one). GPU: ``images x image_flops / (peak x u)``, an
    optimistic bound; loader: the measured rate per core scaled by the crops' number and by the
    pixels written, the two ends of the range. k-NN, profiles and the download are not counted."""
    if record is None:
        stored = stored_benchmark(UTILISATION_RECORD)
        if not stored.exists():
            return None
        record = json.loads(stored.read_text())
    tier, measured = max(record["results"].items(), key=lambda item: item[1]["fraction_of_peak"])
    reference_train, reference_view = resolve_settings(get_preset(tier), measured["dataset"], {})
    if (reference_view.img_size, reference_train.local_crops_number) != (measured["img_size"], measured["local_crops"]):
        raise ValueError(f"The {tier} tier's crops changed since {UTILISATION_RECORD} was written; "
                         "run benchmarks/bench_utilisation.py again.")
    train, view = resolve_settings(get_preset(preset), dataset, {})
    per_epoch = train.train_images or DATASETS[dataset].train_images
    if per_epoch is None:
        raise ValueError(f"{dataset} has no fixed number of training images; the estimate needs one.")
    images = train.epochs * per_epoch
    flops = get_objective(train.objective).image_flops(view, train)
    crops, pixels = crop_pixels(view, train)
    reference_crops, reference_pixels = crop_pixels(reference_view, reference_train)
    per_core = measured["augmentation_images_per_s"]
    rates = sorted(machine.loader_cores * per_core * ratio for ratio in (reference_crops / crops, reference_pixels / pixels))
    return RunTimeEstimate(
        dataset=dataset, preset=preset, machine=machine, images=images, epochs=train.epochs,
        gflop_per_image=flops / 1e9, utilisation=measured["fraction_of_peak"],
        utilisation_source=f"benchmarks/results/{UTILISATION_RECORD}, tier {tier}",
        gpu_seconds=images * flops / (machine.peak_flops * measured["fraction_of_peak"]),
        loader_images_per_s=(rates[0], rates[1]),
        reference=(f"{per_core:.0f} images/s per core at the {tier} tier's {reference_crops} crops of "
                   f"{reference_view.img_size} and {reference_view.local_crop_size} px"))


def epochs_within(seconds: float, images_per_s: float, images_per_epoch: int, most: int,
                  per_saved_s: float = 0.0, checkpoint_every: int = 1) -> int:
    """The most epochs (1 to ``most``) that train in ``seconds``, with ``per_saved_s`` more for each
    teacher saved (:func:`~ib_tutorial.training.runs.saved_epochs`): a cosine schedule cannot be cut short."""
    if images_per_s <= 0 or images_per_epoch <= 0:
        raise ValueError(f"need a positive rate and epoch size, got {images_per_s} images/s and {images_per_epoch} images")

    def cost(epochs: int) -> float:
        return epochs * images_per_epoch / images_per_s + per_saved_s * len(saved_epochs(0, epochs, checkpoint_every))

    return next((epochs for epochs in range(most, 0, -1) if cost(epochs) <= seconds), 1)
