"""The set-up every chapter opens with: preset, seed, device, data root, all printed."""
from __future__ import annotations

import inspect
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from .machine import DEFAULT_THREADS, use_free_cores
from .files import DATA_ENV_VAR, data_root, display_path
from .presets import ENV_VAR, PRESETS, Preset, get_preset, resolve_device
from .book.records import source_fingerprint
from .seeding import seed_all


@dataclass(frozen=True)
class ChapterSetup:
    """What :func:`setup_chapter` chose: the preset, the device and the data folder."""

    preset: Preset
    device: torch.device
    data_root: Path

    def reproduce_folder(self) -> Path:
        """Where the chapters that call ``reproduce`` keep their runs: ``<data root>/reproduce/<preset>``,
        for an illustrative preset ``ci-<fingerprint>`` of the package's source, so that runs made
        by other code are never loaded."""
        fingerprint = f"-{source_fingerprint()}" if self.preset.illustrative else ""
        return self.data_root / "reproduce" / f"{self.preset.name}{fingerprint}"

    def remove_stale_runs(self) -> None:
        """Remove the illustrative preset's run folders that other versions of the code made."""
        if not self.preset.illustrative:
            return
        folder = self.reproduce_folder()
        for stale in folder.parent.glob(f"{self.preset.name}-*"):
            if stale != folder and stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)


def setup_chapter(preset: str | None = None) -> ChapterSetup:
    """Choose the preset (argument, else ``$IB_TUTORIAL_PRESET``, else ``ci``), seed everything,
    pick the device, give PyTorch the free CPU cores (:func:`~ib_tutorial.machine.use_free_cores`),
    print all of it with how to change it, and :meth:`~ChapterSetup.remove_stale_runs`."""
    chosen = get_preset(preset)
    seed_all(chosen.seed)
    device = resolve_device(chosen)
    root = data_root()
    others = ", ".join(name for name in PRESETS if name != chosen.name)
    print(f"preset : {chosen.name} ({chosen.description})")
    print(f"         change with `export {ENV_VAR}=<name>` before starting Jupyter; others: {others}")
    print(f"seed   : {chosen.seed}")
    print(f"device : {device}")
    threads, busy = use_free_cores()
    others_busy = "" if busy is None else f"; {busy:.1f} busy with other work as the chapter started"
    print(f"threads: {threads} of {DEFAULT_THREADS} CPU cores{others_busy} (torch.set_num_threads to change)")
    print(f"data   : {display_path(root)} (set {DATA_ENV_VAR} to move it)")
    setup = ChapterSetup(chosen, device, root)
    setup.remove_stale_runs()
    return setup


def show_source(obj):
    """Display the source of a package function or class, so the book shows no copy that can drift."""
    from IPython.display import Code  # Jupyter's own package: only notebooks call this

    return Code(inspect.getsource(obj), language="python")


def glue_number(name: str, value: float | str) -> None:
    """Store ``value`` under ``name`` for the chapter's text (MyST-NB's ``glue``, shown by the
    ``glue:text`` role); without MyST-NB (e.g. in Colab) nothing is stored."""
    try:
        from myst_nb import glue
    except ImportError:
        return
    glue(name, value, display=False)
