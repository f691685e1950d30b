"""Training throughput of DINO: images per second of one full step, and what that means
for a whole run.

    python benchmarks/bench_train.py                          # the `ci` configuration on this CPU
    python benchmarks/bench_train.py --preset laptop          # the CPU-laptop tier
    python benchmarks/bench_train.py --preset laptop --compare arch=vit_small,batch_size=32
                                                              # ... beside the former tier's ViT-S, batch 32
    python benchmarks/bench_train.py --preset paper           # each paper dataset's configuration (one GPU)
    python benchmarks/bench_train.py --preset paper --tiny    # the same code path with 2-image batches (CPU check)

A step is everything the training loop does per batch (:class:`ib_tutorial.training.dino.DINOTraining`):
teacher forward on the two global views, student forward on all views, the loss and
centre update, backward, per-parameter clipping, AdamW and the teacher EMA. Views are
random tensors of the configured shapes, so the GPU mode needs no dataset; the
augmentation pipeline is timed separately (images per second for one loader worker,
on synthetic images of the dataset's native size), so one can see how many workers
keep the step fed. The projected time of a whole run is ``epochs * train images /
(images per second)``, k-NN evaluations excluded; with ``num_workers = 0`` (the CPU
presets) augmentation runs in the training process and its time is added.

The CPU presets (ci, laptop) are timed on the synthetic object world, the GPU presets
(quick, paper) on the shapes of CIFAR-100, Tiny ImageNet and UC Merced.
Writes ``benchmarks/results/bench_train_<preset>.json``.
"""
from __future__ import annotations

import argparse
import json
import random

import torch
from common import interleaved_medians, machine, write_json
from PIL import ImageFilter, ImageOps
from torchvision import transforms

from ib_tutorial.machine import keep_freed_memory
from ib_tutorial.data import DATASETS, get_dataset
from ib_tutorial.presets import get_preset, resolve_device
from ib_tutorial.book.paper import PAPER_DATASETS
from ib_tutorial.training.augment import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    REFERENCE_SIZE,
    BatchMultiCrop,
    DecodedImages,
    MultiCropAugmentation,
    MultiCropDataset,
)
from ib_tutorial.training.dino import DINOTraining
from ib_tutorial.training.run_config import RunConfig
from ib_tutorial.training.schedules import Schedules


def make_step(config: RunConfig, device: torch.device, change=None):
    """One full training step of a fresh DINO state on random views of the configured shapes;
    ``change(state)``, if given, alters the state first (a variant of ``bench_step.py``)."""
    state = DINOTraining(config.train, config.view, config.precision, Schedules.of(config.train, 100),
                         device, num_classes=0)
    if change is not None:
        change(state)
    batch, global_side, local_side = config.train.batch_size, config.view.img_size, config.view.local_crop_size
    views = [torch.randn(batch, 3, global_side, global_side, device=device) for _ in range(2)]
    views += [torch.randn(batch, 3, local_side, local_side, device=device) for _ in range(config.train.local_crops_number)]
    step = {"index": state.schedules.phases.freeze_steps}  # the steps after the last layer's release: every parameter trains

    def one_step():
        result = state.forward(views, None, epoch=1)  # no labels for DINO
        state.update(result.loss, epoch=1, step=step["index"])
        step["index"] += 1
        if device.type == "cuda":
            torch.cuda.synchronize()

    return one_step


def step_images_per_second(candidates: dict[str, RunConfig], device: torch.device, repeats: int) -> dict[str, dict]:
    """Images per second of a step for each ``label -> configuration``, timed in turn."""
    steps = {label: make_step(config, device) for label, config in candidates.items()}
    seconds = interleaved_medians(steps, repeats=repeats)
    memory = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return {label: {"batch": config.train.batch_size, "precision": config.precision, "seconds_per_step": seconds[label],
                    "images_per_s": config.train.batch_size / seconds[label], "peak_gpu_memory_gib": memory}
            for label, config in candidates.items()}


def parse_overrides(text: str) -> dict:
    """``"arch=vit_small,batch_size=32"`` -> ``{"arch": "vit_small", "batch_size": 32}``."""
    overrides = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:  # a word, e.g. vit_small
            overrides[key] = value
    return overrides


def dino_reference_augmentation(view, local_crops: int):
    """DINO's own multi-crop recipe (``DataAugmentationDINO`` in its ``main_dino.py``), written
    out with torchvision and PIL at the same crop sizes, blur radii and colour strength,
    drawing from the global random state: the speed of the reference pipeline."""
    scale, strength = view.img_size / REFERENCE_SIZE, view.color_strength
    low, high = view.blur_radius[0] * scale, view.blur_radius[1] * scale

    def blur(p):
        def apply(image):
            if random.random() > p:
                return image
            return image.filter(ImageFilter.GaussianBlur(radius=random.uniform(low, high)))
        return apply

    def solarize(image):
        return ImageOps.solarize(image) if random.random() < 0.2 * strength else image

    jitter = transforms.Compose([
        transforms.RandomHorizontalFlip(p=0.5),
        transforms.RandomApply([transforms.ColorJitter(0.4 * strength, 0.4 * strength, 0.2 * strength, 0.1 * strength)], p=0.8),
        transforms.RandomGrayscale(p=0.2 * strength),
    ])
    normalize = transforms.Compose([transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    bicubic = transforms.InterpolationMode.BICUBIC
    crop = transforms.RandomResizedCrop(view.img_size, scale=view.global_crop_scale, interpolation=bicubic)
    local = transforms.RandomResizedCrop(view.local_crop_size, scale=view.local_crop_scale, interpolation=bicubic)
    first = transforms.Compose([crop, jitter, blur(1.0), normalize])
    second = transforms.Compose([crop, jitter, blur(0.1), solarize, normalize])
    local_view = transforms.Compose([local, jitter, blur(0.5), normalize])
    return lambda image: [first(image), second(image)] + [local_view(image) for _ in range(local_crops)]


def augmentation_images_per_second(view, local_crops: int, native_side: int, count: int, device: torch.device,
                                   batch: int, repeats: int = 3) -> dict:
    """Images per second of the multi-crop views, timed in turn on the same synthetic
    images of the native side: this package's loader path (one worker, seeded per
    sample), DINO's reference pipeline (one worker), the loader path making only the two
    global views (what the supervised objective uses), and the batched path on ``device``
    (:class:`ib_tutorial.training.augment.BatchMultiCrop`, batches of ``batch``, images decoded once
    beforehand)."""
    images = get_dataset("synthetic-objects", "train", img_size=native_side, size=count)
    pictures = [images[index][0] for index in range(count)]
    ours = MultiCropDataset(images, MultiCropAugmentation(view, local_crops), seed=0)
    global_only = MultiCropDataset(images, MultiCropAugmentation(view, 0), seed=0)
    reference = dino_reference_augmentation(view, local_crops)
    decoded = DecodedImages(images, BatchMultiCrop(view, local_crops, seed=0), device, progress=False)
    batches = torch.arange(count).split(batch)

    def batched():
        for indices in batches:
            decoded.views(indices, device)
        if device.type == "cuda":
            torch.cuda.synchronize()

    seconds = interleaved_medians({
        "ib_tutorial": lambda: [ours.augment(index, picture) for index, picture in enumerate(pictures)],
        "dino_reference": lambda: [reference(picture) for picture in pictures],
        "global_views_only": lambda: [global_only.augment(index, picture) for index, picture in enumerate(pictures)],
        "batched": batched,
    }, repeats=repeats)
    rates = {name: count / value for name, value in seconds.items()}
    rates["ratio"] = rates["ib_tutorial"] / rates["dino_reference"]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="ci", help="ci, laptop (synthetic world); quick, paper (the paper's datasets)")
    parser.add_argument("--tiny", action="store_true", help="2-image batches and one timed step (a CPU check of the path)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: PyTorch's)")
    parser.add_argument("--compare", default=None, metavar="KEY=VALUE,...",
                        help="also time the preset with these training settings changed, in turn with it "
                             "(e.g. arch=vit_small,batch_size=32: the former laptop tier's model and batch)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    keep_freed_memory()  # as the command line does
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    preset = get_preset(args.preset)
    device = resolve_device(preset)
    repeats = 1 if args.tiny else args.repeats
    tiny = {"batch_size": 2} if args.tiny else {}
    datasets = PAPER_DATASETS if preset.device != "cpu" else ("synthetic-objects",)

    results = {}
    for name in datasets:
        candidates = {"preset": RunConfig.resolve(name, preset, tiny)}
        if args.compare:
            candidates["compared"] = RunConfig.resolve(name, preset, {**parse_overrides(args.compare), **tiny})
        settings, view, batch = candidates["preset"].train, candidates["preset"].view, candidates["preset"].train.batch_size
        train_images = DATASETS[name].train_images if preset.device != "cpu" else settings.train_images
        timings = step_images_per_second(candidates, device, repeats)
        record = timings["preset"]
        if args.compare:
            record["compared"] = {"settings": args.compare, **timings["compared"],
                                  "preset_speed_ratio": record["images_per_s"] / timings["compared"]["images_per_s"]}
            print(f"with {args.compare}: {timings['compared']['images_per_s']:.1f} images/s; the preset is "
                  f"{record['compared']['preset_speed_ratio']:.2f}x as fast")
        augmentation = augmentation_images_per_second(view, settings.local_crops_number, DATASETS[name].native_size,
                                                      count=16 if args.tiny else 200, device=device,
                                                      batch=min(batch, 16 if args.tiny else 200),
                                                      repeats=1 if args.tiny else 3)
        record["augmentation_images_per_s_per_worker"] = augmentation["ib_tutorial"]
        record["dino_reference_augmentation_images_per_s"] = augmentation["dino_reference"]
        record["augmentation_speed_vs_dino_reference"] = augmentation["ratio"]
        record["global_views_only_augmentation_images_per_s_per_worker"] = augmentation["global_views_only"]
        record["batched_augmentation_images_per_s"] = augmentation["batched"]
        record["train_images"] = train_images
        per_image = 1 / record["images_per_s"]
        if settings.num_workers == 0:
            per_image += 1 / record["augmentation_images_per_s_per_worker"]
        seconds = settings.epochs * train_images * per_image
        record["projected_epoch_seconds"] = train_images * per_image
        record["projected_hours"] = seconds / 3600
        results[name] = record
        projected = f"{seconds / 3600:.2f} h" if seconds > 3600 else f"{seconds / 60:.1f} min"
        print(f"{name:18s} {view.img_size:3d} px / patch {view.patch_size:2d}, batch {batch}, {record['precision']}: "
              f"{record['images_per_s']:8.1f} images/s; augmentation {record['augmentation_images_per_s_per_worker']:.0f} "
              f"images/s per worker ({augmentation['ratio']:.2f}x DINO's reference pipeline, "
              f"{augmentation['dino_reference']:.0f}; global views only {augmentation['global_views_only']:.0f}; batched on "
              f"{device.type} {augmentation['batched']:.0f}); epoch of {train_images} images {record['projected_epoch_seconds'] / 60:.1f} min, "
              f"{settings.epochs} epochs {projected}")

    out = args.out or f"benchmarks/results/bench_train_{preset.name}{'_tiny' if args.tiny else ''}.json"
    write_json(out, {"benchmark": "dino_train_throughput", "preset": preset.name, "device": str(device),
                     "args": vars(args), "results": results, "machine": machine()})


if __name__ == "__main__":
    main()
