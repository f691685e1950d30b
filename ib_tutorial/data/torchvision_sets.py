"""CIFAR-100 (Krizhevsky, 2009), DTD (Cimpoi et al., 2014) and EuroSAT RGB (Helber et al., 2019),
read by torchvision's dataset classes and downloaded with its URLs and MD5s through
:mod:`ib_tutorial.data.archives`; DTD and EuroSAT are read as
:class:`~ib_tutorial.data.folders.ImageFiles`, with the same errors and ``skip_corrupt``.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..files import data_root
from .archives import ChecksumError, DatasetNotFoundError, RemoteArchive, prepare, verify_md5
from .folders import DTD_FOLDER_LAYOUT, DTD_LAYOUT, ImageFiles, class_folders, stratified_split
from .subsets import named_subset

CIFAR100_LAYOUT = """  <root>/cifar-100-python/
      train, test, meta              Python pickles (torchvision's CIFAR100 reads them)"""
EUROSAT_LAYOUT = """  <root>/eurosat/2750/<class>/<class>_<n>.jpg    10 classes, 64 x 64 px"""

# The archive torchvision's EuroSAT downloads (its URL and MD5 are not class attributes).
EUROSAT_ARCHIVE = RemoteArchive(
    filename="EuroSAT.zip",
    md5="c8fa014336c82ac7804f0398fcb19387",
    urls=("https://huggingface.co/datasets/torchgeo/eurosat/resolve/c877bcd43f099cd0196738f714544e355477f3fd/EuroSAT.zip",),
)


def load_cifar100(split: str, root=None, download: bool = False, transform: Callable | None = None):
    """CIFAR-100 ``train`` or ``test`` as torchvision's ``CIFAR100`` (fine labels)."""
    from torchvision.datasets import CIFAR100

    root = data_root(root)
    archive = RemoteArchive(CIFAR100.filename, CIFAR100.tgz_md5, (CIFAR100.url,))
    files = CIFAR100.train_list + CIFAR100.test_list + [[CIFAR100.meta["filename"], CIFAR100.meta["md5"]]]
    folder = prepare(archive, root, CIFAR100.base_folder, [name for name, _ in files], download, "CIFAR-100", CIFAR100_LAYOUT)
    try:
        return CIFAR100(str(root), train=split == "train", transform=transform, download=False)
    except RuntimeError as error:
        # torchvision's message does not say which file failed; find it and say.
        for name, md5 in files:
            verify_md5(folder / name, md5)
        raise ChecksumError(f"CIFAR-100 under {folder}: {error}") from error


def load_dtd(split: str, root=None, download: bool = False, transform: Callable | None = None, *, partition: int = 1,
             folder: str | Path | None = None, train_fraction: float = 0.8, split_seed: int = 0,
             skip_corrupt: bool = False, subset: str | None = None) -> ImageFiles:
    """DTD ``train``/``val``/``test`` of official ``partition`` (1-10); or, with ``folder``
    (relative: inside the data root, so a run's configuration names no machine's paths), its
    ``images/<class>/`` split into ``train``/``test``; ``subset`` (e.g. ``"dtd6"``) reads that
    subset's built folder the same way, its classes only."""
    if subset is not None:
        chosen = named_subset(subset, "dtd")
        folder = chosen.folder if folder is None else folder
    if folder is not None:
        base = Path(folder).expanduser()
        base = base if base.is_absolute() else data_root(root) / base
        images = base / "images"
        if subset is None and not images.is_dir():
            raise DatasetNotFoundError(
                f"DTD: no images/ folder in {base} (a relative folder is read inside the data root "
                f"{data_root(root)}). Expected layout:\n{DTD_FOLDER_LAYOUT}")
        if split == "val":
            raise ValueError("A DTD folder without labels/ is split into train and test only; use split='test'.")
        files = class_folders(images) if subset is None else chosen.built_classes(images)
        info = {"train_fraction": train_fraction, "split_seed": split_seed, "folder": str(base), "subset": subset}
        samples = stratified_split(files, split, train_fraction, split_seed)
        return ImageFiles(samples, list(files), transform, info=info, skip_corrupt=skip_corrupt)

    from torchvision.datasets import DTD

    if not 1 <= partition <= 10:
        raise ValueError(f"DTD partition must be 1 to 10, got {partition}.")
    archive = RemoteArchive(Path(DTD._URL).name, DTD._MD5, (DTD._URL,))
    folder = prepare(archive, data_root(root) / "dtd", "dtd", ("images", "labels"), download, "DTD", DTD_LAYOUT)
    # torchvision's DTD reads labels/<split><partition>.txt into these two lists.
    listing = DTD(str(data_root(root)), split=split, partition=partition)
    samples = list(zip(listing._image_files, listing._labels))
    info = {"partition": partition, "folder": str(folder)}
    return ImageFiles(samples, listing.classes, transform, info=info, skip_corrupt=skip_corrupt)


def load_eurosat(split: str, root=None, download: bool = False, transform: Callable | None = None, *,
                 train_fraction: float = 0.8, split_seed: int = 0, skip_corrupt: bool = False) -> ImageFiles:
    """EuroSAT RGB ``train`` or ``test``: torchvision's ``EuroSAT`` file list, split stratified."""
    from torchvision.datasets import EuroSAT

    root = data_root(root)
    prepare(EUROSAT_ARCHIVE, root / "eurosat", "2750", (), download, "EuroSAT", EUROSAT_LAYOUT)
    listing = EuroSAT(str(root))
    files: dict[str, list[Path]] = {name: [] for name in listing.classes}
    for path, label in listing.samples:
        files[listing.classes[label]].append(Path(path))
    info = {"train_fraction": train_fraction, "split_seed": split_seed}
    samples = stratified_split(files, split, train_fraction, split_seed)
    return ImageFiles(samples, listing.classes, transform, info=info, skip_corrupt=skip_corrupt)
