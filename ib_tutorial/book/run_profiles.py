"""A run's saved networks measured: every teacher profiled, the last one pruned, what they learned besides the class.

:func:`profile_run` profiles each saved backbone (epoch 0 is the random initialisation) into
``profiles/<epoch>.json`` (other measurements into ``profiles/<variant>/<epoch>.json``), with
the settings the run recorded; every epoch sees the same images and bootstrap seed, so two
epochs' replicates are paired (:func:`~ib_tutorial.measure.bootstrap.joint_interval`). Files
that already hold the measurement are skipped, so an interrupted pass resumes.

:func:`prune_run` writes ``pruning/<pool>-<epoch>.json``. On a world with objects,
:func:`measure_factors` splits each factor an image draws besides its class
(:meth:`~ib_tutorial.data.synthetic.SyntheticWorld.object_factors`) at its median over the
training images, and asks the run's k-NN classifier for the side: a network that tells the
object's value apart while its class accuracy falls has learned the value instead of the shape::

    <run>/factors.json   {"epochs": {epoch: {pool: {factor or "class": top-1 %}}},
                          "chance": {factor: %}, "held_out": n, "constant": [factors],
                          "thresholds": {factor: median}, "provenance"}
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Subset
from tqdm.auto import tqdm

from ..compact import read_json
from ..data import get_dataset
from ..data.synthetic import OBJECT_FACTORS, SyntheticWorld
from ..files import write_json_atomic
from ..measure.block_profile import COMPANIONS, patch_eed, profile_measurements, profile_model
from ..measure.bootstrap import bootstrap_blocks
from ..measure.knn import POOLS, extract_features, knn_accuracy
from ..measure.pruning import prune_blocks, pruning_record
from ..models import PRETRAINED_DINO, pretrained_dino_vit_small
from ..presets import ProfileSettings, get_preset
from ..training.augment import eval_transform
from ..training.data import knn_image_sets
from ..training.run_config import RunConfig
from ..training.runs import RunDirectory
from .records import ProfileRecord, Provenance, load_profile_record, provenance, save_profile_record


PROFILE_SEED_OFFSET = 1000  # the profile images differ from the k-NN subsets drawn from the same seed


def profile_folder(run: RunDirectory, tokens: str, center: bool) -> Path:
    """``profiles/`` for all tokens, centred, else a named subfolder."""
    variant = ("" if tokens == "all" else tokens) + ("" if center else "-uncentred")
    return run.path / "profiles" / variant.strip("-") if variant else run.path / "profiles"


#: The measurement choices the paper leaves open, beside the default (all tokens, centred):
#: which tokens feed the covariance, and whether it is centred.
VARIANTS = (("cls", True), ("patch", True), ("mean", True), ("all", False))


def variant_label(tokens: str, center: bool) -> str:
    """``all tokens, centred``, ``cls, uncentred``, ...: a measurement's name in figures."""
    return f"{'all tokens' if tokens == 'all' else tokens}, {'centred' if center else 'uncentred'}"


def profile_images(config: RunConfig, images: int, root=None, download: bool = False, img_size: int | None = None) -> Subset:
    """A seeded subset of ``images`` of the run's held-out split at its input size (or ``img_size``)."""
    dataset = get_dataset(config.dataset, config.held_out_split, root=root, download=download,
                          transform=eval_transform(img_size or config.view.img_size), **config.dataset_options)
    if images > len(dataset):
        raise ValueError(f"asked for {images} profile images but the {config.held_out_split} split of "
                         f"{config.dataset} has {len(dataset)}; lower --images")
    return seeded_subset(dataset, images, config.seed)


def seeded_subset(dataset, images: int, seed: int) -> Subset:
    """``images`` of ``dataset`` drawn with ``seed``, offset from the k-NN subsets' draw."""
    generator = torch.Generator().manual_seed(seed + PROFILE_SEED_OFFSET)
    return Subset(dataset, torch.randperm(len(dataset), generator=generator)[:images].tolist())


def profile_settings(config: RunConfig) -> ProfileSettings:
    """The profile settings the run recorded, or for an older run its preset's."""
    return config.profile if config.profile is not None else get_preset(config.preset).profile


def profile_device(config: RunConfig) -> torch.device:
    """The device the run trained on, or the CPU, with a note, when it is not here."""
    if config.device == "cuda" and not torch.cuda.is_available():
        print(f"{config.dataset}: the run trained on a GPU and none is visible; profiling on the CPU.")
        return torch.device("cpu")
    return torch.device(config.device)


def measurement_provenance(config: RunConfig, n_images: int, n_tokens: int, device: torch.device) -> Provenance:
    """The :func:`~ib_tutorial.book.records.provenance` of a measurement of a run made now."""
    return provenance(preset=config.preset, config=config.to_dict(), dataset=config.dataset, n_images=n_images,
                      n_tokens=n_tokens, device=str(device))


def default_profile_count(config: RunConfig, root=None, download: bool = False) -> int:
    """The run's number of profile images, or with a note the whole held-out split when smaller
    (DTD's 144 test images of the 6-class subset)."""
    wanted = profile_settings(config).images
    split = len(get_dataset(config.dataset, config.held_out_split, root=root, download=download,
                            **config.dataset_options))
    if split < wanted:
        print(f"{config.dataset}: the {config.held_out_split} split has {split} images, fewer than the "
              f"{wanted} the run's profile settings ask for; profiling all {split}.")
        return split
    return wanted


def _is_done(path: Path, n_images: int, companions, bootstrapped: bool = False) -> bool:
    if not path.exists():
        return False
    try:
        record = load_profile_record(path)
    except ValueError:
        return False  # unreadable: measure again (the atomic write replaces it)
    return (record.profile.n_images == n_images and set(companions) <= set(record.profile.companions)
            and (record.bootstrap is not None or not bootstrapped))


def profile_run(run_dir: str | os.PathLike, tokens: str = "all", center: bool = True, images: int | None = None,
                companions=COMPANIONS, root=None, download: bool = False, device: str | torch.device | None = None,
                progress: bool = True) -> list[Path]:
    """Profile each saved teacher of ``run_dir`` with the run's :func:`profile_settings`; return
    the profile files. A centred measurement is bootstrapped over its images."""
    return _profile_teachers(run_dir, [(tokens, center)], images, companions, root, download, device,
                             progress)[(tokens, center)]


def profile_variants(run_dir: str | os.PathLike, root=None, download: bool = False, progress: bool = True
                     ) -> dict[str, list[Path]]:
    """:func:`profile_run` for every measurement of :data:`VARIANTS`, without companions."""
    paths = _profile_teachers(run_dir, VARIANTS, None, (), root, download, None, progress)
    return {variant_label(tokens, center): paths[(tokens, center)] for tokens, center in VARIANTS}


def _profile_teachers(run_dir: str | os.PathLike, measurements: Sequence[tuple[str, bool]], images: int | None,
                      companions, root, download: bool, device: str | torch.device | None, progress: bool
                      ) -> dict[tuple[str, bool], list[Path]]:
    """Every ``(tokens, center)`` of ``measurements`` not yet made, each teacher loaded once."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    settings = profile_settings(config)
    images = images or default_profile_count(config, root, download)
    device = torch.device(device) if device is not None else profile_device(config)
    epochs = run.backbone_epochs()
    folders = {measurement: profile_folder(run, *measurement) for measurement in measurements}
    bootstrap_centred = settings.replicates > 0  # the bootstrap's covariance is centred: none for the uncentred

    todo: dict[int, list[tuple[str, bool]]] = {}  # epoch -> what it still lacks
    for epoch in epochs:
        measured = [(tokens, center) for tokens, center in measurements if not _is_done(
                    folders[(tokens, center)] / f"{epoch}.json", images, companions, center and bootstrap_centred)]
        if measured:
            todo[epoch] = measured
    if todo:
        dataset = profile_images(config, images, root, download)
        loader = DataLoader(dataset, batch_size=settings.batch_size)
    for epoch, measured in tqdm(todo.items(), desc=f"profiling {run.path.name}", disable=not progress or not todo):  # no 0/0 bar
        model = run.load_backbone(epoch, device)
        profiles = profile_measurements(model, loader, measured, companions=companions, device=device,
                                        twonn_samples=settings.twonn_samples, seed=config.seed, progress=False)
        bootstrapped = [("tokens", tokens) for tokens, center in measured if center and bootstrap_centred]
        bootstraps = bootstrap_blocks(model, dataset, bootstrapped, settings.replicates, seed=config.seed,
                                      batch_size=settings.batch_size, device=device) if bootstrapped else {}
        for (tokens, center), profile in zip(measured, profiles):
            bootstrap = bootstraps.get(("tokens", tokens)) if center else None
            origin = measurement_provenance(config, profile.n_images, profile.n_tokens, device)
            record = ProfileRecord(label=f"{config.dataset} {config.objective.network}, epoch {epoch}", epoch=epoch,
                                   profile=profile, provenance=origin,
                                   bootstrap=bootstrap.stored() if bootstrap is not None else None)
            save_profile_record(folders[(tokens, center)] / f"{epoch}.json", record)
    return {measurement: [folder / f"{e}.json" for e in epochs] for measurement, folder in folders.items()}


def raw_patch_eed(run_dir: str | os.PathLike, images: int | None = None, root=None, download: bool = False
                  ) -> tuple[float, int]:
    r""":math:`N_\mathrm{eff}` of the raw pixel patches of the run's profile images and their
    dimension :math:`3p^2` (:func:`~ib_tutorial.measure.block_profile.patch_eed`)."""
    config = RunDirectory(run_dir).read_config()
    images = images or default_profile_count(config, root, download)
    loader = DataLoader(profile_images(config, images, root, download), batch_size=profile_settings(config).batch_size)
    return patch_eed(loader, config.view.patch_size)


def load_run_profiles(run_dir: str | os.PathLike, tokens: str = "all", center: bool = True) -> list[ProfileRecord]:
    """The profile records of a run, by epoch."""
    folder = profile_folder(RunDirectory(run_dir), tokens, center)
    paths = sorted(folder.glob("*.json"), key=lambda p: int(p.stem))
    return [load_profile_record(p) for p in paths]


PRETRAINED_SIZE = 224  # the input size timm's DINO ViT-S/16 was trained at


def profile_pretrained(run_dir: str | os.PathLike, images: int | None = None, root=None, download: bool = False
                       ) -> Path | None:
    """Profile timm's pretrained DINO ViT-S/16 on the run's profile images at 224 px into
    ``controls/pretrained-dino.json``; None when its weights cannot be fetched."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    images = images or default_profile_count(config, root, download)
    path = run.path / "controls" / "pretrained-dino.json"
    if _is_done(path, images, ()):
        return path
    model = pretrained_dino_vit_small()
    if model is None:
        return None
    device = profile_device(config)
    loader = DataLoader(profile_images(config, images, root, download, img_size=PRETRAINED_SIZE),
                        batch_size=profile_settings(config).batch_size)
    profile = profile_model(model.to(device), loader, device=device, progress=False)
    # The control's own model and input size replace the run's in its provenance.
    control_config = {**config.to_dict(), "model": PRETRAINED_DINO, "img_size": PRETRAINED_SIZE}
    origin = provenance(preset=config.preset, config=control_config, dataset=config.dataset,
                        n_images=profile.n_images, n_tokens=profile.n_tokens, device=str(device))
    save_profile_record(path, ProfileRecord(label=f"pretrained {PRETRAINED_DINO}", epoch=None, profile=profile,
                                            provenance=origin))
    return path


def prune_run(run_dir, epoch: int | None = None, pool: str = "mean", root=None, download: bool = False) -> Path:
    """The pruning curves of the teacher of ``epoch`` (default: the last) on the run's k-NN images,
    into ``pruning/<pool>-<epoch>.json`` (skipped when it exists)."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    epoch = run.backbone_epochs()[-1] if epoch is None else epoch
    path = run.path / "pruning" / f"{pool}-{epoch}.json"
    if path.exists():
        return path
    device = profile_device(config)
    train_set, held_out_set = knn_image_sets(config, root, download)
    classes = len(train_set.dataset.classes)
    curves = prune_blocks(run.load_backbone(epoch, device), train_set, held_out_set, classes, pool,
                          k_neighbours=config.train.knn_k, temperature=config.train.knn_temperature, device=device)
    origin = measurement_provenance(config, len(train_set) + len(held_out_set), curves[0].n_tokens, device)
    write_json_atomic(path, {"epoch": epoch, **pruning_record(curves, pool, classes, origin.to_dict())})
    return path


FILE = "factors.json"
SYNTHETIC_WORLDS = ("synthetic-objects", "synthetic-mix", "synthetic-textures")


def has_object_factors(run_dir) -> bool:
    """Whether a run trained on a synthetic world with objects (texture weight under 1)."""
    config = RunDirectory(run_dir).read_config()
    if config.dataset not in SYNTHETIC_WORLDS:
        return False
    return get_dataset(config.dataset, "val", **{**config.dataset_options, "size": 0}).texture_weight < 1


def factor_values(subset) -> dict[str, np.ndarray]:
    """Each of :data:`~ib_tutorial.data.synthetic.OBJECT_FACTORS` for every image of a subset of
    an object world, in the subset's order."""
    world = subset.dataset
    if not isinstance(world, SyntheticWorld) or world.texture_weight >= 1:
        raise ValueError("the images are not a synthetic world with objects (texture_weight < 1): they have no object factors")
    drawn = [world.object_factors(int(index)) for index in subset.indices]
    return {name: np.array([factors[name] for factors in drawn]) for name in OBJECT_FACTORS}


@dataclass(frozen=True)
class MedianSplits:
    """Each varying factor's split at its median over the training images (``thresholds``);
    ``train`` and ``held_out``: each image's side (True: above); ``constant``: factors not split."""

    thresholds: dict[str, float]
    constant: list[str]
    train: dict[str, torch.Tensor]
    held_out: dict[str, torch.Tensor]

    @classmethod
    def of(cls, train_values: dict[str, np.ndarray], held_out_values: dict[str, np.ndarray]) -> MedianSplits:
        constant = [name for name, values in train_values.items() if np.ptp(values) == 0]
        thresholds = {name: float(np.median(values)) for name, values in train_values.items() if name not in constant}
        return cls(thresholds, constant, {name: torch.as_tensor(train_values[name] > cut) for name, cut in thresholds.items()},
                   {name: torch.as_tensor(held_out_values[name] > cut) for name, cut in thresholds.items()})

    def chance(self) -> dict[str, float]:
        """The larger side's share of the held-out images, in percent."""
        return {name: 100 * max(share, 1 - share) for name, share in
                ((name, float(side.float().mean())) for name, side in self.held_out.items())}

    def accuracies(self, train_features: torch.Tensor, held_out_features: torch.Tensor, k: int,
                   temperature: float) -> dict[str, float]:
        """k-NN top-1 (percent) of each split from L2-normalised features."""
        return {name: knn_accuracy(train_features, self.train[name].long(), held_out_features,
                                   self.held_out[name].long(), 2, k, temperature)["top1"] for name in self.thresholds}


def read_factors(run_dir) -> dict | None:
    """What :func:`measure_factors` wrote in ``run_dir``, or None."""
    path = Path(run_dir) / FILE
    return read_json(path) if path.exists() else None


def measure_factors(run_dir, epochs: list[int] | None = None, root=None, download: bool = False,
                    progress: bool = True) -> Path:
    """k-NN accuracy of each factor's median split, and of the class, of the run's networks at
    ``epochs`` (default: every saved one), into ``factors.json``; epochs already there are kept."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    saved = run.backbone_epochs()
    epochs = saved if epochs is None else epochs
    missing = sorted(set(epochs) - set(saved))
    if missing:
        raise ValueError(f"{run.path} saved no network at epoch {missing}; it saved epochs {saved}")
    path = run.path / FILE
    record = read_factors(run.path) or {"epochs": {}}
    todo = [epoch for epoch in epochs if str(epoch) not in record["epochs"]]
    if not todo:
        return path
    train_set, held_out_set = knn_image_sets(config, root, download)
    splits = MedianSplits.of(factor_values(train_set), factor_values(held_out_set))
    device = profile_device(config)
    classes = len(train_set.dataset.classes)
    k, temperature = config.train.knn_k, config.train.knn_temperature
    extract = dict(device=device, progress=progress, pools=POOLS)
    images = len(train_set) + len(held_out_set)
    record |= {"chance": splits.chance(), "held_out": len(held_out_set), "constant": splits.constant,
               "thresholds": splits.thresholds,
               "provenance": measurement_provenance(config, images, images, device).to_dict()}
    for epoch in todo:
        backbone = run.load_backbone(epoch, device)
        train_features, train_classes = extract_features(backbone, train_set, **extract)
        held_out_features, held_out_classes = extract_features(backbone, held_out_set, **extract)
        record["epochs"][str(epoch)] = {
            pool: {"class": knn_accuracy(train_features[pool], train_classes, held_out_features[pool], held_out_classes,
                                         classes, k, temperature)["top1"],
                   **splits.accuracies(train_features[pool], held_out_features[pool], k, temperature)}
            for pool in POOLS}
        record["epochs"] = dict(sorted(record["epochs"].items(), key=lambda item: int(item[0])))
        write_json_atomic(path, record)  # after each epoch: a stopped measurement keeps what it finished
    return path
