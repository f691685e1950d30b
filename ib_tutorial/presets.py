"""Named settings for every experiment in the book.

A preset is plain, frozen data. One environment variable, ``IB_TUTORIAL_PRESET``,
chooses it for the notebooks and the command line; the default is ``ci`` so that
every chapter runs in minutes on a laptop CPU.

Tiers, from smallest to largest:

``ci``
    CPU, offline, seconds to minutes per chapter. Exercises every code path with
    small images and few samples; the numbers it produces illustrate the method,
    they do not reproduce the paper.
``laptop``
    CPU, up to about an hour per experiment on two cores. Long enough for the
    qualitative effects to show.
``quick``
    One GPU, minutes per dataset.
``paper``
    One or more GPUs; as close to the paper as it states. Choices the paper leaves
    open are listed in :data:`PAPER_OPEN_CHOICES`.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

ENV_VAR = "IB_TUTORIAL_PRESET"
DEFAULT_PRESET = "ci"


@dataclass(frozen=True)
class ProbeSettings:
    """How block outputs are measured.

    Attributes:
        images: number of images whose tokens feed each block's covariance.
        batch_size: images per forward pass.
        img_size: input side in pixels for the random-initialisation first look.
        patch_size: ViT patch side in pixels for that first look.
        twonn_samples: tokens kept per block (uniform reservoir) for TwoNN.
    """

    images: int
    batch_size: int
    img_size: int
    patch_size: int
    twonn_samples: int


@dataclass(frozen=True)
class DataSettings:
    """The dataset chapter's measurements on the synthetic worlds.

    Attributes:
        img_size: side in pixels of the synthetic images shown and measured.
        num_classes: classes in each synthetic world.
        probe_train: images per world (balanced over classes) that fit the linear
            probes asking where the label lives; ``probe_test`` more evaluate them.
        probe_test: held-out images per world for those probes.
    """

    img_size: int
    num_classes: int
    probe_train: int
    probe_test: int


@dataclass(frozen=True)
class IBSettings:
    """The Information Bottleneck toy: the 12-10-7-5-4-3-2 network on 12-bit inputs.

    The network is tiny, so every tier trains it on the CPU; the GPU tiers use the
    ``laptop`` values.

    Attributes:
        epochs: passes over the training inputs (85 % of the 4096).
        learning_rate: Adam's step size.
        batch_size: inputs per step; ``None`` for the full training set in one step.
        logged_epochs: how many epochs, spaced evenly in log(epoch) from 0 to ``epochs``,
            record every layer's activations (fewer when rounding makes some coincide).
        bins: bins per unit for the binning estimator (30, as Shwartz-Ziv & Tishby).
        noise_variance: variance of the Gaussian noise assumed by the kernel (KDE)
            estimator, in squared activation units (1e-3, as in Saxe et al.'s code).
        seed: seeds the train/test split, the initial weights and the batch order.
    """

    epochs: int
    learning_rate: float
    batch_size: int | None
    logged_epochs: int
    bins: int
    noise_variance: float
    seed: int


@dataclass(frozen=True)
class Preset:
    """One named tier of settings. ``seed`` makes every run in the tier repeatable."""

    name: str
    description: str
    seed: int
    device: str  # "cpu", "cuda", or "auto" (CUDA when available)
    probe: ProbeSettings = field(repr=False)
    data: DataSettings = field(repr=False)
    ib: IBSettings = field(repr=False)

    def replace(self, **changes) -> "Preset":
        """A copy with some top-level fields changed (sections are replaced whole)."""
        return dataclasses.replace(self, **changes)


# The paper does not state these; each is an option with the default given here.
PAPER_OPEN_CHOICES = {
    "probe.images": "number of images whose tokens feed the metric (default 2,000)",
    "probe.tokens": "which tokens feed the metric: all (CLS + patches, default), cls, patch, mean",
    "probe.center": "centred covariance (default) or uncentred H^T H / N",
}

# As in Saxe et al.'s code: mini-batch Adam, learning rate 4e-4, batches of 256, 10,000 epochs.
_IB_LAPTOP = IBSettings(epochs=10000, learning_rate=4e-4, batch_size=256, logged_epochs=60, bins=30, noise_variance=1e-3, seed=0)

PRESETS: dict[str, Preset] = {
    "ci": Preset(
        name="ci",
        description="CPU, offline, minutes per chapter; illustrates, does not reproduce",
        seed=0,
        device="cpu",
        probe=ProbeSettings(images=64, batch_size=16, img_size=32, patch_size=4, twonn_samples=1000),
        data=DataSettings(img_size=32, num_classes=5, probe_train=500, probe_test=500),
        ib=IBSettings(epochs=2000, learning_rate=3e-3, batch_size=None, logged_epochs=24, bins=30, noise_variance=1e-3, seed=0),
    ),
    "laptop": Preset(
        name="laptop",
        description="CPU, up to about an hour per experiment on two cores",
        seed=0,
        device="cpu",
        probe=ProbeSettings(images=512, batch_size=32, img_size=32, patch_size=4, twonn_samples=2000),
        data=DataSettings(img_size=32, num_classes=10, probe_train=4000, probe_test=2000),
        ib=_IB_LAPTOP,
    ),
    "quick": Preset(
        name="quick",
        description="one GPU, minutes per dataset",
        seed=0,
        device="auto",
        probe=ProbeSettings(images=1000, batch_size=128, img_size=224, patch_size=16, twonn_samples=4000),
        data=DataSettings(img_size=64, num_classes=10, probe_train=10000, probe_test=5000),
        ib=_IB_LAPTOP,
    ),
    "paper": Preset(
        name="paper",
        description="the paper's settings where it states them; one or more GPUs",
        seed=0,
        device="auto",
        probe=ProbeSettings(images=2000, batch_size=128, img_size=224, patch_size=16, twonn_samples=4000),
        data=DataSettings(img_size=64, num_classes=10, probe_train=10000, probe_test=5000),
        ib=_IB_LAPTOP,
    ),
}


def get_preset(name: str | None = None) -> Preset:
    """Return the preset called ``name``, or the one ``IB_TUTORIAL_PRESET`` names.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    chosen = name if name is not None else os.environ.get(ENV_VAR, DEFAULT_PRESET)
    try:
        return PRESETS[chosen]
    except KeyError:
        known = ", ".join(PRESETS)
        raise ValueError(
            f"Unknown preset {chosen!r}. Known presets: {known}. "
            f"Set {ENV_VAR} to one of them, e.g. `export {ENV_VAR}=ci`."
        ) from None


def resolve_device(preset: Preset):
    """The ``torch.device`` a preset asks for; ``auto`` means CUDA when available."""
    import torch

    if preset.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if preset.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"Preset {preset.name!r} needs a CUDA GPU and none is visible. "
            f"Use a CPU preset instead: `export {ENV_VAR}=ci` (or `laptop`)."
        )
    return torch.device(preset.device)
