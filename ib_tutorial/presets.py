"""Named settings for every experiment in the book, chosen by ``IB_TUTORIAL_PRESET`` (default ``ci``).

``ci``: CPU, offline, minutes per chapter, ViT-Tiny (D = 192); illustrates, does not reproduce.
``laptop``: CPU, about 80 minutes per dataset on two cores, ViT-Tiny; k-NN accuracy rises beyond
noise on the Tiny ImageNet subset. ``quick``: one GPU, minutes per dataset. ``paper``: one or
more GPUs, as close to the paper as it states (open choices: :data:`PAPER_OPEN_CHOICES`).
"""
from __future__ import annotations

import dataclasses
import os
import typing
import warnings
from dataclasses import dataclass, field

import torch

from .command_line import argument
from .data import DATASETS

ENV_VAR = "IB_TUTORIAL_PRESET"
DEFAULT_PRESET = "ci"
#: The shortest learning-rate warm-up, in steps, that DINO recipes known to learn on small data
#: keep (:mod:`ib_tutorial.training.schedules`): the floor ``warmup_min_steps``.
WARMUP_ANCHOR_STEPS = 800
#: The shortest last-layer freeze, in steps, likewise (the floor ``freeze_min_steps``).
FREEZE_ANCHOR_STEPS = 400


@dataclass(frozen=True)
class ProfileSettings:
    """How block outputs are measured: ``images`` feed each block's covariance; ``img_size`` and
    ``patch_size`` are the random-initialisation first look's; ``twonn_samples`` tokens per block
    feed TwoNN; ``replicates``: bootstrap replicates kept with each profile
    (:func:`~ib_tutorial.measure.bootstrap.bootstrap_eed`; 0 keeps none)."""

    images: int
    batch_size: int
    img_size: int
    patch_size: int
    twonn_samples: int
    replicates: int = 200


@dataclass(frozen=True)
class ViewSettings:
    """Input geometry and multi-crop views for one dataset.

    Attributes:
        img_size: side of the global crops and the ViT's input; crop sides are multiples of ``patch_size``.
        global_crop_scale, local_crop_scale: (min, max) fraction of the image's area a crop covers.
        blur_radius: (min, max) blur radius in pixels at 224 px, scaled by ``img_size / 224``
            (DINO: 0.1-2.0); ``(0, 0)`` turns the blur off.
        color_strength: scales DINO's colour jitter (brightness 0.4, contrast 0.4, saturation 0.2,
            hue ``hue_jitter``) and the probabilities of grayscale and solarisation.
        hue_jitter: the largest hue rotation in turns (DINO: 0.1); at 0.5 two views share no hue.
        invert, grayscale, tone_curve: probabilities that a view is inverted (after jitter and
            grayscale), turned grey (DINO: 0.2), or each channel sent through a random piecewise-linear
            tone curve (DINO: 0); inversion at 0.5 hides which region is darker, tone curves at 1
            leave two views only their shapes in common.
    """

    img_size: int
    patch_size: int
    local_crop_size: int
    global_crop_scale: tuple[float, float] = (0.4, 1.0)
    local_crop_scale: tuple[float, float] = (0.05, 0.4)
    blur_radius: tuple[float, float] = (0.1, 2.0)
    color_strength: float = 1.0
    hue_jitter: float = 0.1
    invert: float = 0.0
    grayscale: float = 0.2
    tone_curve: float = 0.0


# The paper states neither patch nor input size: each dataset keeps its registry's input size,
# with an 8 x 8 patch grid and half-side local crops, or DINO's 224/16/96 px at 224 px.
PAPER_VIEWS: dict[str, ViewSettings] = {
    name: ViewSettings(img_size=224, patch_size=16, local_crop_size=96) if info.input_size == 224 else
    ViewSettings(img_size=info.input_size, patch_size=info.input_size // 8, local_crop_size=info.input_size // 2)
    for name, info in DATASETS.items()}

# CPU tiers: every dataset at 32 px with patch 8 (4 x 4 patches per global crop, 2 x 2 per
# local crop), which cuts the tokens per image 4-fold against patch 4.
REDUCED_VIEWS: dict[str, ViewSettings] = {name: ViewSettings(img_size=32, patch_size=8, local_crop_size=16)
                                           for name in DATASETS}


@dataclass(frozen=True)
class TrainSettings:
    """DINO training settings; the defaults are DINO's 100-epoch ViT-S/16 recipe (``main_dino.py``).

    Attributes:
        batch_size: images per step, summed over all processes.
        lr: peak learning rate for a batch of 256; the peak used is ``lr * batch_size / 256``.
        warmup_min_steps, freeze_min_steps: floors in steps of the warm-up and of the last
            layer's freeze (:mod:`ib_tutorial.training.schedules`).
        weight_decay, weight_decay_end, momentum_teacher: cosine to the end value (momentum to 1).
        out_dim: K, the head's output size.
        clip_grad: per-parameter gradient-norm clip (0 disables it).
        freeze_last_layer: epochs during which the head's last layer is not updated.
        precision: ``auto`` (bf16 on CUDA, else fp16 with loss scaling; fp32 on CPU) or a dtype's name.
        num_workers: loader processes per training process; ``None`` shares the node's cores.
        train_images: images per epoch (a fixed random subset, or the split repeated with
            fresh views); ``None`` for the split once. ``knn_train_images`` and
            ``knn_eval_images`` likewise (``None``: all).
        eval_split: the held-out split of k-NN and profiles; ``None``: ``val``, else ``test``.
        knn_every, checkpoint_every: in epochs (and after the last); ``log_every`` in steps.
        arch: ``vit_small`` (the paper's, D = 384) or ``vit_tiny`` (D = 192).
        objective: ``dino``, or ``supervised`` (:mod:`ib_tutorial.training.supervised_step`).
        augmentation: ``loader`` (DINO's PIL pipeline in the loader) or ``batched``
            (:class:`~ib_tutorial.training.augment.BatchMultiCrop`).
        label_shuffle_seed: for ``supervised``: the labels permuted by this seed, the control
            for training without learning (k-NN keeps the true labels).
    """

    epochs: int
    batch_size: int
    lr: float = 5e-4
    min_lr: float = 1e-6
    warmup_epochs: int = 10
    warmup_min_steps: int = 0
    weight_decay: float = 0.04
    weight_decay_end: float = 0.4
    momentum_teacher: float = 0.996
    warmup_teacher_temp: float = 0.04
    teacher_temp: float = 0.04
    warmup_teacher_temp_epochs: int = 30
    student_temp: float = 0.1
    center_momentum: float = 0.9
    out_dim: int = 65536
    hidden_dim: int = 2048
    bottleneck_dim: int = 256
    norm_last_layer: bool = True
    local_crops_number: int = 8
    clip_grad: float = 3.0
    freeze_last_layer: int = 1
    freeze_min_steps: int = 0
    drop_path_rate: float = 0.1
    precision: str = "auto"
    num_workers: int | None = None
    train_images: int | None = None
    knn_train_images: int | None = None
    knn_eval_images: int | None = None
    eval_split: str | None = None
    knn_k: int = 20
    knn_temperature: float = 0.07
    knn_every: int = 10
    checkpoint_every: int = 10
    log_every: int = 10
    arch: str = "vit_small"
    threads: int | None = None
    objective: str = "dino"
    augmentation: str = "loader"
    label_shuffle_seed: int | None = None


def training_overrides() -> dict[str, type]:
    """Every override a run accepts, with its type: the settings' fields, ``seed`` and ``device``."""
    names: dict[str, type] = {"seed": int, "device": str}
    for section in (TrainSettings, ViewSettings):
        hints = typing.get_type_hints(section)
        names.update({f.name: hints[f.name] for f in dataclasses.fields(section)})
    return names


@dataclass(frozen=True)
class WorldSettings:
    """The dataset chapter's synthetic worlds; ``probe_train`` and ``probe_test`` images per
    world fit and evaluate the linear probes."""

    img_size: int
    num_classes: int
    probe_train: int
    probe_test: int


@dataclass(frozen=True)
class IBSettings:
    """The Information Bottleneck toy (the 12-10-7-5-4-3-2 network), trained on the CPU by every tier.

    Attributes:
        batch_size: inputs per Adam step; ``None`` for the full training set.
        logged_epochs: epochs, evenly spaced in log(epoch), that record the activations.
        bins: bins per unit for the binning estimator (30, as Shwartz-Ziv & Tishby).
        noise_variance: the KDE estimator's noise variance (1e-3, as in Saxe et al.'s code).
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
    """One named tier of settings. ``illustrative``: a few steps that illustrate, not reproduce; chapters
    keep its runs apart per code version (:meth:`ib_tutorial.notebook.ChapterSetup.reproduce_folder`)."""

    name: str
    description: str
    seed: int
    device: str  # "cpu", "cuda", or "auto" (CUDA when available)
    profile: ProfileSettings = field(repr=False)
    train: TrainSettings = field(repr=False)
    worlds: WorldSettings = field(repr=False)
    ib: IBSettings = field(repr=False)
    views: dict[str, ViewSettings] = field(default_factory=lambda: dict(PAPER_VIEWS), repr=False, hash=False)
    illustrative: bool = False

    def view(self, dataset: str) -> ViewSettings:
        try:
            return self.views[dataset]
        except KeyError:
            raise ValueError(f"No input geometry for dataset {dataset!r}; known: {', '.join(self.views)}. "
                             "Add a ViewSettings entry for it to the preset's `views`.") from None

    def replace(self, **changes) -> "Preset":
        return dataclasses.replace(self, **changes)


# The paper does not state these; each is an option with the default given here.
PAPER_OPEN_CHOICES = {
    "profile.images": "number of images whose tokens feed the metric (default 2,000)",
    "profile.tokens": "which tokens feed the metric: all (CLS + patches, default), cls, patch, mean",
    "profile.center": "centred covariance (default) or uncentred H^T H / N",
    "views": "input size and patch size per dataset (32 px/patch 4 CIFAR-100, 64/8 Tiny ImageNet, 224/16 UC Merced)",
    "train.batch_size": "global batch size (default 256, so the peak learning rate is DINO's 5e-4)",
    "train.lr": "peak learning rate per 256 images (DINO: 5e-4), with 10 warm-up epochs",
    "train.teacher_temp": "teacher temperature (DINO's 100-epoch recipe: 0.04 throughout)",
    "train.out_dim": "head output size K (DINO: 65,536)",
    "train.local_crops_number": "local crops per image (DINO's 100-epoch recipe: 8) and their scales",
    "train.momentum_teacher": "teacher EMA momentum (DINO: 0.996, cosine to 1)",
}

# As in Saxe et al.'s code: mini-batch Adam, learning rate 4e-4, batches of 256, 10,000 epochs.
_IB_LAPTOP = IBSettings(epochs=10000, learning_rate=4e-4, batch_size=256, logged_epochs=60, bins=30, noise_variance=1e-3, seed=0)

PRESETS: dict[str, Preset] = {
    "ci": Preset(
        name="ci", seed=0, device="cpu",
        description="CPU, offline, minutes per chapter; illustrates, does not reproduce",
        # No bootstraps: the chapters profile dozens of ci networks live, and a bootstrap of each
        # would add minutes to a chapter (the committed bundles' profiles carry theirs).
        profile=ProfileSettings(images=64, batch_size=16, img_size=32, patch_size=4, twonn_samples=1000,
                                replicates=0),
        # 12 steps: a teacher that follows within steps (momentum 0.99) and a sharper one (0.03,
        # DINO's advice when the loss does not decrease).
        train=TrainSettings(
            epochs=3, batch_size=16, lr=8e-3, min_lr=2e-4, warmup_epochs=1, momentum_teacher=0.99,
            warmup_teacher_temp=0.03, teacher_temp=0.03, out_dim=1024, local_crops_number=2, num_workers=0,
            train_images=64, knn_train_images=256, knn_eval_images=128,
            # One checkpoint, at the end: the chapters compare the teacher at initialisation and last.
            knn_every=3, checkpoint_every=3, log_every=1,
            # The CPU tiers' width: a ViT-S run costs about three times as much and, in 12
            # steps, illustrates nothing more.
            arch="vit_tiny",
        ),
        views=REDUCED_VIEWS,
        worlds=WorldSettings(img_size=32, num_classes=5, probe_train=500, probe_test=500),
        ib=IBSettings(epochs=2000, learning_rate=3e-3, batch_size=None, logged_epochs=24, bins=30, noise_variance=1e-3, seed=0),
        illustrative=True,
    ),
    "laptop": Preset(
        name="laptop", seed=0, device="cpu",
        description="CPU, ViT-Tiny, about 80 minutes per dataset on two cores",
        profile=ProfileSettings(images=512, batch_size=32, img_size=32, patch_size=4, twonn_samples=2000),
        # 48 epochs of 5,000 images (3,744 steps of 64): at 16 epochs the k-NN accuracy did not
        # rise beyond noise (results/laptop-tier-16), at 48 it did (results/laptop-tier-48).
        train=TrainSettings(
            epochs=48, batch_size=64, lr=2e-3, min_lr=1e-5, warmup_epochs=1, momentum_teacher=0.99,
            warmup_teacher_temp=0.04, teacher_temp=0.04, warmup_teacher_temp_epochs=0,
            weight_decay_end=0.1, out_dim=4096, local_crops_number=4, drop_path_rate=0.0, freeze_last_layer=0,
            num_workers=0, train_images=5000, knn_train_images=None, knn_eval_images=None,
            knn_every=4, checkpoint_every=4, log_every=10, arch="vit_tiny",
            warmup_min_steps=WARMUP_ANCHOR_STEPS, freeze_min_steps=FREEZE_ANCHOR_STEPS,
        ),
        views=REDUCED_VIEWS,
        worlds=WorldSettings(img_size=32, num_classes=10, probe_train=4000, probe_test=2000),
        ib=_IB_LAPTOP,
    ),
    "quick": Preset(
        name="quick", seed=0, device="auto",
        description="one GPU, minutes per dataset",
        profile=ProfileSettings(images=1000, batch_size=128, img_size=224, patch_size=16, twonn_samples=4000),
        train=TrainSettings(epochs=10, batch_size=256, warmup_epochs=2, knn_every=5, checkpoint_every=5,
                            warmup_min_steps=WARMUP_ANCHOR_STEPS, freeze_min_steps=FREEZE_ANCHOR_STEPS),
        worlds=WorldSettings(img_size=64, num_classes=10, probe_train=10000, probe_test=5000),
        ib=_IB_LAPTOP,
    ),
    "paper": Preset(
        name="paper", seed=0, device="auto",
        description="the paper's settings where it states them; one or more GPUs",
        profile=ProfileSettings(images=2000, batch_size=128, img_size=224, patch_size=16, twonn_samples=4000),
        # Stated by the paper: ViT-S, DINO, 100 epochs; the rest is DINO's 100-epoch ViT-S recipe
        # (TrainSettings' defaults), with the warm-up and freeze floors for small data sets.
        train=TrainSettings(epochs=100, batch_size=256, warmup_min_steps=WARMUP_ANCHOR_STEPS,
                            freeze_min_steps=FREEZE_ANCHOR_STEPS),
        worlds=WorldSettings(img_size=64, num_classes=10, probe_train=10000, probe_test=5000),
        ib=_IB_LAPTOP,
    ),
}


def get_preset(name: str | None = None) -> Preset:
    """The preset called ``name``, or the one ``IB_TUTORIAL_PRESET`` names."""
    chosen = name if name is not None else os.environ.get(ENV_VAR, DEFAULT_PRESET)
    try:
        return PRESETS[chosen]
    except KeyError:
        source = "" if name is not None else f" (from {ENV_VAR})"
        raise ValueError(f"Unknown preset {chosen!r}{source}. Known presets: {', '.join(PRESETS)}. "
                         f"Choose one with {argument('preset', '<name>')} or `export {ENV_VAR}=<name>`.") from None


def resolve_device(preset: Preset):
    """The ``torch.device`` a preset asks for; ``auto``: CUDA when available, else the CPU with a warning."""
    cpu_tiers = " or ".join(argument("preset", name) for name, tier in PRESETS.items() if tier.device == "cpu")
    if preset.device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        warnings.warn(f"Preset {preset.name!r} is made for a GPU and none is visible: it runs on the CPU, with its "
                      f"settings unchanged and many times slower. Tiers made for a CPU: {cpu_tiers}.", stacklevel=2)
        return torch.device("cpu")
    if preset.device == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{argument('device', 'cuda')} needs a CUDA GPU and none is visible. "
                         f"Use {argument('device', 'cpu')}, or a tier made for a CPU: {cpu_tiers}.")
    return torch.device(preset.device)
