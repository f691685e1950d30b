"""Stopping a training run on request: SIGTERM (a scheduler, ``kill``) or SIGINT (Ctrl-C,
a notebook's interrupt) asks the run to stop after the step under way; it writes a
checkpoint there, mid-epoch if need be, and stops with :class:`TrainingStopped`, whose
message is the exact command that resumes it. A second signal stops at once.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import threading

import torch

from ..command_line import train_command
from ..presets import Preset
from ..workers import STOP_SIGNALS
from .distributed import Processes
from .run_config import RunConfig


class TrainingStopped(KeyboardInterrupt):
    """The run stopped on request after writing a checkpoint; ``str()`` says how to resume."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.signal_number = signal_number


class StopRequests:
    """While open (``with``), SIGINT and SIGTERM set :attr:`received` instead of ending the
    process; a second one raises ``KeyboardInterrupt`` at once. Signal handlers belong to
    the main thread, so elsewhere nothing is installed and the defaults stay."""

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
        if not processes.distributed:
            return self.received is not None
        return bool(processes.mean(torch.tensor([float(self.received is not None)])).item() > 0)


def resume_command(config: RunConfig, preset: Preset, out: os.PathLike, root: os.PathLike | None) -> str:
    """The command line that continues this run: its dataset, preset, folder and every
    setting that differs from the preset's, with ``--resume``."""
    changed = {"seed": config.seed} if config.seed != preset.seed else {}
    changed |= {**_changes(config.view, preset.view(config.dataset)), **_changes(config.train, preset.train)}
    changed.pop("num_workers", None)  # resolved from the machine when the preset leaves it open
    return train_command(config.dataset, config.preset, out, config.dataset_options, root, changed,
                         config.world_size, resume=True)


def _changes(settings, reference) -> dict:
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if getattr(settings, f.name) != getattr(reference, f.name)}
