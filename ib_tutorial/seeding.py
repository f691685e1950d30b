"""Random state: seeding every generator, carrying it through a checkpoint (so a resumed run
draws exactly what an uninterrupted one would), and seeded subsets."""
from __future__ import annotations

import random

import numpy as np
import torch


def seed_all(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (the CPU and every GPU)."""
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
    """Restore what :func:`rng_state` saved."""
    random.setstate(state["python"])
    name, keys, *rest = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), *rest))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def subset_indices(size: int, count: int | None, seed: int) -> list[int]:
    """``count`` distinct indices of ``range(size)``, a fixed function of ``seed`` (all when ``count`` is None)."""
    if count is None or count >= size:
        return list(range(size))
    generator = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(size, generator=generator)[:count].tolist())


def epoch_indices(size: int, count: int | None, seed: int) -> list[int]:
    """The images of one training epoch, as :func:`subset_indices`; a ``count`` above ``size``
    takes every image as often as fits, then a subset for the rest."""
    if count is None or count <= size:
        return subset_indices(size, count, seed)
    return list(range(size)) * (count // size) + subset_indices(size, count % size, seed)
