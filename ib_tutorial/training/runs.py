"""The on-disk layout of a training run, and how to read one back.

A run directory holds::

    config.json                 every resolved setting of the run
    metrics.jsonl               one JSON record per line: "train" every few steps, "epoch"
                                (its wall time) after each epoch, "knn" after each evaluation
    checkpoint.pt               the latest full training state
    checkpoint-previous.pt      the one before it, in case the latest cannot be read
    run.lock                    held by the process training into the folder
    backbones/teacher-epoch0000.pt, ...
                                the teacher backbone at initialisation and every checkpoint

Every file is written to a temporary name and renamed (a last ``metrics.jsonl`` line cut short
is ignored); one process at a time holds the OS lock on ``run.lock``, which the system releases
however its holder ends.
"""
from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import re
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

import torch

try:  # POSIX
    import fcntl
except ImportError:  # Windows: byte-range locks from the C runtime
    fcntl = None
    import msvcrt

from ..compact import read_text
from ..files import DiskFullError, atomic_write, write_json_atomic
from ..models import build_vit
from .run_config import RunConfig

BACKBONE_PATTERN = re.compile(r"teacher-epoch(\d{4,})\.pt")


class CheckpointError(RuntimeError):
    """A checkpoint cannot be read: truncated, corrupted, or not a checkpoint of this package."""


class RunLockedError(RuntimeError):
    """Another process is training into the same run directory."""


class RunDirectory:
    """Paths and atomic reads and writes of one run's files."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser()
        self.config_path = self.path / "config.json"
        self.metrics_path = self.path / "metrics.jsonl"
        self.checkpoint_path = self.path / "checkpoint.pt"
        self.previous_checkpoint_path = self.path / "checkpoint-previous.pt"
        self.lock_path = self.path / "run.lock"
        self.backbones = self.path / "backbones"

    def exists(self) -> bool:
        """Whether a run was started here (wrote its configuration)."""
        return self.config_path.exists()

    def write_config(self, config: RunConfig) -> None:
        write_json_atomic(self.config_path, config.to_dict())

    def read_config(self) -> RunConfig:
        if not self.exists():
            raise FileNotFoundError(f"{self.path} is not a training run (no config.json); train one with `ib-tutorial train`.")
        return RunConfig.from_dict(json.loads(self.config_path.read_text()))

    def append_metrics(self, record: dict) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with self.metrics_path.open("a") as file:
            file.write(json.dumps(record) + "\n")

    def read_metrics(self, kind: str | None = None) -> list[dict]:
        """All records, or those of one ``kind``, leaving out a last line a kill cut short."""
        if not self.metrics_path.exists():
            return []
        lines = read_text(self.metrics_path).split("\n")[:-1]
        records = [json.loads(line) for line in lines if line.strip()]
        return [r for r in records if kind is None or r["kind"] == kind]

    def truncate_metrics(self, last_step: int) -> None:
        """Drop the records after step ``last_step``, which a resumed run writes again."""
        kept = [r for r in self.read_metrics() if r["step"] <= last_step]
        text = "".join(json.dumps(r) + "\n" for r in kept)
        atomic_write(self.metrics_path, lambda f: f.write(text.encode()))

    def save_checkpoint(self, state: dict) -> None:
        """Write ``state`` as the latest checkpoint; the latest so far becomes the previous one."""
        staged = self.path / ".checkpoint-next.pt"
        try:
            atomic_write(staged, lambda f: torch.save(state, f))  # complete before anything is renamed
        except DiskFullError as error:
            raise DiskFullError(errno.ENOSPC, f"No space left on the device to write the checkpoint "
                                              f"{self.checkpoint_path}; the checkpoints on disk are unchanged. Free "
                                              "some space and continue with --resume.") from error
        if self.checkpoint_path.exists():
            os.replace(self.checkpoint_path, self.previous_checkpoint_path)
        os.replace(staged, self.checkpoint_path)

    def load_checkpoint(self) -> dict | None:
        """The latest checkpoint (the previous one when a kill came between their renames), or
        ``None``; :class:`CheckpointError` when it cannot be read, saying what to do."""
        path = self.checkpoint_path
        if not path.exists():
            path = self.previous_checkpoint_path
            if not path.exists():
                return None
            print(f"{self.checkpoint_path.name} is missing; resuming from {path}")
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # truncated zip, bad pickle, a refused object: all unreadable
            raise CheckpointError(self._unreadable_message(path, error)) from None

    def _unreadable_message(self, path: Path, error: Exception) -> str:
        reason = f"{path} cannot be read ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
        previous = self.previous_checkpoint_path
        if path != previous and previous.exists():
            try:
                epoch = torch.load(previous, map_location="cpu", weights_only=True)["epoch"]
            except Exception:
                return f"{reason}, and neither can the previous one, {previous}. Start a new run with another --out."
            return (f"{reason}. The previous checkpoint, {previous} (epoch {epoch}), can be: move the broken one "
                    f"aside (`mv {path} {path}.broken`) and run the same command with --resume again; training "
                    f"continues from epoch {epoch}.")
        return f"{reason}, and no earlier checkpoint is left. Start a new run with another --out."

    @contextlib.contextmanager
    def lock(self):
        """Hold the run's lock (else :class:`RunLockedError`). Unless a run started here, the lock
        file and the folders this made are removed again."""
        made = [folder for folder in (self.path, *self.path.parents) if not folder.exists()]
        lock_was_there, run_was_there = self.lock_path.exists(), self.exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(self.lock_path, "a+") as file:
                if not _lock(file):
                    raise RunLockedError(
                        f"{self.path} is in use by another training process ({_holder(file)}); "
                        "wait for it to finish, or train into another --out.")
                file.seek(0)
                file.truncate()
                since = datetime.datetime.now().isoformat(timespec="seconds")
                file.write(f"pid {os.getpid()} on {socket.gethostname()}, since {since}\n")
                file.flush()
                try:
                    yield
                finally:
                    if not lock_was_there and (run_was_there or not self.exists()):
                        # Before unlocking, so that no other process can hold it meanwhile
                        # (Windows keeps a file that is open, and with it the lock file).
                        with contextlib.suppress(PermissionError):
                            self.lock_path.unlink(missing_ok=True)
                    _lock(file, take=False)
        finally:
            for folder in made:  # the deepest first; one that holds anything now is kept
                with contextlib.suppress(OSError):
                    folder.rmdir()

    def remove_unfinished_files(self) -> None:
        """Delete the temporary files and staged checkpoint a killed write left."""
        for leftover in [*self.path.glob(".*.tmp"), *self.backbones.glob(".*.tmp"), self.path / ".checkpoint-next.pt"]:
            leftover.unlink(missing_ok=True)

    def save_backbone(self, state_dict: dict, epoch: int) -> None:
        atomic_write(self.backbone_path(epoch), lambda f: torch.save(state_dict, f))

    def backbone_path(self, epoch: int) -> Path:
        return self.backbones / f"teacher-epoch{epoch:04d}.pt"

    def backbone_epochs(self) -> list[int]:
        """Epochs with a saved teacher backbone (0: the random initialisation)."""
        if not self.backbones.exists():
            return []
        found = (BACKBONE_PATTERN.fullmatch(p.name) for p in self.backbones.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def load_backbone(self, epoch: int | None = None, device: str | torch.device = "cpu") -> torch.nn.Module:
        """The teacher ViT of ``epoch`` (default: the latest saved), in eval mode."""
        epochs = self.backbone_epochs()
        if not epochs:
            raise FileNotFoundError(f"No backbones saved under {self.backbones}; has the run started?")
        chosen = epochs[-1] if epoch is None else epoch
        if chosen not in epochs:
            raise FileNotFoundError(f"No backbone for epoch {chosen} in {self.backbones}; saved epochs: {epochs}")
        config = self.read_config()
        with torch.device("meta"):  # no random initialisation to overwrite: a third of a second a load
            model = build_vit(config.model["arch"], config.view.img_size, config.view.patch_size)
        state = torch.load(self.backbone_path(chosen), map_location="cpu", weights_only=True)
        model.load_state_dict(state, assign=True)
        return model.to(device).eval()


def _lock(file, take: bool = True) -> bool:
    """Take the exclusive lock of the open ``file`` without waiting (False if another process
    holds it), or release it."""
    try:
        if fcntl is not None:
            fcntl.flock(file, (fcntl.LOCK_EX | fcntl.LOCK_NB) if take else fcntl.LOCK_UN)
        else:
            file.seek(0)
            msvcrt.locking(file.fileno(), msvcrt.LK_NBLCK if take else msvcrt.LK_UNLCK, 1)
    except OSError:  # BlockingIOError on POSIX, PermissionError on Windows
        if not take:
            raise
        return False
    return True


def _holder(file) -> str:
    """What the lock's holder wrote into the file (Windows may refuse to show a locked file)."""
    try:
        file.seek(0)
        return file.read().strip() or "unknown"
    except OSError:
        return "unknown"


@dataclass(frozen=True)
class RunWrites:
    """What a run will write from here to its end, in bytes (``backbones``: how many)."""

    checkpoint: int
    backbone: int
    backbones: int

    @property
    def total(self) -> int:
        return 3 * self.checkpoint + self.backbones * self.backbone  # latest, previous and the one being written


def _bytes(state: dict) -> int:
    return sum(value.numel() * value.element_size() for value in state.values() if isinstance(value, torch.Tensor))


def saved_epochs(first: int, epochs: int, every: int) -> list[int]:
    """The epochs from ``first`` on whose teacher backbone a run saves."""
    return [e for e in range(first, epochs + 1) if e % every == 0 or e == epochs]


def run_writes(state, config, start_epoch: int) -> RunWrites:
    """:class:`RunWrites` of a built training ``state``: the checkpoint (its parts and the
    optimiser's two moments of every trainable weight) and the saved backbones."""
    parts = sum(_bytes(part.state_dict()) for part in state.checkpointed().values())
    moments = 2 * sum(p.numel() * p.element_size() for group in state.optimizer.param_groups for p in group["params"]
                      if p.requires_grad)
    first = start_epoch + 1 if start_epoch else 0
    return RunWrites(parts + moments, _bytes(state.backbone.state_dict()),
                     len(saved_epochs(first, config.train.epochs, config.train.checkpoint_every)))


def check_disk_space(folder: Path, writes: RunWrites) -> None:
    """Raise :class:`~ib_tutorial.files.DiskFullError` when ``writes`` do not fit on ``folder``'s disk."""
    existing = next(path for path in [folder, *folder.parents] if path.exists())
    free = shutil.disk_usage(existing).free
    if writes.total > free:
        raise DiskFullError(
            f"The run needs about {writes.total / 1e9:.2f} GB in {folder}: 3 checkpoints of {writes.checkpoint / 1e6:.0f} MB "
            f"(the latest, the previous and the one being written) and {writes.backbones} teacher backbones of "
            f"{writes.backbone / 1e6:.0f} MB, one per saved epoch; {free / 1e9:.2f} GB are free there. Free some space, "
            "choose another --out, or save fewer epochs (a larger --checkpoint-every).")
