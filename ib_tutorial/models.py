"""The backbone: timm's ViT-Small (D = 384, 6 heads), or ViT-Tiny (D = 192, 3 heads) for CPU
budgets, both of 12 blocks, at any input and patch size.

timm is imported only where a network is built or its weights read: with torchvision it costs
about two seconds, which a chapter that only reads results would otherwise pay."""
from __future__ import annotations

import os
from pathlib import Path

import torch

#: The ViT widths the package builds; both have 12 blocks, so block profiles line up.
ARCHITECTURES: dict[str, dict[str, int]] = {
    "vit_small": dict(embed_dim=384, depth=12, num_heads=6),
    "vit_tiny": dict(embed_dim=192, depth=12, num_heads=3),
}
VIT_SMALL = ARCHITECTURES["vit_small"]
# Their names by width, for captions and tables (the width is in every profile).
MODEL_NAMES = {384: "ViT-S", 192: "ViT-Ti"}


def build_vit(arch: str = "vit_small", img_size: int = 224, patch_size: int = 16,
              drop_path_rate: float = 0.0) -> torch.nn.Module:
    """A randomly initialised ViT of :data:`ARCHITECTURES`, with no classification head, for
    square inputs of ``img_size``; the position embedding is interpolated, so it accepts the
    smaller local crops too. ``drop_path_rate`` is the stochastic-depth rate (0 to measure)."""
    import timm

    if arch not in ARCHITECTURES:
        raise ValueError(f"Unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}.")
    if img_size % patch_size:
        raise ValueError(f"img_size {img_size} must be a multiple of patch_size {patch_size}")
    return timm.create_model(f"{arch}_patch16_224", pretrained=False, num_classes=0, img_size=img_size,
                             patch_size=patch_size, drop_path_rate=drop_path_rate, dynamic_img_size=True)


def vit_small(img_size: int = 224, patch_size: int = 16, drop_path_rate: float = 0.0) -> torch.nn.Module:
    """The paper's ViT-Small: :func:`build_vit` with ``arch="vit_small"``."""
    return build_vit("vit_small", img_size, patch_size, drop_path_rate)


PRETRAINED_DINO = "vit_small_patch16_224.dino"

#: Converged ViT-S networks with published weights (timm names): DINO at patch 16 and 8,
#: supervised DeiT-S and ViT-S (AugReg), and DINOv2 at patch 14.
PUBLISHED_VIT_SMALL = (
    PRETRAINED_DINO,
    "vit_small_patch8_224.dino",
    "deit_small_patch16_224.fb_in1k",
    "vit_small_patch16_224.augreg_in21k_ft_in1k",
    "vit_small_patch14_dinov2.lvd142m",
)

#: Input sides at which the book profiles a published model other than its published one
#: (DINOv2's 518 px), so that every network sees the same images at the same size.
PROFILE_IMG_SIZE = {"vit_small_patch14_dinov2.lvd142m": 224}


class PretrainedUnavailable(RuntimeError):
    """The published weights of a model could be neither read from a file nor fetched."""


def load_pretrained(name: str, weights: str | os.PathLike | None = None, img_size: int | None = None) -> torch.nn.Module:
    """timm's ``name`` with its published weights and no classification head, from ``weights``
    (a local ``.pth``/``.bin``/``.safetensors`` state dict) or else the Hugging Face hub, for
    inputs of ``img_size`` where given; :class:`PretrainedUnavailable` where the file does not
    hold ``name``'s weights, or there is no file and the hub cannot be reached."""
    import timm

    if not timm.is_model(name.split(".")[0]):
        raise ValueError(f"timm knows no model {name!r}; ViT-S networks with published weights: "
                         f"{', '.join(PUBLISHED_VIT_SMALL)}")
    sized = {"img_size": img_size} if img_size else {}
    if weights is not None:
        path = Path(weights)
        if not path.is_file():
            raise FileNotFoundError(f"no weights file {path}")
        _check_state_dict(path, name)
        try:
            return timm.create_model(name, pretrained=True, num_classes=0, pretrained_cfg_overlay={"file": str(path)},
                                     **sized)
        except (RuntimeError, KeyError, ValueError) as error:  # shapes or names of another architecture
            raise PretrainedUnavailable(f"{path} does not hold the weights of {name}: {_mismatch(error)}") from None
    try:
        return timm.create_model(name, pretrained=True, num_classes=0, **sized)
    except Exception as error:  # any hub or network failure: say what was tried and how to get the file
        hub = timm.models.get_pretrained_cfg(name)
        where = f"the Hugging Face hub repository {hub.hf_hub_id}" if hub and hub.hf_hub_id else "timm's download address"
        raise PretrainedUnavailable(
            f"the published weights of {name} could not be fetched from {where} "
            f"({type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else 'no detail'}). "
            f"On a machine with a network, `timm.create_model({name!r}, pretrained=True)` caches them; "
            f"or save `model.state_dict()` there with torch.save and pass the file as --weights FILE.") from None


def _check_state_dict(path: Path, name: str) -> None:
    """Raise :class:`PretrainedUnavailable` unless ``path`` holds tensors by name, read as timm
    reads a weights file (``torch.load`` with ``weights_only=True``, or safetensors)."""
    import timm

    try:
        state = timm.models.load_state_dict(str(path))
        readable = all(isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items())
    except Exception:  # not a zip or pickle, objects that are not tensors, not a mapping
        readable = False
    if not readable:
        raise PretrainedUnavailable(
            f"{path} is not a state dict: the file must hold the weights of {name} by name and nothing else, as "
            f"`torch.save(model.state_dict(), FILE)` writes them for `model = timm.create_model({name!r}, "
            "pretrained=True)` on a machine with a network.")


def _mismatch(error: Exception, shown: int = 4) -> str:
    """The first ``shown`` lines of a failed ``load_state_dict``, each cut to a readable
    length, and how many more there are."""
    lines = [line.strip() for line in str(error).strip().splitlines()]
    details = [line.rstrip(". ") if len(line) <= 300 else line[:300] + " ..." for line in lines[1:] if line] or lines[:1]
    more = f"; and {len(details) - shown} more" if len(details) > shown else ""
    return "; ".join(details[:shown]) + more


def pretrained_dino_vit_small() -> torch.nn.Module | None:
    """timm's DINO ViT-S/16 (Caron et al. 2021) with its published weights, the converged
    reference; ``None``, with a printed explanation, when they cannot be fetched."""
    try:
        return load_pretrained(PRETRAINED_DINO)
    except PretrainedUnavailable as error:  # the control is optional
        print(f"Pretrained {PRETRAINED_DINO} is not available here: {error}")
        return None
