"""The committed results the book reads, and what each is for: the one place a bundle's or a
run's folder name is written. A chapter asks for an entry by its key
(:func:`stored_entry`), never by a folder name typed in a notebook.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..paths import stored_results


@dataclass(frozen=True)
class Entry:
    """One committed bundle (or one run inside it) the book reads.

    Attributes:
        key: the name chapters ask for.
        folder: the path under ``results/``.
        purpose: what the book reads it for, in one line.
        chapters: the chapters (notebook stems) that read it.
    """

    key: str
    folder: str
    purpose: str
    chapters: tuple[str, ...]


ENTRIES: tuple[Entry, ...] = (
    # --- the Results chapters and `reproduce`
    Entry("walkthrough", "laptop-tier-48", "the bundle `reproduce` walks through end to end: the laptop tier "
          "at 48 epochs on the Tiny ImageNet and DTD subsets, two seeds each", ("reproduce",)),
    Entry("gpu-run", "gpu-paper-subsets", "the one committed GPU run: DINO ViT-S at the paper recipe on the Tiny "
          "ImageNet subset, cut to 12 epochs, which did not learn", ("reproduce",)),
    Entry("floors-without", "laptop-dino-48", "the laptop recipe before the warm-up and freeze floors, 48 epochs: "
          "what the floors are set against", ("reproduce",)),
    Entry("worlds-raw-patches", "laptop-real", "the synthetic worlds' raw-patch N_eff, measured by the laptop "
          "tier's first real-image bundle", ("data",)),
    # --- DINO and the lab notes' recipe search
    # --- the knob and its lab notes
    # --- claims, trained networks and the intro
    # --- EED, converged networks and beyond the paper
)


def manifest_entry(key: str) -> Entry:
    """The entry named ``key``; a clear error lists the keys there are."""
    for entry in ENTRIES:
        if entry.key == key:
            return entry
    raise KeyError(f"no committed result is named {key!r}; the manifest has: {', '.join(e.key for e in ENTRIES)}")


def stored_entry(key: str) -> Path:
    """The folder of entry ``key`` under the repository's ``results/`` (check ``.exists()``:
    an installed package has no committed results)."""
    return stored_results(manifest_entry(key).folder)
