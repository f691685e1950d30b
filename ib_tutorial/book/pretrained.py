"""Profile a published, converged ViT on a dataset's held-out profile images.

:func:`profile_published` loads any timm ViT with its published weights
(:func:`ib_tutorial.models.load_pretrained`: a local file, or the hub), feeds it the same
seeded held-out images the runs of a preset are profiled on, at the model's own input
size and normalisation (timm's data config), and measures every block with the default
measurement (all tokens, centred, with the companions) and each variant the paper leaves
open (:data:`~ib_tutorial.book.run_profiles.VARIANTS`). Each profile is a
schema-valid record (:mod:`ib_tutorial.book.records`) whose provenance also names
the model, where its weights came from and their SHA-256, and the input it was fed:

``<out>/<dataset spec>/<model>/profiles/all-centred.json``, ``.../cls-centred.json``, ...
(the spec's folder as a run's: ``dtd:folder=dtd`` becomes ``dtd_folder=dtd``).

:func:`prune_published` prunes the same network spectrally, as a run's last teacher is
pruned (:mod:`~ib_tutorial.book.run_profiles`), into ``<model>/pruning/<pool>.json``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader, Subset

from ..data import get_dataset, held_out_split
from ..data.spec import spec_folder
from ..files import data_root, write_json_atomic
from ..measure.block_profile import COMPANIONS, profile_measurements
from ..measure.pruning import prune_blocks, pruning_record
from ..models import load_pretrained
from ..presets import Preset, get_preset, resolve_device
from ..training.data import knn_subsets
from ..training.run_config import RunSpec
from .records import ProfileRecord, Provenance, load_profile_record, provenance, save_profile_record
from .run_profiles import VARIANTS, seeded_subset, variant_label

if TYPE_CHECKING:  # imported where a model is fed (:mod:`ib_tutorial.models` says why)
    from torchvision import transforms

#: The default measurement first, then the variants.
MEASUREMENTS = (("all", True), *VARIANTS)


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file, read in pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for piece in iter(lambda: handle.read(1 << 20), b""):
            digest.update(piece)
    return digest.hexdigest()


def state_dict_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over a model's tensors by name: the weights' fingerprint when no file is at hand."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def model_transform(model: torch.nn.Module) -> tuple[transforms.Compose, dict]:
    """The model's own input: resize the short side to its input size with its
    interpolation, centre-crop, normalise with its mean and std (timm's data config). The
    whole square image is kept (no ``crop_pct`` zoom), as for the runs' profiles."""
    import timm
    from torchvision import transforms

    config = timm.data.resolve_model_data_config(model)
    size = model.patch_embed.img_size[-1]  # the size it was built for (the data config keeps the published one)
    interpolation = transforms.InterpolationMode(config.get("interpolation", "bicubic"))
    transform = transforms.Compose([transforms.Resize(size, interpolation=interpolation), transforms.CenterCrop(size),
                                    transforms.ToTensor(), transforms.Normalize(config["mean"], config["std"])])
    return transform, {"input_size": size, "interpolation": interpolation.value,
                       "mean": list(config["mean"]), "std": list(config["std"])}


def held_out_profile_images(spec: RunSpec, preset: Preset, transform, images: int | None = None, root=None,
                            download: bool = False) -> Subset:
    """The seeded held-out images a run of ``spec`` at ``preset`` is profiled on (the same
    indices, as :func:`~ib_tutorial.book.run_profiles.profile_images` draws them),
    through ``transform``; all of them when the split is smaller than ``images``."""
    dataset = get_dataset(spec.dataset, held_out_split(spec.dataset, spec.options), root=root, download=download,
                          transform=transform, **spec.options)
    return seeded_subset(dataset, min(images or preset.profile.images, len(dataset)), preset.seed)


def profile_published(name: str, spec: str | RunSpec, out: str | os.PathLike, weights: str | os.PathLike | None = None,
                      preset: str | Preset | None = None, images: int | None = None, root=None,
                      download: bool = False, device: str | torch.device | None = None,
                      progress: bool = True, img_size: int | None = None) -> list[Path]:
    """Profile the published ``name`` (a timm model) on dataset ``spec``'s held-out profile
    images with every measurement of :data:`MEASUREMENTS`; return the record files.

    Args:
        name: a timm model name with published weights, e.g. ``vit_small_patch16_224.dino``.
        spec: the dataset, ``NAME[:KEY=VALUE,...]`` (e.g. ``dtd:folder=dtd``; a run's
            :class:`~ib_tutorial.training.run_config.RunSpec`, whose overrides do not apply).
        out: the results folder; records go to ``<out>/<spec folder>/<name>/profiles/``.
        weights: a local state dict of ``name`` (else the hub, see
            :func:`~ib_tutorial.models.load_pretrained`).
        preset: whose profile images (count, seed, batch size) and device (default: the
            environment's, else ``ci``).
        images: profile images (default: the preset's, or the whole split when smaller).
        img_size: the input side (default: the model's published one); e.g. 224 for DINOv2,
            published at 518 px. Records of another size go to ``<name>@<size>px/``.
    """
    chosen = get_preset(preset) if not isinstance(preset, Preset) else preset
    spec = RunSpec.of(spec)
    paths = published_paths(out, name, spec, img_size)
    if all(path.exists() for path in paths):  # finished work is never redone
        return paths
    model = load_pretrained(name, weights, img_size)
    device = torch.device(device) if device is not None else resolve_device(chosen)
    transform, model_input = model_transform(model)
    loader = DataLoader(held_out_profile_images(spec, chosen, transform, images, root, download),
                        batch_size=chosen.profile.batch_size)
    source = weights_source(name, weights, model)
    model = model.to(device)
    # The default measurement with its companions, then every variant from one more pass.
    passes = dict(device=device, twonn_samples=chosen.profile.twonn_samples, seed=chosen.seed, progress=progress)
    profiles = [*profile_measurements(model, loader, MEASUREMENTS[:1], companions=COMPANIONS, **passes),
                *profile_measurements(model, loader, MEASUREMENTS[1:], **passes)]
    for path, profile in zip(paths, profiles):
        origin = published_provenance(name, spec, source, model_input, chosen, profile.n_images, profile.n_tokens, device)
        save_profile_record(path, ProfileRecord(label=f"{spec.dataset_spec}: pretrained {name}", epoch=None,
                                                profile=profile, provenance=origin))
    return paths


def prune_published(name: str, spec: str | RunSpec, out: str | os.PathLike, weights: str | os.PathLike | None = None,
                    preset: str | Preset | None = None, train_images: int | None = None,
                    eval_images: int | None = None, root=None, download: bool = False,
                    device: str | torch.device | None = None, img_size: int | None = None, pool: str = "mean") -> Path:
    """The spectral pruning curves (:func:`~ib_tutorial.measure.pruning.prune_blocks`) of the
    published ``name`` on dataset ``spec``, at the model's own input: directions fitted on
    the tokens of seeded training images, k-NN of seeded held-out images against them, the
    images a run of ``preset`` compares in its k-NN (``train_images`` and ``eval_images``
    default to the preset's ``knn_train_images`` and ``knn_eval_images``; all when None).
    Written to ``<out>/<spec folder>/<name>/pruning/<pool>.json``, whose provenance names the
    model and its weights as the profiles' does; skipped when that file exists."""
    chosen = get_preset(preset) if not isinstance(preset, Preset) else preset
    spec = RunSpec.of(spec)
    path = published_paths(out, name, spec, img_size)[0].parent.parent / "pruning" / f"{pool}.json"
    if path.exists():
        return path
    model = load_pretrained(name, weights, img_size)
    device = torch.device(device) if device is not None else resolve_device(chosen)
    transform, model_input = model_transform(model)
    train_set, held_out_set = knn_subsets(
        spec.dataset, spec.options, held_out_split(spec.dataset, spec.options), transform,
        chosen.train.knn_train_images if train_images is None else train_images,
        chosen.train.knn_eval_images if eval_images is None else eval_images, chosen.seed, root, download)
    classes = len(train_set.dataset.classes)
    source = weights_source(name, weights, model)
    curves = prune_blocks(model.to(device), train_set, held_out_set, classes, pool,
                          k_neighbours=chosen.train.knn_k, temperature=chosen.train.knn_temperature, device=device)
    origin = published_provenance(name, spec, source, model_input, chosen, len(train_set) + len(held_out_set),
                                  curves[0].n_tokens, device)
    write_json_atomic(path, pruning_record(curves, pool, classes, origin.to_dict()))
    return path


def published_provenance(name: str, spec: RunSpec, source: dict, model_input: dict, preset: Preset, n_images: int,
                         n_tokens: int, device: torch.device) -> Provenance:
    """The provenance of a published model's measurement on ``spec``: a run's
    (:func:`~ib_tutorial.book.records.provenance`), hashing the model, its weights'
    ``source`` (:func:`weights_source`), its input (:func:`model_transform`) and the dataset
    spec as the settings, and naming each of them too."""
    config = {"model": name, **source, **model_input, "dataset": spec.dataset_spec}
    origin = provenance(preset=preset.name, config=config, dataset=spec.dataset, n_images=n_images, n_tokens=n_tokens,
                        device=str(device))
    return dataclasses.replace(origin, model=name, dataset_spec=spec.dataset_spec, **source, **model_input)


def weights_source(name: str, weights: str | os.PathLike | None, model: torch.nn.Module) -> dict:
    """Where a published model's weights came from, with their SHA-256: the file's bytes, or,
    from the hub, the loaded state dict's."""
    if weights is not None:
        return {"weights": Path(weights).name, "weights_sha256": file_sha256(weights)}
    import timm

    return {"weights": f"hub:{timm.models.get_pretrained_cfg(name).hf_hub_id}", "weights_sha256": state_dict_sha256(model)}


def converged_folder(root=None) -> Path:
    """Where ``ib-tutorial profile-pretrained`` writes by default, and the chapter
    "Converged ViTs" looks besides the committed bundles: ``<data root>/converged``."""
    return data_root(root) / "converged"


def published_paths(out: str | os.PathLike, name: str, spec: RunSpec, img_size: int | None = None) -> list[Path]:
    """Where :func:`profile_published` writes each measurement of :data:`MEASUREMENTS`."""
    folder = Path(out) / spec_folder(spec.dataset_spec) / (f"{name}@{img_size}px" if img_size else name) / "profiles"
    return [folder / f"{tokens}-{'centred' if center else 'uncentred'}.json" for tokens, center in MEASUREMENTS]


def load_published(folder: str | os.PathLike) -> dict[RunSpec, dict[str, dict[str, ProfileRecord]]]:
    """The records :func:`profile_published` wrote under ``folder``: dataset spec -> model
    -> measurement (``"all tokens, centred"``, ``"cls, uncentred"``, ...) -> record; empty
    when there is no such folder."""
    found: dict[RunSpec, dict[str, dict[str, ProfileRecord]]] = {}
    for path in sorted(Path(folder).glob("*/*/profiles/*.json")):
        record = load_profile_record(path)
        tokens, _, center = path.stem.partition("-")
        model, spec = record.provenance.model, RunSpec.parse(record.provenance.dataset_spec)
        found.setdefault(spec, {}).setdefault(model, {})[variant_label(tokens, center == "centred")] = record
    return found
