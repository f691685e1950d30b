r"""Measurement variants a reader would try: which covariance of a block's tokens EED reads.

Every variant is a function of one set of sums over a block's tokens, :class:`TokenMoments`,
accumulated in one pass by :class:`~ib_tutorial.measure.bootstrap.ImageStatistics`. For token
:math:`x_{it} \in \mathbb{R}^D` of image :math:`i` (:math:`N` images of :math:`T` tokens), a
fixed shift :math:`c` near the mean (it cancels) and image weights :math:`w_i` (1, or a
bootstrap's multinomial counts):

.. math::

    N = \sum_i w_i, \quad
    s = \sum_i w_i \sum_t (x_{it} - c), \quad
    G = \sum_i w_i \sum_t (x_{it} - c)(x_{it} - c)^\top, \\
    P_t = \sum_i w_i (x_{it} - c), \quad
    Q = \sum_i w_i\, s_i s_i^\top \ \text{ with } s_i = \sum_t (x_{it} - c).

The variants (:data:`VARIANTS`):

* ``tokens`` (the default; the paper's): all tokens pooled, :math:`C = (G - s s^\top / NT) / (NT - 1)`;
* ``post_ln``: the same after the next block's LayerNorm (:func:`post_layernorm`, :func:`next_norms`);
* ``correlation``: :math:`R = \mathrm{diag}(C)^{-1/2}\, C\, \mathrm{diag}(C)^{-1/2}`, so the residual
  stream's few outsized channels count no more than the others;
* ``position_centred``: :math:`C = (G - \sum_t P_t P_t^\top / N) / (T(N - 1))`, without the position offset;
* ``per_image``: :math:`C = (G - Q / T) / (N (T - 1))`, the within-image covariance.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

Tensor = torch.Tensor

#: Optional sums a variant may need beyond :math:`N, s, G`.
POSITIONS, IMAGE_OUTER = "positions", "image_outer"


@dataclass(frozen=True)
class TokenMoments:
    r"""The sums of the module docstring (float64): ``images`` :math:`N` [...], ``tokens``
    :math:`T`, ``total`` :math:`s` [..., D], ``gram`` :math:`G` [..., D, D], ``positions``
    :math:`P` [..., T, D] and ``image_outer`` :math:`Q` [..., D, D] (None when not kept),
    with a leading batch shape ``...`` (e.g. one entry per bootstrap replicate)."""

    images: Tensor
    tokens: int
    total: Tensor
    gram: Tensor
    positions: Tensor | None = None
    image_outer: Tensor | None = None


def tokens_covariance(m: TokenMoments) -> Tensor:
    """Covariance of all tokens pooled [..., D, D]."""
    count = (m.images * m.tokens)[..., None, None]
    return (m.gram - m.total[..., :, None] * m.total[..., None, :] / count) / (count - 1)


def correlation(m: TokenMoments) -> Tensor:
    r"""Correlation matrix of all tokens pooled, :math:`R_{jk} = C_{jk} / \sqrt{C_{jj} C_{kk}}`
    [..., D, D]; a channel that does not vary (:math:`C_{jj} = 0`) gets a zero row and column,
    so it adds a zero eigenvalue, as it does to :math:`C`."""
    covariance = tokens_covariance(m)
    variance = covariance.diagonal(dim1=-2, dim2=-1)
    inverse_scale = torch.where(variance > 0, variance.clamp_min(torch.finfo(variance.dtype).tiny).rsqrt(), 0.0)
    return covariance * inverse_scale[..., :, None] * inverse_scale[..., None, :]


def position_centred(m: TokenMoments) -> Tensor:
    """Covariance of the tokens centred on their position's mean over images [..., D, D]."""
    if m.positions is None:
        raise ValueError("the position-centred covariance needs the per-position sums: "
                         "keep 'positions' when accumulating")
    between = torch.einsum("...td,...te->...de", m.positions, m.positions) / m.images[..., None, None]
    return (m.gram - between) / (m.tokens * (m.images[..., None, None] - 1))


def per_image(m: TokenMoments) -> Tensor:
    r"""The per-image token covariance averaged over images,
    :math:`\frac1N \sum_i \frac{1}{T-1} \sum_t (x_{it} - \bar x_i)(x_{it} - \bar x_i)^\top` [..., D, D]."""
    if m.image_outer is None:
        raise ValueError("the per-image covariance needs the per-image sums' outer products: "
                         "keep 'image_outer' when accumulating")
    if m.tokens < 2:
        raise ValueError("the per-image covariance needs at least 2 tokens per image")
    return (m.gram - m.image_outer / m.tokens) / (m.images[..., None, None] * (m.tokens - 1))


@torch.no_grad()
def post_layernorm(tokens: Tensor, norm: torch.nn.Module) -> Tensor:
    r"""Block outputs [B, T, D] as the next block reads them: its LayerNorm applied,
    :math:`\gamma \odot (x - \mu(x)) / \sqrt{\sigma^2(x) + \epsilon} + \beta` over each token's
    D channels. ``norm`` is the next block's ``norm1`` (see :func:`next_norms`)."""
    return norm(tokens)


def next_norms(model: torch.nn.Module) -> list[torch.nn.Module]:
    """For each block of a timm ViT, the LayerNorm that next reads its output: the next
    block's ``norm1``, and for the last block the model's final ``norm``."""
    return [block.norm1 for block in list(model.blocks)[1:]] + [model.norm]


@dataclass(frozen=True)
class Variant:
    """One way of measuring a block's tokens: the covariance it reads, the optional sums it
    ``needs``, and whether the tokens pass through the next block's LayerNorm first."""

    name: str
    covariance: Callable[[TokenMoments], Tensor]
    needs: frozenset[str] = frozenset()
    layer_norm: bool = False


#: Every measurement variant, the default (``tokens``) first.
VARIANTS: dict[str, Variant] = {
    variant.name: variant
    for variant in (
        Variant("tokens", tokens_covariance),
        Variant("post_ln", tokens_covariance, layer_norm=True),
        Variant("correlation", correlation),
        Variant("position_centred", position_centred, frozenset({POSITIONS})),
        Variant("per_image", per_image, frozenset({IMAGE_OUTER})),
    )
}


def get_variant(name: str) -> Variant:
    """The :class:`Variant` called ``name``."""
    if name not in VARIANTS:
        raise ValueError(f"unknown measurement variant {name!r}; choose from {', '.join(VARIANTS)}")
    return VARIANTS[name]


def needed_sums(names: Iterable[str]) -> frozenset[str]:
    """The optional sums an accumulator must keep to serve every variant in ``names``."""
    return frozenset().union(*(get_variant(name).needs for name in names))
