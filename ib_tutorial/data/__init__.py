"""Every dataset of the book behind one call, :func:`get_dataset`.

Object-centric (the label is a thing in the picture): ``cifar100``, ``tiny-imagenet``,
``synthetic-objects``; texture-centric (a statistic every part of the picture shares):
``uc-merced``, ``dtd``, ``eurosat``, ``synthetic-textures``; ``synthetic-mix`` turns a knob
between the two synthetic worlds. Real data lives under the data root (``root``, else
``$IB_TUTORIAL_DATA``, else ``~/.cache/ib_tutorial``) and is downloaded only when asked.

* :mod:`~ib_tutorial.data.synthetic`: the synthetic worlds; :mod:`~ib_tutorial.data.controls`:
  control inputs; :mod:`~ib_tutorial.data.cues`: linear probes on two kinds of cue;
* :mod:`~ib_tutorial.data.tiny_imagenet`, :mod:`~ib_tutorial.data.uc_merced`,
  :mod:`~ib_tutorial.data.torchvision_sets`: the real datasets' loaders;
  :mod:`~ib_tutorial.data.folders`: labelled image files and stratified splits;
  :mod:`~ib_tutorial.data.archives`: downloads, checksums and safe extraction;
* :mod:`~ib_tutorial.data.subsets`: the named subsets, building, checking and recording them;
* :mod:`~ib_tutorial.data.spec`: a dataset with its options as one string.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from ..files import data_root
from . import tiny_imagenet, uc_merced
from .archives import ArchiveError, ChecksumError, DatasetNotFoundError
from .folders import CorruptImageError
from .synthetic import SPLITS, SyntheticWorld
from .torchvision_sets import load_cifar100, load_dtd, load_eurosat


@dataclass(frozen=True)
class DatasetInfo:
    """What :func:`get_dataset` knows about one dataset name."""

    load: Callable
    kind: str  # "object-centric", "texture-centric", or "between" for the knob
    splits: tuple[str, ...]
    description: str
    input_size: int  # the side, in pixels, the paper tier feeds the ViT (see presets.PAPER_VIEWS)
    native_size: int | None = None  # the side of the stored images; None when it varies
    train_images: int | None = None  # images in the train split; None when options set it
    split_note: str = ""  # why a split one might expect is not offered
    folder_options: tuple[str, ...] = ()  # options that read a folder without the official split


def _synthetic_loader(world: str, fixed_texture_weight: float | None) -> Callable:
    def load(split: str, root=None, download: bool = False, transform: Callable | None = None, *, img_size: int = 32,
             num_classes: int = 10, size: int | None = None, seed: int = 0, texture_weight: float | None = None,
             object_scale: float = 1.0, clutter: float = 1.0, palette: str = "random") -> SyntheticWorld:
        # Synthetic worlds are generated on the fly: `root` and `download` do not apply.
        if texture_weight is None:
            texture_weight = 0.5 if fixed_texture_weight is None else fixed_texture_weight
        elif fixed_texture_weight not in (None, texture_weight):
            raise ValueError(f"{world} has texture_weight={fixed_texture_weight} by definition; use "
                             f"get_dataset('synthetic-mix', ..., texture_weight={texture_weight}) for other values.")
        return SyntheticWorld(split, img_size=img_size, num_classes=num_classes, size=size, seed=seed,
                              texture_weight=texture_weight, object_scale=object_scale, clutter=clutter,
                              palette=palette, transform=transform)

    return load


DATASETS: dict[str, DatasetInfo] = {
    "cifar100": DatasetInfo(
        load_cifar100, "object-centric", ("train", "test"),
        "CIFAR-100: 100 classes, 32 px, 50,000 train / 10,000 test (torchvision)",
        input_size=32, native_size=32, train_images=50_000,
        split_note="CIFAR-100 publishes train and test only.",
    ),
    "tiny-imagenet": DatasetInfo(
        tiny_imagenet.load, "object-centric", ("train", "val"),
        "Tiny ImageNet: 200 classes (as wnids.txt lists; an unnamed subset warns), 64 px, 100,000 train / 10,000 val",
        input_size=64, native_size=64, train_images=100_000,
        split_note="Its test images have no published labels; use 'val' for evaluation.",
    ),
    "uc-merced": DatasetInfo(
        uc_merced.load, "texture-centric", ("train", "test"),
        "UC Merced Land Use: 21 classes x 100 aerial tiles, 256 px; stratified 80/20 split",
        input_size=224, native_size=256, train_images=1_680,
        split_note="It publishes no split; train/test are a stratified split (train_fraction, split_seed).",
    ),
    "dtd": DatasetInfo(
        load_dtd, "texture-centric", ("train", "val", "test"),
        "Describable Textures: 47 classes x 120, 300-640 px; official partitions 1-10 (torchvision)",
        input_size=224, train_images=1_880, folder_options=("folder", "subset"),
    ),
    "eurosat": DatasetInfo(
        load_eurosat, "texture-centric", ("train", "test"),
        "EuroSAT RGB: 10 land-cover classes, 27,000 tiles of 64 px; stratified 80/20 split (torchvision)",
        input_size=64, native_size=64, train_images=21_600,
        split_note="It publishes no split; train/test are a stratified split (train_fraction, split_seed).",
    ),
    "synthetic-objects": DatasetInfo(
        _synthetic_loader("synthetic-objects", 0.0), "object-centric", SPLITS,
        "class = a shape at random position, scale and colour over clutter (generated, nothing to download)",
        input_size=32, native_size=32,
    ),
    "synthetic-textures": DatasetInfo(
        _synthetic_loader("synthetic-textures", 1.0), "texture-centric", SPLITS,
        "class = a stationary texture statistic over the whole image (generated, nothing to download)",
        input_size=32, native_size=32,
    ),
    "synthetic-mix": DatasetInfo(
        _synthetic_loader("synthetic-mix", None), "between", SPLITS,
        "(1 - texture_weight) x object image + texture_weight x texture image of the same class (default 0.5)",
        input_size=32, native_size=32,
    ),
}


def get_dataset(name: str, split: str = "train", root=None, download: bool = False, transform: Callable | None = None,
                **options):
    """A torch ``Dataset`` of ``(PIL RGB image, int label)`` pairs (or ``(transform(image), label)``),
    with a ``classes`` list; ``name`` is a key of :data:`DATASETS`.

    Options, by dataset:

    - synthetic worlds: those of :class:`~ib_tutorial.data.synthetic.SyntheticWorld`
      (``texture_weight`` for ``synthetic-mix`` only, default 0.5);
    - ``uc-merced``, ``eurosat``: ``train_fraction`` (0.8), ``split_seed`` (0); ``uc-merced`` also
      ``size_policy`` (``"resize"`` or ``"keep"``);
    - ``dtd``: ``partition`` (1-10, default 1); or ``folder`` (``images/<class>/`` without
      ``labels/``, absolute or inside the data root) with ``train_fraction`` and ``split_seed``;
      or ``subset`` (``"dtd6"``, :mod:`~ib_tutorial.data.subsets`);
    - ``tiny-imagenet``: ``subset`` (``"tin20"``);
    - every dataset read from image files: ``skip_corrupt`` (``False``): leave out, with a
      warning, the images that cannot be decoded.

    Raises ``ValueError`` for an unknown name, split or option (naming the known ones),
    :class:`DatasetNotFoundError` (data missing without ``download``; the message shows the
    expected layout), :class:`ChecksumError`, :class:`ArchiveError`, and, when an item is read,
    :class:`CorruptImageError`.
    """
    info = _dataset_info(name)
    if split not in info.splits:
        raise ValueError(f"Dataset {name!r} has no split {split!r}; it offers: {', '.join(info.splits)}. "
                         f"{info.split_note}".strip())
    check_dataset_options(name, options)
    return info.load(split, root, download, transform, **options)


def dataset_on_disk(name: str, split: str, root=None, **options) -> tuple[object | None, str]:
    """``(get_dataset(name, split, root=root, **options), "")`` when its files are under the
    data root, else ``(None, why)``: the layout it expects and how to fetch it. Never downloads."""
    try:
        return get_dataset(name, split, root=root, **options), ""
    except DatasetNotFoundError as missing:
        return None, str(missing)


def options_on_disk(name: str, root=None) -> dict:
    """The options that read ``name`` as it lies under the data root: ``folder=<name>`` for a
    ``<root>/<name>/images/<class>/`` without the official split (as ``ib-tutorial subset build
    dtd6`` makes it), none for a published layout."""
    readable_as_folder = "folder" in DATASETS[name].folder_options
    return {"folder": name} if readable_as_folder and (data_root(root) / name / "images").is_dir() else {}


def held_out_split(name: str, options: dict | None = None) -> str:
    """The split a model trained on ``train`` is evaluated on (k-NN accuracy by default): ``val``
    where the dataset offers one, else ``test``; a DTD ``folder`` or ``subset`` has ``test`` only."""
    info = _dataset_info(name)
    if "val" in info.splits and all((options or {}).get(key) is None for key in info.folder_options):
        return "val"
    return "test"


def _dataset_info(name: str) -> DatasetInfo:
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}. Known datasets: {', '.join(DATASETS)}.")
    return DATASETS[name]


def check_dataset_options(name: str, options) -> None:
    """Raise ``ValueError`` naming the accepted options when ``name`` does not take all of ``options``."""
    accepted = [
        parameter.name for parameter in inspect.signature(_dataset_info(name).load).parameters.values()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    if unknown := sorted(set(options) - set(accepted)):
        raise ValueError(f"Dataset {name!r} does not take option(s) {', '.join(unknown)}; "
                         f"it takes: {', '.join(accepted) or 'no options'}.")


__all__ = [
    "DATASETS", "ArchiveError", "ChecksumError", "CorruptImageError", "DatasetInfo", "DatasetNotFoundError",
    "SyntheticWorld", "check_dataset_options", "dataset_on_disk", "get_dataset", "held_out_split", "options_on_disk",
]
