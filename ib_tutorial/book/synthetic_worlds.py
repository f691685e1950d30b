"""The Data chapter's figures of the synthetic worlds (:mod:`ib_tutorial.data.synthetic`) and of
the probes that say where the label lives (:mod:`ib_tutorial.data.cues`)."""
from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ..data import get_dataset
from ..data.synthetic import shape_class, texture_class
from ..presets import Preset
from .plots import add_caption


def plot_shape_outlines(num_classes: int) -> plt.Figure:
    """The outline :math:`R_k(\\theta)` of each object class, unrotated and unscaled."""
    theta = np.linspace(0, 2 * np.pi, 400)
    fig, axes = plt.subplots(1, num_classes, figsize=(1.6 * num_classes, 2.2), layout="constrained", squeeze=False)
    for k, ax in enumerate(axes[0]):
        radius = shape_class(k).radius(theta)
        ax.fill(radius * np.cos(theta), -radius * np.sin(theta), color="0.3")
        ax.set(aspect="equal", xlim=(-1.7, 1.7), ylim=(-1.7, 1.7), title=f"class {k}")
        ax.axis("off")
    add_caption(fig, f"shape_class(k).radius for k = 0..{num_classes - 1}, unrotated and unscaled",
                what="The object classes' outlines, every one of area pi.")
    return fig


def plot_world_samples(name: str, preset: Preset, columns: int = 8, **options) -> plt.Figure:
    """The first ``columns`` train images of each class of world ``name``, a row a class."""
    settings = preset.worlds
    world = get_dataset(name, "train", img_size=settings.img_size, num_classes=settings.num_classes,
                        size=settings.num_classes * columns, seed=preset.seed, **options)
    fig, axes = plt.subplots(world.num_classes, columns, figsize=(1.1 * columns, 1.1 * world.num_classes + 0.5),
                             layout="constrained", squeeze=False)
    for index in range(len(world)):
        ax = axes[world.label(index), index // world.num_classes]
        ax.imshow(world[index][0])
        ax.set(xticks=[], yticks=[])
    for label, ax in enumerate(axes[:, 0]):
        ax.set_ylabel(world.classes[label].split(" + ")[0], rotation=0, ha="right", va="center", fontsize=9)
    add_caption(fig, f"images generated from (seed {world.seed}, split, index), {world.img_size} px, preset "
                     f"{preset.name}, texture_weight {world.texture_weight}",
                what=f"{name}: the first {columns} train images of each class, one row a class.")
    return fig


def plot_texture_spectra(num_classes: int, size: int = 64) -> plt.Figure:
    """The amplitude spectrum :math:`|F_k|` of each texture class on a ``size`` x ``size``
    grid, zero frequency at the centre."""
    columns = min(5, num_classes)
    rows = -(-num_classes // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.0 * columns, 2.5 * rows), squeeze=False, layout="constrained")
    for k, ax in enumerate(axes.flat):
        if k >= num_classes:
            ax.set_visible(False)
            continue
        # spectrum() holds the half plane that rfft2 uses; a round trip gives the full, symmetric plane.
        spectrum = np.fft.fftshift(np.abs(np.fft.fft2(np.fft.irfft2(texture_class(k).spectrum(size), s=(size, size)))))
        ax.imshow(spectrum, cmap="magma", extent=(-0.5, 0.5, 0.5, -0.5))
        first_column, last_row = k % columns == 0, k // columns == rows - 1
        ax.set(xticks=[-0.4, 0, 0.4] if last_row else [], yticks=[-0.4, 0, 0.4] if first_column else [],
               xlabel="$f_x$ (cycles/px)" if last_row else "", ylabel="$f_y$ (cycles/px)" if first_column else "")
        ax.set_title(textwrap.fill(texture_class(k).name, 18), fontsize=8)
    add_caption(fig, f"|FFT| of TextureClass.spectrum on a {size} x {size} grid, zero frequency at the centre",
                what="The texture classes' amplitude spectra, frequency in cycles per pixel.")
    return fig


def plot_knob_images(preset: Preset, weights: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0)) -> plt.Figure:
    """One train image per class of ``synthetic-mix`` at each ``texture_weight``, the same draws."""
    settings = preset.worlds
    classes = settings.num_classes
    fig, axes = plt.subplots(classes, len(weights), figsize=(1.3 * len(weights) + 0.8, 1.3 * classes + 0.5),
                             layout="constrained", squeeze=False)
    for column, weight in enumerate(weights):
        world = get_dataset("synthetic-mix", "train", img_size=settings.img_size, num_classes=classes,
                            size=classes, seed=preset.seed, texture_weight=weight)
        for label in range(classes):
            axes[label, column].imshow(world[label][0])
            axes[label, column].set(xticks=[], yticks=[])
        axes[0, column].set_title(f"w = {weight:g}")
    for label in range(classes):
        axes[label, 0].set_ylabel(f"class {label}", rotation=0, ha="right", va="center")
    add_caption(fig, f"synthetic-mix, {settings.img_size} px, seed {preset.seed}, preset {preset.name}",
                what="The same image of each class along the texture knob w, from objects (0) to textures (1).")
    return fig


def plot_cue_accuracies(sweep: Sequence[float], accuracies: Mapping[str, Sequence[float]], preset: Preset) -> plt.Figure:
    """Each probe's val accuracy (:func:`ib_tutorial.data.cues.cue_accuracies`) against ``texture_weight``."""
    settings = preset.worlds
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    for (feature, values), marker in zip(accuracies.items(), "os"):
        ax.plot(sweep, values, marker=marker, label=feature)
    ax.axhline(1 / settings.num_classes, color="0.5", ls="--", label="chance")
    ax.set(xlabel="texture_weight $w$ (0 = objects, 1 = textures)", ylabel="probe accuracy on val (fraction)",
           ylim=(0, 1.02))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    add_caption(fig, f"ridge probes (ib_tutorial.data.cues), {settings.num_classes} classes, {settings.img_size} px, "
                     f"{settings.probe_train} train / {settings.probe_test} val images a point, preset {preset.name}",
                what="How well one 8 x 8 corner patch, and the whole image's colour statistics, name the class "
                     "along the knob.")
    return fig
