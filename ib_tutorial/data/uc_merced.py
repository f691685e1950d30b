"""UC Merced Land Use (Yang and Newsam, 2010): 21 classes x 100 aerial scenes, 256 x 256 px.

Texture-centric: a class (forest, dense residential, ...) is mostly the texture covering the
tile. ``size_policy="resize"`` (default) resizes the few images short of 256 x 256 to it
(bicubic), so batches stack; ``"keep"`` returns them as stored.
"""
from __future__ import annotations

from collections.abc import Callable

from PIL import Image

from ..files import data_root
from .archives import DatasetNotFoundError, RemoteArchive, prepare
from .folders import ImageFiles, class_folders, stratified_split

# The MD5 published with torchgeo's UCMerced loader for this archive, whose mirror serves the same file.
ARCHIVE = RemoteArchive("UCMerced_LandUse.zip", "5b7ec56793786b6dc8a908e8854ac0e4",
                        ("http://weegee.vision.ucmerced.edu/datasets/UCMerced_LandUse.zip",
                         "https://huggingface.co/datasets/torchgeo/ucmerced/resolve/main/UCMerced_LandUse.zip"))
FOLDER = "UCMerced_LandUse"
REQUIRED = ("Images",)
LAYOUT = """  <root>/UCMerced_LandUse/
      Images/<class>/<class>NN.tif   21 classes, NN = 00..99, RGB TIFF, 256 x 256 px"""
SIDE = 256
SIZE_POLICIES = ("resize", "keep")


def resize_to_side(image: Image.Image) -> Image.Image:
    return image if image.size == (SIDE, SIDE) else image.resize((SIDE, SIDE), Image.Resampling.BICUBIC)


def load(split: str, root=None, download: bool = False, transform: Callable | None = None, *,
         train_fraction: float = 0.8, split_seed: int = 0, size_policy: str = "resize",
         skip_corrupt: bool = False) -> ImageFiles:
    """UC Merced ``train`` or ``test`` (:func:`~ib_tutorial.data.folders.stratified_split`)."""
    if size_policy not in SIZE_POLICIES:
        raise ValueError(f"Unknown size_policy {size_policy!r}; use one of {', '.join(SIZE_POLICIES)}.")
    folder = prepare(ARCHIVE, data_root(root), FOLDER, REQUIRED, download, "UC Merced Land Use", LAYOUT)
    files = class_folders(folder / "Images")
    if not files:
        raise DatasetNotFoundError(f"UC Merced: no class folders in {folder / 'Images'}. Expected layout:\n{LAYOUT}")
    samples = stratified_split(files, split, train_fraction, split_seed)
    info = {"train_fraction": train_fraction, "split_seed": split_seed, "size_policy": size_policy, "folder": str(folder)}
    fix_image = resize_to_side if size_policy == "resize" else None
    return ImageFiles(samples, list(files), transform, fix_image, info, skip_corrupt=skip_corrupt)
