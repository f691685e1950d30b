"""Profile a published, converged ViT on a dataset's held-out profile images.

:func:`profile_published` feeds any timm ViT with its published weights
(:func:`ib_tutorial.models.load_pretrained`) the same seeded held-out images the runs of a preset
are profiled on, at the model's own input size and normalisation, and measures every block with
the default measurement and each variant (:data:`MEASUREMENTS`) into schema-valid records whose
provenance also names the model, its weights' source and SHA-256, and its input:
``<out>/<dataset spec folder>/<model>/profiles/all-centred.json``, ``.../cls-centred.json``, ...

:func:`prune_published` prunes the same network spectrally, as a run's last teacher is pruned,
into ``<model>/pruning/<pool>.json``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader

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


def model_transform(model: torch.nn.Module) -> tuple[transforms.Compose, dict]:
    """The model's own input (timm's data config) and what it is: resize the short side with its
    interpolation, centre-crop, normalise; no ``crop_pct`` zoom, as for the runs' profiles."""
    import timm
    from torchvision import transforms

    config = timm.data.resolve_model_data_config(model)
    size = model.patch_embed.img_size[-1]  # the size it was built for (the data config keeps the published one)
    interpolation = transforms.InterpolationMode(config.get("interpolation", "bicubic"))
    transform = transforms.Compose([transforms.Resize(size, interpolation=interpolation), transforms.CenterCrop(size),
                                    transforms.ToTensor(), transforms.Normalize(config["mean"], config["std"])])
    return transform, {"input_size": size, "interpolation": interpolation.value,
                       "mean": list(config["mean"]), "std": list(config["std"])}


def _published_model(name: str, weights, img_size: int | None) -> tuple[torch.nn.Module, dict]:
    """The model, and where its weights came from with their SHA-256 (the file's bytes, or, from
    the hub, the loaded state dict's)."""
    model = load_pretrained(name, weights, img_size)
    if weights is not None:
        return model, {"weights": Path(weights).name, "weights_sha256": file_sha256(weights)}
    import timm

    digest = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        digest.update(key.encode() + tensor.detach().cpu().contiguous().numpy().tobytes())
    return model, {"weights": f"hub:{timm.models.get_pretrained_cfg(name).hf_hub_id}",
                   "weights_sha256": digest.hexdigest()}


def profile_published(name: str, spec: str | RunSpec, out: str | os.PathLike, weights: str | os.PathLike | None = None,
                      preset: str | Preset | None = None, images: int | None = None, root=None,
                      download: bool = False, progress: bool = True, img_size: int | None = None) -> list[Path]:
    """Profile the published timm model ``name`` on dataset ``spec``'s held-out profile images
    with every measurement of :data:`MEASUREMENTS`; return the record files.

    ``spec`` is ``NAME[:KEY=VALUE,...]`` (a run spec's overrides do not apply); ``weights`` a
    local state dict (else the hub); ``preset`` gives the images (``images``, default the
    preset's, or the whole split when smaller), their seed and the device; ``img_size`` the
    input side (default the published one), whose records go to ``<name>@<size>px/``.
    """
    chosen = preset if isinstance(preset, Preset) else get_preset(preset)
    spec = RunSpec.of(spec)
    paths = published_paths(out, name, spec, img_size)
    if all(path.exists() for path in paths):  # finished work is never redone
        return paths
    model, source = _published_model(name, weights, img_size)
    device = resolve_device(chosen)
    transform, model_input = model_transform(model)
    dataset = get_dataset(spec.dataset, held_out_split(spec.dataset, spec.options), root=root, download=download,
                          transform=transform, **spec.options)
    # The same indices as the runs' profiles (run_profiles.profile_images).
    subset = seeded_subset(dataset, min(images or chosen.profile.images, len(dataset)), chosen.seed)
    loader = DataLoader(subset, batch_size=chosen.profile.batch_size)
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
                    img_size: int | None = None, pool: str = "mean") -> Path:
    """The spectral pruning curves (:func:`~ib_tutorial.measure.pruning.prune_blocks`) of the
    published ``name`` on dataset ``spec`` at the model's own input, on the seeded training and
    held-out images a run of ``preset`` compares in its k-NN (default counts: the preset's).
    Skipped when ``<out>/<spec folder>/<name>/pruning/<pool>.json`` exists."""
    chosen = preset if isinstance(preset, Preset) else get_preset(preset)
    spec = RunSpec.of(spec)
    path = published_paths(out, name, spec, img_size)[0].parent.parent / "pruning" / f"{pool}.json"
    if path.exists():
        return path
    model, source = _published_model(name, weights, img_size)
    device = resolve_device(chosen)
    transform, model_input = model_transform(model)
    train_set, held_out_set = knn_subsets(
        spec.dataset, spec.options, held_out_split(spec.dataset, spec.options), transform,
        chosen.train.knn_train_images if train_images is None else train_images,
        chosen.train.knn_eval_images if eval_images is None else eval_images, chosen.seed, root, download)
    classes = len(train_set.dataset.classes)
    curves = prune_blocks(model.to(device), train_set, held_out_set, classes, pool,
                          k_neighbours=chosen.train.knn_k, temperature=chosen.train.knn_temperature, device=device)
    origin = published_provenance(name, spec, source, model_input, chosen, len(train_set) + len(held_out_set),
                                  curves[0].n_tokens, device)
    write_json_atomic(path, pruning_record(curves, pool, classes, origin.to_dict()))
    return path


def published_provenance(name: str, spec: RunSpec, source: dict, model_input: dict, preset: Preset, n_images: int,
                         n_tokens: int, device: torch.device) -> Provenance:
    """A run's provenance (:func:`~ib_tutorial.book.records.provenance`) for a published model,
    hashing and naming the model, its weights' source, its input and the dataset spec."""
    config = {"model": name, **source, **model_input, "dataset": spec.dataset_spec}
    origin = provenance(preset=preset.name, config=config, dataset=spec.dataset, n_images=n_images, n_tokens=n_tokens,
                        device=str(device))
    return dataclasses.replace(origin, model=name, dataset_spec=spec.dataset_spec, **source, **model_input)


def converged_folder(root=None) -> Path:
    """Where ``ib-tutorial profile-pretrained`` writes by default, and the chapter
    "Converged ViTs" looks besides the committed bundles."""
    return data_root(root) / "converged"


def published_paths(out: str | os.PathLike, name: str, spec: RunSpec, img_size: int | None = None) -> list[Path]:
    """Where :func:`profile_published` writes each measurement of :data:`MEASUREMENTS`."""
    folder = Path(out) / spec_folder(spec.dataset_spec) / (f"{name}@{img_size}px" if img_size else name) / "profiles"
    return [folder / f"{tokens}-{'centred' if center else 'uncentred'}.json" for tokens, center in MEASUREMENTS]


def load_published(folder: str | os.PathLike) -> dict[RunSpec, dict[str, dict[str, ProfileRecord]]]:
    """The records :func:`profile_published` wrote under ``folder``: dataset spec -> model
    -> measurement (``"cls, uncentred"``) -> record."""
    found: dict[RunSpec, dict[str, dict[str, ProfileRecord]]] = {}
    for path in sorted(Path(folder).glob("*/*/profiles/*.json")):
        record = load_profile_record(path)
        tokens, _, center = path.stem.partition("-")
        model, spec = record.provenance.model, RunSpec.parse(record.provenance.dataset_spec)
        found.setdefault(spec, {}).setdefault(model, {})[variant_label(tokens, center == "centred")] = record
    return found
