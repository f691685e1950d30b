"""The backbone: timm's ViT-Small (D = 384, 12 blocks, 6 heads) at any input and patch size."""
from __future__ import annotations

import timm
import torch

VIT_SMALL = dict(embed_dim=384, depth=12, num_heads=6)


def vit_small(img_size: int = 224, patch_size: int = 16, drop_path_rate: float = 0.0) -> torch.nn.Module:
    """A randomly initialised ViT-Small with no classification head.

    Args:
        img_size: the side of the (square) input the position embedding is built for.
        patch_size: the side of each patch; tokens per image = (img_size / patch_size)^2 + 1.
        drop_path_rate: stochastic-depth rate (0 for measurement, > 0 for training).

    ``dynamic_img_size=True`` interpolates the position embedding, so the same model
    accepts the smaller local crops of multi-crop training.
    """
    if img_size % patch_size:
        raise ValueError(f"img_size {img_size} must be a multiple of patch_size {patch_size}")
    return timm.create_model(
        "vit_small_patch16_224",
        pretrained=False,
        num_classes=0,
        img_size=img_size,
        patch_size=patch_size,
        drop_path_rate=drop_path_rate,
        dynamic_img_size=True,
    )
