"""What the training loop reads: the views of the training images, and the plain images k-NN
compares; seeded subsets, the same on every machine and after every resume."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset

from ..data import get_dataset
from ..data.subsets import SubsetRecord, subset_record
from ..seeding import epoch_indices, subset_indices
from ..machine import ignore_stop_signals
from .augment import (BatchMultiCrop, DecodedImages, DeviceViewsLoader, MultiCropAugmentation, MultiCropDataset,
                      eval_transform)
from .distributed import Processes
from .run_config import RunConfig


@dataclass
class TrainingData:
    """The training images, the plain images k-NN compares, and the training split's record."""

    train_views: MultiCropDataset | DecodedImages
    knn_train: Subset
    knn_eval: Subset
    num_classes: int
    train_record: SubsetRecord


def build_data(config: RunConfig, root, download: bool, device: torch.device, progress: bool = False) -> TrainingData:
    name, options, seed, train = config.dataset, config.dataset_options, config.seed, config.train
    images = get_dataset(name, "train", root=root, download=download, **options)
    subset = Subset(images, epoch_indices(len(images), train.train_images, seed))
    if train.label_shuffle_seed is not None:
        subset = ShuffledLabels(subset, [images.targets[i] for i in subset.indices], train.label_shuffle_seed)
    local_crops = train.local_crops_number if config.objective.local_crops else 0
    if train.augmentation == "batched":
        views = DecodedImages(subset, BatchMultiCrop(config.view, local_crops, seed), device, progress)
    else:
        views = MultiCropDataset(subset, MultiCropAugmentation(config.view, local_crops), seed)
    knn_train, knn_eval = knn_image_sets(config, root, download)
    return TrainingData(views, knn_train, knn_eval, len(images.classes), subset_record(images))


def knn_image_sets(config: RunConfig, root, download: bool) -> tuple[Subset, Subset]:
    """The plain training and held-out images a run's k-NN compares (:func:`knn_subsets`)."""
    return knn_subsets(config.dataset, config.dataset_options, config.held_out_split, eval_transform(config.view.img_size),
                       config.train.knn_train_images, config.train.knn_eval_images, config.seed, root, download)


def knn_subsets(name: str, options: dict, held_out: str, transform, train_images: int | None,
                eval_images: int | None, seed: int, root, download: bool) -> tuple[Subset, Subset]:
    """Seeded subsets of ``train_images`` training and ``eval_images`` held-out images (all when
    None) through ``transform``."""
    knn_train = get_dataset(name, "train", root=root, download=download, transform=transform, **options)
    knn_eval = get_dataset(name, held_out, root=root, download=download, transform=transform, **options)
    return (Subset(knn_train, subset_indices(len(knn_train), train_images, seed + 1)),
            Subset(knn_eval, subset_indices(len(knn_eval), eval_images, seed + 2)))


class ShuffledLabels(Dataset):
    """``dataset``'s images with its labels (``targets``) permuted by ``seed``: the class counts
    stay, which image carries which label is noise."""

    def __init__(self, dataset: Dataset, targets: list[int], seed: int):
        if len(targets) != len(dataset):
            raise ValueError(f"{len(targets)} labels for {len(dataset)} images")
        order = torch.randperm(len(targets), generator=torch.Generator().manual_seed(seed)).tolist()
        self.dataset, self.labels = dataset, [targets[i] for i in order]

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        image, _ = self.dataset[index]
        return image, self.labels[index]


class ResumableSampler(DistributedSampler):
    """A ``DistributedSampler`` that leaves out the first ``skip`` images of this process's share
    of an epoch: those a run stopped mid-epoch had done."""

    skip = 0

    def __iter__(self):
        return iter(list(super().__iter__())[self.skip:])

    def __len__(self) -> int:
        return super().__len__() - self.skip


def build_loader(data: TrainingData, config: RunConfig, processes: Processes,
                 device: torch.device) -> DataLoader | DeviceViewsLoader:
    """Batches of ``(views, labels)`` for this process."""
    batched = isinstance(data.train_views, DecodedImages)
    sampler = ResumableSampler(data.train_views, num_replicas=processes.world_size, rank=processes.rank, shuffle=True,
                               seed=config.seed)
    # The loader's own generator: starting an epoch then draws nothing from the global one, so
    # a run resumed mid-epoch finds the global generator (stochastic depth) where it was saved.
    loader = DataLoader(data.train_views, batch_size=config.batch_per_process, sampler=sampler,
                        num_workers=0 if batched else config.train.num_workers,
                        worker_init_fn=ignore_stop_signals, pin_memory=device.type == "cuda" and not batched,
                        drop_last=True,
                        generator=torch.Generator().manual_seed(config.seed + processes.rank))
    if len(loader) == 0:
        raise ValueError(f"The global batch ({config.train.batch_size}) is larger than the "
                         f"{len(data.train_views)} training images; lower --batch-size or raise --train-images.")
    return DeviceViewsLoader(loader, data.train_views, device) if batched else loader
