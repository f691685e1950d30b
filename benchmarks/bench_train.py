"""Training throughput of DINO: images per second of one full step, and what that means
for a whole run.

    python benchmarks/bench_train.py                  # the `ci` configuration on this CPU
    python benchmarks/bench_train.py --paper          # each dataset's `paper` configuration (one GPU)
    python benchmarks/bench_train.py --paper --tiny   # the same code path with 2-image batches (CPU check)

A step is everything the training loop does per batch (:class:`ib_tutorial.training.DINOTraining`):
teacher forward on the two global views, student forward on all views, the loss and
centre update, backward, per-parameter clipping, AdamW and the teacher EMA. Views are
random tensors of the configured shapes, so the GPU mode needs no dataset; the
augmentation pipeline is timed separately (images per second for one loader worker,
on synthetic images of the dataset's native size), so one can see how many workers
keep the step fed. For `paper` the projected time of the full run is
``epochs * train images / (images per second)``, k-NN evaluations and loading excluded.

Writes ``benchmarks/results/bench_train.json`` (or ``bench_train_paper.json``).
"""
from __future__ import annotations

import argparse
import time

import torch

from common import interleaved_medians, machine, write_json
from ib_tutorial.augment import MultiCropAugmentation, MultiCropDataset
from ib_tutorial.data import get_dataset
from ib_tutorial.presets import get_preset, resolve_device
from ib_tutorial.training import DINOTraining, build_schedules, resolve_precision

# Train-split sizes of the paper's datasets (UC Merced: the stratified 80 % of 2,100 tiles)
# and their native image sides, for the projection and the augmentation timing.
PAPER_DATASETS = {"cifar100": (50_000, 32), "tiny-imagenet": (100_000, 64), "uc-merced": (1_680, 256)}


def step_images_per_second(settings: dict, view: dict, batch: int, device: torch.device, repeats: int) -> dict:
    precision = resolve_precision(settings["precision"], device)
    state = DINOTraining(settings, view, build_schedules(settings, steps_per_epoch=100), device, precision)
    global_side, local_side = view["img_size"], view["local_crop_size"]
    views = [torch.randn(batch, 3, global_side, global_side, device=device) for _ in range(2)]
    views += [torch.randn(batch, 3, local_side, local_side, device=device) for _ in range(settings["local_crops_number"])]
    step = {"index": 0}

    def one_step():
        result = state.forward(views, epoch=1)  # epoch 1: the last layer is no longer frozen
        state.update(result.loss, epoch=1, step=step["index"])
        step["index"] += 1
        if device.type == "cuda":
            torch.cuda.synchronize()

    seconds = interleaved_medians({"step": one_step}, repeats=repeats)["step"]
    memory = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return {"batch": batch, "precision": precision, "seconds_per_step": seconds,
            "images_per_s": batch / seconds, "peak_gpu_memory_gib": memory}


def augmentation_images_per_second(view, local_crops: int, native_side: int, count: int) -> float:
    """One worker's throughput: synthetic images of the native side -> multi-crop views."""
    images = get_dataset("synthetic-objects", "train", img_size=native_side, size=count)
    views = MultiCropDataset(images, MultiCropAugmentation(view, local_crops), seed=0)
    start = time.perf_counter()
    for index in range(count):
        views[index]
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paper", action="store_true", help="each dataset's paper configuration, with projections")
    parser.add_argument("--tiny", action="store_true", help="2-image batches and one timed step (a CPU check of the path)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: PyTorch's)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    preset = get_preset("paper" if args.paper else "ci")
    device = resolve_device(preset)
    settings = {k: v for k, v in vars(preset.train).items() if k != "views"}
    repeats = 1 if args.tiny else args.repeats
    datasets = PAPER_DATASETS if args.paper else {"synthetic-objects": (settings["train_images"], 32)}

    results = {}
    for name, (train_images, native_side) in datasets.items():
        view = preset.train.view(name)
        batch = 2 if args.tiny else settings["batch_size"]
        record = step_images_per_second(settings, vars(view), batch, device, repeats)
        record["augmentation_images_per_s_per_worker"] = augmentation_images_per_second(
            view, settings["local_crops_number"], native_side, count=16 if args.tiny else 200)
        record["train_images"] = train_images
        record["projected_hours"] = settings["epochs"] * train_images / record["images_per_s"] / 3600
        results[name] = record
        print(f"{name:18s} {view.img_size:3d} px / patch {view.patch_size:2d}, batch {batch}, {record['precision']}: "
              f"{record['images_per_s']:8.1f} images/s; augmentation {record['augmentation_images_per_s_per_worker']:.0f} "
              f"images/s per worker; {settings['epochs']} epochs x {train_images} images -> "
              f"{record['projected_hours']:.2f} h")

    out = args.out or f"benchmarks/results/bench_train{'_paper' if args.paper else ''}{'_tiny' if args.tiny else ''}.json"
    write_json(out, {"benchmark": "dino_train_throughput", "preset": preset.name, "device": str(device),
                     "args": vars(args), "results": results, "machine": machine()})


if __name__ == "__main__":
    main()
