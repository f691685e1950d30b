"""DataLoader worker processes leave stopping to the main process.

A SIGTERM or Ctrl-C sent to the process group reaches the loader's workers too, and PyTorch
then fails the step under way before the run can checkpoint (:mod:`ib_tutorial.training.stopping`).
Workers that ignore both signals serve batches until the main process closes its loader.
"""
from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def ignore_stop_signals(worker_id: int) -> None:
    """A ``worker_init_fn`` for every ``DataLoader`` with workers: SIGINT and SIGTERM are
    ignored in the worker (replacing PyTorch's handlers). Workers need no seeding of their own:
    the views are drawn from a generator seeded by (seed, epoch, image index)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
