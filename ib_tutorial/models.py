"""The backbone: timm's ViT-Small (D = 384, 12 blocks, 6 heads), or ViT-Tiny (D = 192, 12
blocks, 3 heads) for CPU budgets, at any input and patch size."""
from __future__ import annotations

import timm
import torch

#: The ViT widths the package builds: the paper's ViT-Small, and ViT-Tiny (a quarter of its
#: compute) for the CPU tier. Both have 12 blocks, so block profiles line up.
ARCHITECTURES: dict[str, dict[str, int]] = {
    "vit_small": dict(embed_dim=384, depth=12, num_heads=6),
    "vit_tiny": dict(embed_dim=192, depth=12, num_heads=3),
}
VIT_SMALL = ARCHITECTURES["vit_small"]
# Their names by width, for captions and tables (the width is in every profile).
MODEL_NAMES = {384: "ViT-S", 192: "ViT-Ti"}


def build_vit(arch: str = "vit_small", img_size: int = 224, patch_size: int = 16,
              drop_path_rate: float = 0.0) -> torch.nn.Module:
    """A randomly initialised ViT of one of :data:`ARCHITECTURES`, with no classification head.

    Args:
        arch: ``vit_small`` (the paper's, D = 384) or ``vit_tiny`` (D = 192).
        img_size: the side of the (square) input the position embedding is built for.
        patch_size: the side of each patch; tokens per image = (img_size / patch_size)^2 + 1.
        drop_path_rate: stochastic-depth rate (0 for measurement, > 0 for training).

    ``dynamic_img_size=True`` interpolates the position embedding, so the same model
    accepts the smaller local crops of multi-crop training.
    """
    if arch not in ARCHITECTURES:
        raise ValueError(f"Unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}.")
    if img_size % patch_size:
        raise ValueError(f"img_size {img_size} must be a multiple of patch_size {patch_size}")
    return timm.create_model(
        f"{arch}_patch16_224",
        pretrained=False,
        num_classes=0,
        img_size=img_size,
        patch_size=patch_size,
        drop_path_rate=drop_path_rate,
        dynamic_img_size=True,
    )


def vit_small(img_size: int = 224, patch_size: int = 16, drop_path_rate: float = 0.0) -> torch.nn.Module:
    """The paper's ViT-Small: :func:`build_vit` with ``arch="vit_small"``."""
    return build_vit("vit_small", img_size, patch_size, drop_path_rate)


def embed_tokens(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    """The tokens [B, T, D] that block 0 of a timm ``VisionTransformer`` receives: patch
    embedding, class token and position embedding, patch dropout, pre-norm.

    timm exposes no public call for this step, so this is the one place that relies on
    its internals (``_pos_embed``, ``patch_drop``, ``norm_pre``); a test checks that these
    tokens, run through the blocks and the final norm, give ``forward_features``.
    """
    tokens = model.patch_embed(images)
    tokens = model._pos_embed(tokens)
    tokens = model.patch_drop(tokens)
    return model.norm_pre(tokens)


PRETRAINED_DINO = "vit_small_patch16_224.dino"


def pretrained_dino_vit_small() -> torch.nn.Module | None:
    """timm's DINO ViT-S/16 (Caron et al. 2021) with its published weights, or ``None``
    with a printed explanation when the weights cannot be fetched (e.g. offline).

    This is the reference control: a converged DINO ViT-S trained on ImageNet at 224 px.
    Weights are cached by the Hugging Face hub client after the first download.
    """
    try:
        return timm.create_model(PRETRAINED_DINO, pretrained=True, num_classes=0)
    except Exception as error:  # any hub/network failure: the control is optional
        print(f"Pretrained {PRETRAINED_DINO} is not available here ({type(error).__name__}: {error}). "
              "It needs network access to the Hugging Face hub once; connect and rerun, or skip this control.")
        return None
