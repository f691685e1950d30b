"""The training loop (:func:`train`): resumable epochs, checkpoints, and stopping cleanly on a signal.

A step is the objective's ``forward``, then ``update`` unless the loss is not finite. Under
``torchrun`` there is one DDP process per device; only rank 0 writes files. Checkpoints carry
every random state (:mod:`ib_tutorial.seeding`), so a resumed run continues exactly as an
uninterrupted one. SIGTERM or SIGINT stops the run after the step under way, with a checkpoint
there and :class:`TrainingStopped`; a second signal stops at once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import signal
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ..command_line import train_command
from ..files import display_path
from ..machine import STOP_SIGNALS
from ..measure.knn import evaluate_knn
from ..presets import PRESETS, Preset, get_preset
from ..seeding import rng_state, seed_all, set_rng_state
from .data import TrainingData, build_data, build_loader
from .distributed import Processes, restarted
from .objective import Objective
from .run_config import RunConfig, default_run_dir
from .runs import RunDirectory, check_disk_space, run_writes
from .schedules import ScheduleWarning, Schedules, phase_notes, phase_warnings


class TrainingStopped(KeyboardInterrupt):
    """The run stopped on request after writing a checkpoint; ``str()`` says how to resume."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.signal_number = signal_number


class StopRequests:
    """While open (``with``), SIGINT and SIGTERM set :attr:`received` instead of ending the
    process; a second one raises ``KeyboardInterrupt``. Only the main thread installs handlers."""

    def __init__(self):
        self.received: int | None = None
        self._previous: dict = {}

    def __enter__(self) -> "StopRequests":
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._handle) for number in STOP_SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, _frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt(f"second {signal.Signals(number).name}: stopping without a checkpoint")
        self.received = number

    def requested(self, processes: Processes) -> bool:
        """Whether any process received a stop signal, so that all stop at the same step."""
        return bool(processes.mean(torch.tensor([float(self.received is not None)])).item() > 0)


def resume_command(config: RunConfig, preset: Preset, out: os.PathLike, root: os.PathLike | None) -> str:
    """The command line that continues this run, with every setting that differs from the preset's."""
    changed = {"seed": config.seed} if config.seed != preset.seed else {}
    for settings, reference in ((config.view, preset.view(config.dataset)), (config.train, preset.train)):
        changed |= {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
                    if getattr(settings, f.name) != getattr(reference, f.name)}
    changed.pop("num_workers", None)  # resolved from the machine when the preset leaves it open
    return train_command(config.dataset, config.preset, out, config.dataset_options, root, changed,
                         config.world_size, resume=True)


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stopped before the bad step changed any weight."""


class CollapseWarning(UserWarning):
    """The teacher's output distribution is close to uniform or to one-hot."""


def train(dataset: str, preset: str | Preset | None = None, out: str | os.PathLike | None = None, resume: bool = False,
          root: str | os.PathLike | None = None, download: bool = False, dataset_options: dict | None = None,
          progress: bool = True, **overrides) -> Path:
    """Train a ViT with DINO (or the ``objective`` override's) on ``dataset``; return the run directory.

    ``preset`` defaults to ``$IB_TUTORIAL_PRESET``, else ``ci``; ``out`` to
    ``<data root>/runs/<dataset>-<preset>``. ``resume`` (implied after ``torchrun
    --max-restarts`` restarts) continues from the folder's checkpoint, if any. ``overrides``:
    any :class:`~ib_tutorial.presets.TrainSettings` or :class:`~ib_tutorial.presets.ViewSettings`
    field, ``seed`` or ``device``. Raises :class:`NonFiniteLossError`, :class:`TrainingStopped`
    (its message resumes the run), :class:`~ib_tutorial.training.runs.CheckpointError` and
    :class:`~ib_tutorial.training.runs.RunLockedError`.
    """
    preset = preset if isinstance(preset, Preset) else get_preset(preset)
    config = RunConfig.resolve(dataset, preset, overrides, dataset_options)
    if config.train.threads:
        torch.set_num_threads(config.train.threads)
    processes = Processes.start(config.device)
    try:
        device = processes.device(config.device)
        run = RunDirectory(out if out is not None else default_run_dir(dataset, preset.name))
        resume_hint = resume_command(config, preset, run.path, root)
        with run.lock() if processes.is_main else contextlib.nullcontext(), StopRequests() as stop:
            return _train(config, run, resume or restarted(), root, download, progress, processes, device, stop, resume_hint)
    finally:
        processes.stop()


def _train(config: RunConfig, run: RunDirectory, resume: bool, root, download: bool, progress: bool,
           processes: Processes, device: torch.device, stop: StopRequests, resume_hint: str) -> Path:
    if run.exists() and not resume:
        raise FileExistsError(f"{run.path} already holds a run; pass --resume to continue it or --out to start a new one.")
    seed_all(config.seed)  # the same data and initial weights in every process
    data = build_data(config, root, download, device, progress and processes.is_main)
    loader = build_loader(data, config, processes, device)
    config = dataclasses.replace(config, steps_per_epoch=len(loader), train_images_used=len(data.train_views),
                                 train_data=data.train_record)
    if run.exists():
        saved = run.read_config()
        config.check_resumable(saved, run.path)
        config = dataclasses.replace(config, profile=saved.profile)  # profiled as it was set up to be
    schedules = Schedules.of(config.train, len(loader), config.objective.phase_floors)  # once, for the whole run
    state = config.objective(config.train, config.view, config.precision, schedules, device, data.num_classes)
    seed_all(config.seed + processes.rank)  # from here on, each process its own random stream
    start = _restore(run, state, processes) if resume else Position()
    if processes.is_main:
        check_disk_space(run.path, run_writes(state, config, start.epoch))  # before anything is written
        if run.exists():  # drop what the interrupted run logged after its last checkpoint, and its unfinished files
            run.truncate_metrics(start.step if start.step else -1)
            run.remove_unfinished_files()
            tqdm.write(f"resuming {display_path(run.path)} at epoch {start.epoch}, step {start.step}")
        run.write_config(config)
        if not start.step and config.objective.phase_floors:
            _announce_phases(config, schedules)
    if processes.distributed:
        state.distribute()
    recorder = RunRecorder(run, config, state, data, processes, device, start, progress)

    step = start.step
    fixed = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0  # weights and optimiser, before a step
    for epoch in range(start.epoch, config.train.epochs):
        first = start.batch if epoch == start.epoch else 0  # batches a mid-epoch checkpoint had done
        loader.sampler.set_epoch(epoch)
        loader.sampler.skip = first * config.batch_per_process
        data.train_views.set_epoch(epoch)
        for batch, (views, labels) in enumerate(loader, start=first):
            try:
                result = state.forward(views, labels, epoch)
                loss = processes.mean(result.loss.detach()).item()
                if not math.isfinite(loss):  # stop before this step changes any weight
                    raise NonFiniteLossError(_non_finite_message(loss, epoch, step + 1, recorder.last_saved))
                state.update(result.loss, epoch, step)
            except torch.OutOfMemoryError as error:
                raise out_of_memory(error, config.batch_per_process, processes.world_size, device, fixed) from None
            step += 1
            recorder.step_done(result, loss, epoch, step)
            if stop.requested(processes):
                recorder.save(epoch, step, batch + 1)
                raise TrainingStopped(_stopped_message(stop.received, recorder.last_saved, resume_hint),
                                      stop.received or signal.SIGTERM)
        recorder.epoch_done(epoch + 1, step)
    recorder.bar.close()
    return run.path


@dataclass(frozen=True)
class Position:
    """Where a run stands: ``batch`` batches into ``epoch``, ``step`` steps and ``wall_s`` done in all."""

    epoch: int = 0
    step: int = 0
    wall_s: float = 0.0
    batch: int = 0


def _restore(run: RunDirectory, state: Objective, processes: Processes) -> Position:
    """Load the run's last checkpoint into ``state`` and this process's random generators."""
    checkpoint = run.load_checkpoint()
    if checkpoint is None:
        return Position()
    state.load_state_dict(checkpoint)
    rng = checkpoint["rng"]
    set_rng_state(rng[processes.rank] if len(rng) == processes.world_size else rng[0])
    return Position(checkpoint["epoch"], checkpoint["step"], checkpoint.get("wall_s", 0.0), checkpoint.get("batch", 0))


class RunRecorder:
    """What a run writes as it goes (on rank 0): metrics, collapse warnings, k-NN evaluations,
    checkpoints and the progress bar. A new run starts by recording its random initialisation."""

    def __init__(self, run: RunDirectory, config: RunConfig, state: Objective, data: TrainingData,
                 processes: Processes, device: torch.device, start: Position, progress: bool):
        self.run, self.settings, self.state = run, config.train, state
        self.data, self.processes, self.device = data, processes, device
        self.wall_before, self.started = start.wall_s, time.perf_counter()
        self.last_saved = f"{run.checkpoint_path} (epoch {start.epoch}, step {start.step})" if start.step else None
        self.warned_epoch, self.rate_since = -1, (time.perf_counter(), start.step)
        self.epoch_started = time.perf_counter()
        self.total_steps = config.train.epochs * config.steps_per_epoch
        self.bar = tqdm(total=self.total_steps, initial=start.step, desc=f"{config.train.objective} {config.dataset}", unit="step",
                        disable=not (progress and processes.is_main), dynamic_ncols=True)
        if start.step == 0:
            if processes.is_main:
                run.save_backbone(state.backbone.state_dict(), 0)
            self.evaluate(0, 0)  # the random initialisation: the baseline the k-NN curve starts from

    def wall_s(self) -> float:
        return self.wall_before + time.perf_counter() - self.started

    def step_done(self, result, loss: float, epoch: int, step: int) -> None:
        self.bar.update()
        if step % self.settings.log_every and step != self.total_steps:
            return
        statistics = self.state.statistics(result)
        averaged = self.processes.mean(torch.stack(list(statistics.values())))
        since, since_step = self.rate_since
        now = time.perf_counter()
        images_per_s = (step - since_step) * self.settings.batch_size / (now - since)
        self.rate_since = (now, step)
        if not self.processes.is_main:
            return
        record = {"kind": "train", "epoch": epoch, "step": step, "loss": loss, **self.state.step_settings(epoch, step),
                  **dict(zip(statistics, averaged.tolist())), "images_per_s": images_per_s}
        self.run.append_metrics(record)
        self.bar.set_postfix(loss=f"{loss:.3f}", img_s=f"{images_per_s:.1f}")
        warning = self.state.collapse_warning(record)
        if warning and self.warned_epoch != epoch:
            warnings.warn(f"epoch {epoch}, step {step}: {warning}", CollapseWarning, stacklevel=3)
            self.warned_epoch = epoch

    def epoch_done(self, done: int, step: int) -> None:
        """After ``done`` epochs: the epoch's wall time, then k-NN and a checkpoint when due."""
        if self.processes.is_main:
            self.run.append_metrics({"kind": "epoch", "epoch": done, "step": step,
                                     "epoch_s": time.perf_counter() - self.epoch_started, "wall_s": self.wall_s()})
        last = done == self.settings.epochs
        if done % self.settings.knn_every == 0 or last:
            self.evaluate(done, step)
        if done % self.settings.checkpoint_every == 0 or last:
            self.save(done, step)
        self.epoch_started = time.perf_counter()

    def evaluate(self, epoch: int, step: int) -> None:
        if self.processes.is_main:
            accuracy = evaluate_knn(self.state.backbone, self.data.knn_train, self.data.knn_eval,
                                    self.data.num_classes, self.settings.knn_k, self.settings.knn_temperature,
                                    self.device, self.settings.num_workers)
            record = {"kind": "knn", "epoch": epoch, "step": step, **accuracy, "wall_s": self.wall_s()}
            self.run.append_metrics(record)
            self.bar.write(f"epoch {epoch}: k-NN top-1 {record['top1']:.1f}% on the CLS token, "
                           f"{record['top1_mean']:.1f}% on mean-pooled patch tokens ({record['wall_s'] / 60:.1f} min)")
        self.processes.barrier()

    def save(self, epoch: int, step: int, batch: int = 0) -> None:
        """A checkpoint ``batch`` batches into ``epoch`` (at 0, the epoch's teacher backbone too)."""
        rng = self.processes.gather(rng_state())  # every process's generators, so each resumes its own
        if self.processes.is_main:
            if batch == 0:
                self.run.save_backbone(self.state.backbone.state_dict(), epoch)
            self.run.save_checkpoint({**self.state.state_dict(), "rng": rng, "epoch": epoch, "step": step,
                                      "batch": batch, "wall_s": self.wall_s()})
        self.last_saved = f"{self.run.checkpoint_path} (epoch {epoch}, step {step})"


def _announce_phases(config: RunConfig, schedules: Schedules) -> None:
    """The phases a floor lengthened, and warnings (not for an illustrative tier) for those too short."""
    for note in phase_notes(config.train, schedules):
        tqdm.write(note)
    tier = PRESETS.get(config.preset)
    if tier is None or not tier.illustrative:
        for problem in phase_warnings(config.train, schedules):
            warnings.warn(problem, ScheduleWarning, stacklevel=4)


def _stopped_message(number: int | None, last_saved: str, resume_hint: str) -> str:
    name = signal.Signals(number).name if number else "a stop request"
    return f"{name} received: training stopped after writing {last_saved}. Resume it with\n  {resume_hint}"


def _non_finite_message(value: float, epoch: int, step: int, last_saved: str | None) -> str:
    where = f"the last good checkpoint is {last_saved}" if last_saved else "no checkpoint had been written yet"
    return (f"The loss became {value} at epoch {epoch}, step {step}; training stopped before that step "
            f"changed any weight, and {where}. Lower the learning rate (--lr) or the teacher temperature "
            "(--teacher-temp), or train in fp32 (--precision fp32), then continue with --resume.")


class TrainingOutOfMemory(RuntimeError):
    """A training step ran out of memory; ``str()`` names the batch and what to try."""


def largest_batch(batch: int, fixed: int, peak: int, tried: int, total: int) -> int:
    """The largest batch that fits in ``total`` bytes if the memory above ``fixed`` grows with
    the batch: the failed step held ``peak`` and asked for ``tried`` more."""
    per_image = max(1, peak + tried - fixed) / batch
    return max(0, int((total - fixed) // per_image))


def tried_bytes(error: BaseException) -> int:
    """The allocation PyTorch's message says failed ("Tried to allocate 2.00 GiB"), 0 if none."""
    found = re.search(r"Tried to allocate ([\d.]+) (B|KiB|MiB|GiB|TiB)", str(error))
    if not found:
        return 0
    return int(float(found.group(1)) * 1024 ** ["B", "KiB", "MiB", "GiB", "TiB"].index(found.group(2)))


def out_of_memory(error: BaseException, batch: int, world_size: int, device: torch.device, fixed: int) -> TrainingOutOfMemory:
    total = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    if total:
        fits = largest_batch(batch, fixed, peak, tried_bytes(error), total)
        estimate = (f" About {fits} images per process would fit in its {total / 2**30:.0f} GiB (an estimate from the "
                    f"{peak / 2**30:.1f} GiB the step held and the {tried_bytes(error) / 2**30:.2f} GiB it asked for).")
    else:
        estimate = ""
    global_batch = batch * world_size
    return TrainingOutOfMemory(
        f"{device} ran out of memory in a training step of {batch} images per process (global batch {global_batch})."
        f"{estimate} Lower --batch-size (the global batch; e.g. --batch-size {max(world_size, global_batch // 2)}), "
        "or use more processes (torchrun), then start again or --resume from the last checkpoint.")
