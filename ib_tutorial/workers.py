"""DataLoader worker processes leave stopping to the main process.

``timeout``, Slurm and Kubernetes send SIGTERM to a whole process group, and Ctrl-C in a
terminal sends SIGINT to it, so the loader's workers receive the signal too. PyTorch's
workers end on a SIGTERM that their parent did not send, and the loader then fails the
step under way ("DataLoader worker ... is killed by signal") before the run can write its
checkpoint (:mod:`ib_tutorial.training.stopping`). Workers that ignore both signals keep
serving batches while the main process finishes the step and checkpoints; it ends them
when its loader closes, and they end by themselves if it dies.
"""
from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def ignore_stop_signals(worker_id: int) -> None:
    """A ``worker_init_fn`` for every ``DataLoader`` with workers: SIGINT and SIGTERM are
    ignored in the worker (it runs after PyTorch installs its own handlers, so it replaces
    them). Workers need no seeding of their own here: PyTorch seeds ``random`` and
    ``torch`` in each, and the training views are drawn from a generator seeded by (seed,
    epoch, image index), so a batch does not depend on which worker made it."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
