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
    Entry("dino-former-tier", "old-laptop-vit-small", "the former laptop tier (ViT-S, synthetic worlds) whose teachers went uniform", ("lab_notes_dino",)),
    Entry("dino-first-recipes", "laptop-recipes", "the first CPU recipe rows a-h, before the floors", ("lab_notes_dino",)),
    Entry("dino-tier-6", "laptop-real", "the laptop tier at 6 epochs on the real subsets and both worlds, before the floors", ("lab_notes_dino",)),
    Entry("dino-tier-48-unfloored", "laptop-dino-48", "the laptop tier for 48 epochs before the floors", ("dino", "lab_notes_dino")),
    Entry("dino-floor-rows", "laptop-dino-recipes", "rows r1-r9: the floors' recipe, one setting changed a row", ("lab_notes_dino",)),
    Entry("dino-floor-reference", "laptop-dino-recipes/r1-base", "r1-base: the reference the floors' rows are read against", ("dino", "lab_notes_dino")),
    Entry("dino-floor-rows-2", "laptop-dino-recipes-2", "rows r10-r11: batches of 64, and DTD", ("lab_notes_dino",)),
    Entry("dino-floor-rows-3", "laptop-dino-recipes-3", "rows r12-r14: the colour rows", ("lab_notes_dino",)),
    Entry("dino-long", "laptop-dino-long", "the floors' recipe for thousands of steps on all 10,000 images", ("dino", "lab_notes_dino")),
    Entry("dino-tier-16", "laptop-tier-16", "the laptop tier with the floors at 16 epochs", ("dino", "lab_notes_dino")),
    Entry("dino-tier-48", "laptop-tier-48", "the laptop tier with the floors at 48 epochs, two seeds on each real subset", ("dino", "lab_notes_dino")),
    Entry("dino-gpu-subsets", "gpu-paper-subsets", "the first GPU run of the paper recipe on the Tiny ImageNet subset", ("dino",)),
    # --- the knob and its lab notes
    Entry("knob-supervised", "laptop-knob-objects",
          "the supervised sweep along the texture knob (six weights, a second seed at both ends) and DINO at its ends "
          "with the tier's views", ("knob", "lab_notes_knob")),
    Entry("knob-dino", "laptop-knob-dino",
          "DINO at the knob's ends with every view's hue drawn anew, a second seed at the texture end, and three "
          "changes of views at the object end", ("knob", "lab_notes_knob")),
    Entry("knob-dino-rows", "laptop-knob-dino-rows",
          "the knob's DINO rows at the object end: colour, grey views, tokens, teacher temperature, learning rate, "
          "tone curves, weight decay and the grey palette", ("lab_notes_knob",)),
    # --- claims, trained networks and the intro
    Entry("supervised-seeds", "laptop-supervised-seeds",
          "the supervised ViT-Tiny of Tiny ImageNet from three seeds, measured in front of its controls",
          ("trained", "claims", "intro")),
    Entry("shuffled-labels-control", "laptop-shuffled-labels",
          "the same recipe and seed trained on shuffled labels: how far training moves a profile without learning",
          ("trained",)),
    Entry("dino-tier-48-seeds", "laptop-tier-48", "DINO's `laptop` tier at 48 epochs, two seeds on each data set",
          ("claims", "intro")),
    Entry("dino-48-epochs", "laptop-dino-48", "DINO's `laptop` tier at 48 epochs of 5,000 images",
          ("claims", "intro")),
    Entry("gpu-dino-paper-recipe", "gpu-paper-subsets", "DINO ViT-S at the `paper` recipe on one GPU",
          ("claims", "intro")),
    # --- EED, converged networks and beyond the paper
    Entry("eed-supervised-seeds", "laptop-supervised-seeds",
          "supervised ViT-Ti seeds that learned, measured every way on three inputs: the level puzzle", ("eed",)),
    Entry("beyond-real", "laptop-real", "the laptop tier's real-image runs: pruning, objective, measurement and width",
          ("beyond",)),
    Entry("beyond-dino-48", "laptop-dino-48", "DINO for 48 epochs, which learned: its last teacher's pruning", ("beyond",)),
    Entry("beyond-tier-48", "laptop-tier-48", "the 48-epoch tier's seeds, which learned: their pruning", ("beyond",)),
    Entry("beyond-supervised-real", "laptop-supervised-real", "the supervised control on real images: its pruning",
          ("beyond",)),
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
