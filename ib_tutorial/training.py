"""Train ViT-Small with DINO: the loop, the run directory, checkpoints, resume, k-NN, DDP.

One function, :func:`train`, runs everything. It resolves the preset and overrides into
one configuration, builds student and teacher (:mod:`ib_tutorial.dino`) and the
multi-crop data (:mod:`ib_tutorial.augment`), then for every step:

1. sets this step's learning rate and weight decay;
2. runs the teacher on the two global views and the student on all views;
3. computes the DINO loss (which also moves the centre) and stops on a non-finite value;
4. back-propagates, clips gradients, drops the last layer's gradients in the first
   epoch(s), and takes an AdamW step;
5. moves the teacher towards the student (EMA).

Launched by ``torchrun`` it runs one process per device with PyTorch DDP (NCCL on GPUs,
gloo on CPUs): a distributed sampler splits every global batch, the centre and the
logged metrics are averaged over processes, and only rank 0 writes files.

Reproducibility: a run is a function of its configuration and seed. Augmentations
depend only on ``(seed, epoch, image index)``, and checkpoints carry every random
state, so a resumed run continues exactly as an uninterrupted one would.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import timm
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, Subset
from tqdm.auto import tqdm

from .augment import MultiCropAugmentation, MultiCropDataset, eval_transform
from .data import get_dataset, held_out_split
from .dino import (
    DINOHead,
    DINOLoss,
    DINOLossOutput,
    MultiCropWrapper,
    Schedules,
    apply_schedules,
    cancel_last_layer_gradients,
    clip_gradients,
    parameter_groups,
    update_teacher,
)
from .distributed import Processes
from .knn import POOLS, extract_features, knn_accuracy
from .metrics import effective_encoding_dimension
from .models import ARCHITECTURES, build_vit
from .paths import data_root
from .presets import Preset, TrainSettings, ViewSettings, get_preset, resolve_device, training_overrides
from .runs import RunDirectory

# Teacher entropy within this fraction of log K of either end (log K: uniform, 0: one-hot),
# or teacher information (what the output says about the image) below this fraction of
# log K, raises a CollapseWarning.
COLLAPSE_FRACTION = 0.02
INFORMATION_FRACTION = 0.05
# Settings that may differ when a run is resumed (they do not change its trajectory).
RESUMABLE_DIFFERENCES = ("world_size", "batch_per_process", "torch", "timm", "num_workers", "threads")


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stopped before the bad step changed any weight."""


class CollapseWarning(UserWarning):
    """The teacher's output distribution is close to uniform or to one-hot."""


# ============ configuration ============
def resolve_settings(preset: Preset, dataset: str, overrides: dict) -> tuple[Preset, TrainSettings, ViewSettings]:
    """Apply overrides (names from :func:`~ib_tutorial.presets.training_overrides`) to a
    preset's training and view settings."""
    known = training_overrides()
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(f"Unknown training setting(s) {unknown}. Known: {', '.join(sorted(known))}.")
    top = {k: overrides[k] for k in ("seed", "device") if k in overrides}
    view_names = {f.name for f in dataclasses.fields(ViewSettings)}
    settings = dataclasses.replace(
        preset.train, **{k: v for k, v in overrides.items() if k not in view_names and k not in top}
    )
    view = dataclasses.replace(settings.view(dataset), **{k: v for k, v in overrides.items() if k in view_names})
    for size in (view.img_size, view.local_crop_size):
        if size % view.patch_size:
            raise ValueError(f"crop size {size} is not a multiple of patch_size {view.patch_size}")
    return preset.replace(**top), settings, view


def resolve_precision(requested: str, device: torch.device) -> str:
    """``auto`` -> bf16 on CUDA when supported, else fp16 on CUDA; fp32 on CPU."""
    if requested not in ("auto", "bf16", "fp16", "fp32"):
        raise ValueError(f"precision must be auto, bf16, fp16 or fp32, got {requested!r}")
    if device.type != "cuda":
        if requested not in ("auto", "fp32"):
            raise ValueError(f"precision {requested} needs a CUDA device; CPU training runs in fp32 (--precision fp32)")
        return "fp32"
    if requested == "auto":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return requested


# ============ devices and random state ============
def choose_device(preset: Preset, processes: Processes) -> torch.device:
    """The preset's device; on CUDA, the GPU of this process's local rank."""
    device = resolve_device(preset)
    if device.type == "cuda":
        device = torch.device("cuda", processes.local_rank)
        torch.cuda.set_device(device)
    return device


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict:
    """Every random generator a step may use, in a form ``torch.load(weights_only=True)`` reads."""
    numpy_state = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (numpy_state[0], torch.from_numpy(numpy_state[1].astype(np.int64)), *numpy_state[2:]),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    name, keys, *rest = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), *rest))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def epoch_indices(size: int, count: int | None, seed: int) -> list[int]:
    """The images of one training epoch: ``count`` of ``range(size)``, a fixed function of
    ``seed``. Fewer than ``size``: a subset (:func:`subset_indices`); more: every image as
    often as fits, then a subset for the rest, so a small dataset (DTD's 720 images) gets
    as many steps per epoch as a large one. A repeated image gets fresh views each time
    (views depend on the position in the epoch)."""
    if count is None or count <= size:
        return subset_indices(size, count, seed)
    return list(range(size)) * (count // size) + subset_indices(size, count % size, seed)


def subset_indices(size: int, count: int | None, seed: int) -> list[int]:
    """``count`` distinct indices of ``range(size)``, a fixed function of ``seed`` (all when ``count`` is None)."""
    if count is None or count >= size:
        return list(range(size))
    generator = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(size, generator=generator)[:count].tolist())


# ============ data ============
@dataclass
class Data:
    train_views: MultiCropDataset
    knn_train: Subset
    knn_eval: Subset
    num_classes: int


def build_data(config: dict, root, download: bool) -> Data:
    name, options, seed, settings = config["dataset"], config["dataset_options"], config["seed"], config["train"]
    view = ViewSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in config["view"].items()})
    train_images = get_dataset(name, "train", root=root, download=download, **options)
    train_subset = Subset(train_images, epoch_indices(len(train_images), settings["train_images"], seed))
    augmentation = MultiCropAugmentation(view, settings["local_crops_number"])

    plain = eval_transform(view.img_size)
    knn_train = get_dataset(name, "train", root=root, download=download, transform=plain, **options)
    knn_eval = get_dataset(name, config["held_out_split"], root=root, download=download, transform=plain, **options)
    return Data(
        train_views=MultiCropDataset(train_subset, augmentation, seed),
        knn_train=Subset(knn_train, subset_indices(len(knn_train), settings["knn_train_images"], seed + 1)),
        knn_eval=Subset(knn_eval, subset_indices(len(knn_eval), settings["knn_eval_images"], seed + 2)),
        num_classes=len(train_images.classes),
    )


def build_loader(data: Data, config: dict, processes: Processes, device: torch.device) -> DataLoader:
    sampler = DistributedSampler(
        data.train_views, num_replicas=processes.world_size, rank=processes.rank, shuffle=True, seed=config["seed"]
    )
    loader = DataLoader(
        data.train_views,
        batch_size=config["batch_per_process"],
        sampler=sampler,
        num_workers=config["train"]["num_workers"],
        pin_memory=device.type == "cuda",
        drop_last=True,
    )
    if len(loader) == 0:
        raise ValueError(
            f"The global batch ({config['train']['batch_size']}) is larger than the "
            f"{len(data.train_views)} training images; lower --batch-size or raise --train-images."
        )
    return loader


# ============ models ============
def build_networks(settings: dict, view: dict) -> tuple[MultiCropWrapper, MultiCropWrapper]:
    """Student (with stochastic depth) and teacher (without), starting from the same weights.
    ``settings`` and ``view`` are the ``train`` and ``view`` sections of a run's configuration."""

    def network(drop_path_rate: float) -> MultiCropWrapper:
        head = DINOHead(ARCHITECTURES[settings["arch"]]["embed_dim"], settings["out_dim"], settings["hidden_dim"],
                        settings["bottleneck_dim"], norm_last_layer=settings["norm_last_layer"])
        backbone = build_vit(settings["arch"], view["img_size"], view["patch_size"], drop_path_rate)
        return MultiCropWrapper(backbone, head)

    student = network(settings["drop_path_rate"])
    teacher = network(0.0)
    teacher.load_state_dict(student.state_dict())
    teacher.requires_grad_(False)
    return student, teacher


SCHEDULE_SETTINGS = ("lr", "min_lr", "warmup_epochs", "weight_decay", "weight_decay_end", "momentum_teacher",
                     "warmup_teacher_temp", "teacher_temp", "warmup_teacher_temp_epochs")


def build_schedules(settings: dict, steps_per_epoch: int) -> Schedules:
    """The run's learning-rate, weight-decay, momentum and teacher-temperature schedules."""
    return Schedules.build(
        epochs=settings["epochs"], steps_per_epoch=steps_per_epoch, global_batch=settings["batch_size"],
        **{name: settings[name] for name in SCHEDULE_SETTINGS},
    )


class DINOTraining:
    """Student, teacher, loss (with its centre), optimiser, loss scaler and schedules:
    everything one step changes and a checkpoint holds.

    One step is :meth:`forward` (the loss, which also moves the centre), then, if the
    loss is finite, :meth:`update` (student, then teacher).
    """

    def __init__(self, settings: dict, view: dict, schedules: Schedules, device: torch.device, precision: str):
        self.settings, self.schedules, self.device = settings, schedules, device
        student, teacher = build_networks(settings, view)
        self.student_module, self.teacher = student.to(device), teacher.to(device)
        self.student: torch.nn.Module = self.student_module  # the DDP wrapper once distributed
        self.loss_fn = DINOLoss(settings["out_dim"], settings["student_temp"], settings["center_momentum"]).to(device)
        self.optimizer = torch.optim.AdamW(parameter_groups(self.student_module))
        self.scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
        self.autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

    def distribute(self) -> None:
        """Wrap the student in DDP, which averages its gradients over processes."""
        device_ids = [self.device.index] if self.device.type == "cuda" else None
        self.student = DistributedDataParallel(self.student_module, device_ids=device_ids)

    def forward(self, views: list[torch.Tensor], epoch: int) -> DINOLossOutput:
        """Teacher on the two global views, student on all of them, then the DINO loss."""
        views = [v.to(self.device, non_blocking=True) for v in views]
        autocast = (torch.autocast("cuda", dtype=self.autocast_dtype) if self.autocast_dtype
                    else contextlib.nullcontext())
        with autocast:
            teacher_output = self.teacher(views[:2])
            student_output = self.student(views)
        return self.loss_fn(student_output, teacher_output, float(self.schedules.teacher_temp[epoch]))

    def update(self, loss: torch.Tensor, epoch: int, step: int) -> None:
        """Back-propagate, clip, freeze the last layer while due, take the AdamW step with
        this step's learning rate and weight decay, then move the teacher (EMA)."""
        apply_schedules(self.optimizer, self.schedules.lr[step], self.schedules.weight_decay[step])
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        if self.settings["clip_grad"]:
            self.scaler.unscale_(self.optimizer)
            clip_gradients(self.student_module, self.settings["clip_grad"])
        cancel_last_layer_gradients(self.student_module, epoch, self.settings["freeze_last_layer"])
        self.scaler.step(self.optimizer)
        self.scaler.update()
        update_teacher(self.student_module, self.teacher, float(self.schedules.momentum[step]))

    def state_dict(self) -> dict:
        return {
            "student": self.student_module.state_dict(),
            "teacher": self.teacher.state_dict(),
            "loss": self.loss_fn.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "schedules": self.schedules.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        if not self.schedules.matches(state["schedules"]):
            raise ValueError("The checkpoint's schedules differ from this run's; start a new run with a new --out.")
        self.student_module.load_state_dict(state["student"])
        self.teacher.load_state_dict(state["teacher"])
        self.loss_fn.load_state_dict(state["loss"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])


# ============ the run ============
def default_run_dir(dataset: str, preset: str) -> Path:
    """``<data root>/runs/<dataset>-<preset>``: outside the repository, like the data."""
    return data_root() / "runs" / f"{dataset}-{preset}"


def run_config(
    dataset: str,
    preset: Preset,
    settings: TrainSettings,
    view: ViewSettings,
    dataset_options: dict,
    processes: Processes,
    device: torch.device,
) -> dict:
    """Every resolved setting of a run, as JSON-ready data (written to ``config.json``)."""
    if settings.batch_size % processes.world_size:
        raise ValueError(
            f"batch_size {settings.batch_size} must be divisible by the number of processes ({processes.world_size})"
        )
    train = dataclasses.asdict(settings)
    del train["views"]
    if train["num_workers"] is None:  # one per core, shared by the training processes of this node
        per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        train["num_workers"] = max(1, (os.cpu_count() or 1) // per_node)
    return {
        "dataset": dataset,
        "dataset_options": dict(dataset_options),
        "held_out_split": settings.eval_split or held_out_split(dataset, dataset_options),
        "preset": preset.name,
        "seed": preset.seed,
        "device": device.type,
        "precision": resolve_precision(settings.precision, device),
        "world_size": processes.world_size,
        "batch_per_process": settings.batch_size // processes.world_size,
        "model": {"arch": settings.arch, **ARCHITECTURES[settings.arch]},
        "view": dataclasses.asdict(view),
        "train": train,
        "versions": {"torch": torch.__version__, "timm": timm.__version__},
    }


def check_same_run(saved: dict, config: dict, run: RunDirectory) -> None:
    """Refuse to resume a run with settings that would change its trajectory."""
    old, new = _flatten(saved), _flatten(config)
    changed = sorted(
        key for key in set(old) | set(new)
        if key.split(".")[-1] not in RESUMABLE_DIFFERENCES and old.get(key) != new.get(key)
    )
    if changed:
        raise ValueError(
            f"{run.path} holds a run with different settings ({', '.join(changed)}). "
            "Resume it with its own settings, or start a new run with a different --out."
        )


def _flatten(config: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``, after a JSON round trip (tuples become lists)."""
    flat = {}
    for key, value in json.loads(json.dumps(config)).items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def collapse_message(teacher_entropy: float, teacher_information: float, out_dim: int) -> str | None:
    """A warning text when the teacher entropy is near log K (uniform) or 0 (one-hot), or when
    the teacher's output carries almost no information about its image (either collapse
    under way: :class:`~ib_tutorial.dino.DINOLossOutput`), else None."""
    limit = math.log(out_dim)
    if teacher_entropy > (1 - COLLAPSE_FRACTION) * limit:
        kind = f"entropy {teacher_entropy:.3f} nats is near log K = {limit:.2f} (uniform collapse: try a lower --teacher-temp)"
    elif teacher_entropy < COLLAPSE_FRACTION * limit:
        kind = f"entropy {teacher_entropy:.3f} nats is near 0 (one-hot collapse: try a higher --center-momentum or a higher --teacher-temp)"
    elif teacher_information < INFORMATION_FRACTION * limit:
        kind = (f"output carries {teacher_information:.3f} nats about the image, under {INFORMATION_FRACTION:.0%} of "
                f"log K = {limit:.2f}: every image gets nearly the same distribution (entropy {teacher_entropy:.2f} "
                "nats; try a lower --teacher-temp or a lower --momentum-teacher)")
    else:
        return None
    return f"teacher {kind}"


def train(
    dataset: str,
    preset: str | Preset | None = None,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    root: str | os.PathLike | None = None,
    download: bool = False,
    dataset_options: dict | None = None,
    progress: bool = True,
    **overrides,
) -> Path:
    """Train ViT-Small with DINO on ``dataset`` and return the run directory.

    Args:
        dataset: a name :func:`ib_tutorial.data.get_dataset` knows (e.g. ``synthetic-objects``).
        preset: a preset or its name (default: ``$IB_TUTORIAL_PRESET``, else ``ci``).
        out: the run directory (default ``<data root>/runs/<dataset>-<preset>``).
        resume: continue from the run directory's checkpoint (start afresh when it has none).
        root, download: passed to :func:`~ib_tutorial.data.get_dataset`.
        dataset_options: extra keyword arguments for the dataset (e.g. ``texture_weight``).
        progress: show a progress bar.
        **overrides: any :class:`~ib_tutorial.presets.TrainSettings` or
            :class:`~ib_tutorial.presets.ViewSettings` field, ``seed`` or ``device``
            (e.g. ``epochs=3, lr=1e-3, patch_size=4``).

    Raises:
        NonFiniteLossError: when the loss becomes NaN or infinite; the checkpoint on disk is
            the last good one.
    """
    preset = preset if isinstance(preset, Preset) else get_preset(preset)
    preset, settings, view = resolve_settings(preset, dataset, overrides)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    processes = Processes.start("cuda" if preset.device != "cpu" and torch.cuda.is_available() else "cpu")
    try:
        device = choose_device(preset, processes)
        config = run_config(dataset, preset, settings, view, dataset_options or {}, processes, device)
        run = RunDirectory(out if out is not None else default_run_dir(dataset, preset.name))
        return _train(config, run, resume, root, download, progress, processes, device)
    finally:
        processes.stop()


def _train(config: dict, run: RunDirectory, resume: bool, root, download: bool, progress: bool,
           processes: Processes, device: torch.device) -> Path:
    settings, epochs = config["train"], config["train"]["epochs"]
    if run.exists() and not resume:
        raise FileExistsError(f"{run.path} already holds a run; pass --resume to continue it or --out to start a new one.")

    # ---- data, networks, optimiser: the same initial weights in every process ----
    seed_all(config["seed"])
    data = build_data(config, root, download)
    loader = build_loader(data, config, processes, device)
    config.update(steps_per_epoch=len(loader), train_images_used=len(data.train_views))
    if run.exists():
        check_same_run(run.read_config(), config, run)
    state = DINOTraining(settings, config["view"], build_schedules(settings, len(loader)), device, config["precision"])
    seed_all(config["seed"] + processes.rank)  # from here on, each process its own random stream
    total_steps = epochs * len(loader)

    # ---- start, or resume from the last checkpoint ----
    checkpoint = run.load_checkpoint(device) if resume else None
    start_epoch = step = 0
    wall_s, started = 0.0, time.perf_counter()  # wall time of the run, summed over its resumptions
    if checkpoint is not None:
        state.load_state_dict(checkpoint)
        start_epoch, step, wall_s = checkpoint["epoch"], checkpoint["step"], checkpoint.get("wall_s", 0.0)
        rng = checkpoint["rng"]
        set_rng_state(rng[processes.rank] if len(rng) == processes.world_size else rng[0])
        del checkpoint
    last_saved = f"{run.checkpoint_path} (epoch {start_epoch}, step {step})" if start_epoch else None
    if processes.is_main:
        if run.exists():  # drop what the interrupted run logged after its last checkpoint
            run.truncate_metrics(step if start_epoch else -1)
            tqdm.write(f"resuming {run.path} at epoch {start_epoch} (step {step})")
        run.write_config(config)
    if processes.distributed:
        state.distribute()

    bar = tqdm(total=total_steps, initial=step, desc=f"DINO {config['dataset']}", unit="step",
               disable=not (progress and processes.is_main), dynamic_ncols=True)

    def evaluate(epoch: int) -> None:
        if processes.is_main:
            record = {"kind": "knn", "epoch": epoch, "step": step, **evaluate_knn(state.teacher.backbone, data, settings, device),
                      "wall_s": wall_s + time.perf_counter() - started}
            run.append_metrics(record)
            bar.write(f"epoch {epoch}: k-NN top-1 {record['top1']:.1f}% on the CLS token, "
                      f"{record['top1_mean']:.1f}% on mean-pooled patch tokens ({record['wall_s'] / 60:.1f} min)")
        processes.barrier()

    def save(epoch: int) -> None:
        nonlocal last_saved
        rng = processes.gather(rng_state())  # every process's generators, so each resumes its own
        if processes.is_main:
            run.save_backbone(state.teacher.backbone.state_dict(), epoch)
            run.save_checkpoint({**state.state_dict(), "rng": rng, "epoch": epoch, "step": step,
                                 "wall_s": wall_s + time.perf_counter() - started})
        last_saved = f"{run.checkpoint_path} (epoch {epoch}, step {step})"

    if start_epoch == 0:
        if processes.is_main:
            run.save_backbone(state.teacher.backbone.state_dict(), 0)
        evaluate(0)  # the random initialisation: the baseline the k-NN curve starts from
    warned_epoch, last_time, last_step = -1, time.perf_counter(), step
    epoch_started = time.perf_counter()

    # ---- the loop ----
    for epoch in range(start_epoch, epochs):
        loader.sampler.set_epoch(epoch)
        data.train_views.set_epoch(epoch)
        for views, _ in loader:
            result = state.forward(views, epoch)
            loss = processes.mean(result.loss.detach()).item()
            if not math.isfinite(loss):  # stop before this step changes any weight
                raise NonFiniteLossError(_non_finite_message(loss, epoch, step + 1, last_saved))
            state.update(result.loss, epoch, step)
            step += 1
            bar.update()
            if step % settings["log_every"] and step != total_steps:
                continue
            # ---- log (metrics averaged over processes) ----
            stats = processes.mean(torch.stack([result.teacher_entropy, result.student_entropy, result.kl,
                                                result.teacher_usage, result.teacher_information]))
            now = time.perf_counter()
            images_per_s = (step - last_step) * settings["batch_size"] / (now - last_time)
            last_time, last_step = now, step
            if processes.is_main:
                record = step_record(state, epoch, step, loss, stats.tolist(), images_per_s)
                run.append_metrics(record)
                bar.set_postfix(loss=f"{loss:.3f}", img_s=f"{images_per_s:.1f}")
                warning = collapse_message(record["teacher_entropy"], record["teacher_information"], settings["out_dim"])
                if warning and warned_epoch != epoch:
                    warnings.warn(f"epoch {epoch}, step {step}: {warning}", CollapseWarning, stacklevel=2)
                    warned_epoch = epoch
        done = epoch + 1
        if processes.is_main:
            now = time.perf_counter()
            run.append_metrics({"kind": "epoch", "epoch": done, "step": step, "epoch_s": now - epoch_started,
                                "wall_s": wall_s + now - started})
        if done % settings["knn_every"] == 0 or done == epochs:
            evaluate(done)
        if done % settings["checkpoint_every"] == 0 or done == epochs:
            save(done)
        epoch_started = time.perf_counter()
    bar.close()
    return run.path


def step_record(state: DINOTraining, epoch: int, step: int, loss: float, entropies: list[float],
                images_per_s: float) -> dict:
    """One ``metrics.jsonl`` line for the step just taken (``step`` counts steps done)."""
    teacher_entropy, student_entropy, kl, teacher_usage, teacher_information = entropies
    schedules = state.schedules
    return {
        "kind": "train", "epoch": epoch, "step": step, "loss": loss,
        "lr": float(schedules.lr[step - 1]), "weight_decay": float(schedules.weight_decay[step - 1]),
        "teacher_temp": float(schedules.teacher_temp[epoch]), "momentum": float(schedules.momentum[step - 1]),
        "center_norm": state.loss_fn.center.norm().item(),
        "teacher_entropy": teacher_entropy, "student_entropy": student_entropy, "kl": kl,
        "teacher_usage": teacher_usage, "teacher_information": teacher_information,
        "images_per_s": images_per_s,
    }


def evaluate_knn(backbone: torch.nn.Module, data: Data, settings: dict, device: torch.device) -> dict:
    """Weighted k-NN accuracy of ``backbone``'s features, held-out images against training
    images: ``top1``/``top5`` on the CLS token (DINO's evaluation), ``top1_mean``/``top5_mean``
    on mean-pooled patch tokens; and ``n_eff``/``n_eff_mean``, the effective dimension
    (EED's :math:`N_\\mathrm{eff}`) of the held-out features of each kind."""
    workers = settings["num_workers"]
    extract = dict(device=device, num_workers=workers, progress=False, pools=POOLS)
    train_features, train_labels = extract_features(backbone, data.knn_train, **extract)
    eval_features, eval_labels = extract_features(backbone, data.knn_eval, **extract)
    record = {}
    for pool in POOLS:
        accuracy = knn_accuracy(train_features[pool], train_labels, eval_features[pool], eval_labels,
                                data.num_classes, settings["knn_k"], settings["knn_temperature"])
        suffix = "" if pool == "cls" else f"_{pool}"
        record.update({f"{name}{suffix}": value for name, value in accuracy.items()})
        # How many directions the held-out features spread over: dimensional collapse shows here first.
        record[f"n_eff{suffix}"] = effective_encoding_dimension(eval_features[pool].double())
    return {**record, "k": settings["knn_k"], "n_train": len(train_labels), "n_eval": len(eval_labels)}


def _non_finite_message(value: float, epoch: int, step: int, last_saved: str | None) -> str:
    where = f"the last good checkpoint is {last_saved}" if last_saved else "no checkpoint had been written yet"
    return (
        f"The DINO loss became {value} at epoch {epoch}, step {step}; training stopped before that step "
        f"changed any weight, and {where}. Lower the learning rate (--lr) or the teacher temperature "
        "(--teacher-temp), or train in fp32 (--precision fp32), then continue with --resume."
    )
