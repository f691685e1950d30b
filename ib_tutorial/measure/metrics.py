r"""Spectral measures of how many dimensions a representation uses: pure functions of a feature
matrix :math:`H \in \mathbb{R}^{N \times D}` (rows are images or tokens) or of a covariance
spectrum (streamed by :mod:`~ib_tutorial.measure.covariance`).

The central quantity is the Effective Encoding Dimension (EED). With
:math:`\lambda_1 \ge \dots \ge \lambda_D \ge 0` the eigenvalues of the covariance
:math:`C` of :math:`H` and :math:`p_k = \lambda_k / \sum_j \lambda_j`,

.. math::

    S = -\sum_k p_k \log p_k, \qquad N_\mathrm{eff} = e^{S}, \qquad
    \mathrm{EED\%} = 100\, N_\mathrm{eff} / D .
"""
from __future__ import annotations

import math

import torch

Tensor = torch.Tensor


def _check_features(features: Tensor) -> Tensor:
    if features.ndim != 2:
        raise ValueError(f"features must be a 2-D [N, D] matrix, got shape {tuple(features.shape)}")
    if features.shape[1] < 1:
        raise ValueError("features have no columns (D = 0)")
    if features.shape[0] < 2:
        raise ValueError(f"need at least 2 samples to estimate a covariance, got {features.shape[0]}")
    if not torch.isfinite(features).all():
        raise ValueError("features contain NaN or inf; check the model output or the input images")
    return features.to(torch.float64)


def _normalised(spectrum: Tensor) -> Tensor:
    r""":math:`p_k = \lambda_k / \sum_j \lambda_j` in float64, negative round-off clamped to 0."""
    lam = spectrum.to(torch.float64).flatten()
    if not torch.isfinite(lam).all():
        raise ValueError("the spectrum contains NaN or inf")
    lam = lam.clamp_min(0)
    total = lam.sum()
    if total <= 0:
        raise ValueError("the spectrum is empty or all zeros: the features are constant, so no dimension is used")
    return lam / total


def spectral_entropy(eigenvalues: Tensor) -> float:
    r"""Shannon entropy (nats) :math:`S = -\sum_k p_k \log p_k` of a non-negative spectrum,
    :math:`p_k = \lambda_k / \sum_j \lambda_j` (:math:`0 \log 0 = 0`; an all-zero spectrum raises ``ValueError``)."""
    p = _normalised(eigenvalues)
    return float(-torch.special.xlogy(p, p).sum())


def effective_dimension_from_spectrum(eigenvalues: Tensor) -> float:
    r""":math:`N_\mathrm{eff} = \exp S` of a spectrum; between 1 and the number of eigenvalues."""
    return math.exp(spectral_entropy(eigenvalues))


def participation_ratio_from_spectrum(eigenvalues: Tensor) -> float:
    r"""Participation ratio :math:`(\sum_k \lambda_k)^2 / \sum_k \lambda_k^2 = 1 / \sum_k p_k^2` of a spectrum:
    :math:`\exp` of the Rényi-2 entropy, so never larger than :math:`N_\mathrm{eff}`."""
    p = _normalised(eigenvalues)
    return float(1 / (p**2).sum())


def covariance_spectrum(features: Tensor, center: bool = True) -> Tensor:
    r"""Eigenvalues, largest first, of the covariance of ``features`` [N, D], in float64 (the
    reference the streaming path is tested against; round-off negatives clamped to zero): centred,
    :math:`C = (H - \bar h)^\top (H - \bar h) / (N - 1)`, or uncentred, :math:`C = H^\top H / N`."""
    h = _check_features(features)
    if torch.equal(h, h[:1].expand_as(h)):  # one row repeated: exactly no spread, not round-off
        return torch.zeros(h.shape[1], dtype=torch.float64) if center else sorted_eigenvalues(h[:1].T @ h[:1])
    if center:
        centred = h - h.mean(0)
        return sorted_eigenvalues(centred.T @ centred / (h.shape[0] - 1))
    return sorted_eigenvalues(h.T @ h / h.shape[0])


def effective_encoding_dimension(features: Tensor, center: bool = True) -> float:
    r"""Effective Encoding Dimension :math:`N_\mathrm{eff} = \exp S` of ``features`` [N, D], with
    :math:`S` the :func:`spectral_entropy` of :func:`covariance_spectrum`: :math:`D` for an
    isotropic representation, 1 for one that varies along one direction only."""
    return effective_dimension_from_spectrum(covariance_spectrum(features, center=center))


def eed_percent(n_eff: float, dim: int) -> float:
    r"""EED as a percentage of the width: :math:`100\, N_\mathrm{eff} / D`."""
    if dim < 1:
        raise ValueError(f"the width D must be at least 1, got {dim}")
    return 100.0 * n_eff / dim


def participation_ratio(features: Tensor, center: bool = True) -> float:
    """:func:`participation_ratio_from_spectrum` of :func:`covariance_spectrum`."""
    return participation_ratio_from_spectrum(covariance_spectrum(features, center=center))


def rankme_from_singular_values(singular_values: Tensor, eps: float = 1e-7) -> float:
    r"""RankMe (Garrido et al. 2023) from the singular values :math:`\sigma_k` of a feature matrix.

    :math:`p_k = \sigma_k / \lVert\sigma\rVert_1 + \varepsilon`,
    :math:`\mathrm{RankMe} = \exp(-\sum_k p_k \log p_k)`: EED's entropy over the singular values
    of the *uncentred* matrix (:math:`\lambda_k \propto \sigma_k^2`), so it weights small
    directions more and exceeds :math:`N_\mathrm{eff}` unless the spectrum is flat.
    """
    p = _normalised(singular_values) + eps
    return float(torch.exp(-(p * torch.log(p)).sum()))


def rankme(features: Tensor, eps: float = 1e-7) -> float:
    """:func:`rankme_from_singular_values` of ``features`` [N, D] itself (no centring)."""
    h = _check_features(features)
    return rankme_from_singular_values(torch.linalg.svdvals(h), eps=eps)


def twonn_dimension(features: Tensor, discard_fraction: float = 0.1) -> float:
    r"""TwoNN intrinsic dimension (Facco et al. 2017) of the points ``features`` [N, D].

    With :math:`\mu_i = r_2 / r_1` the ratio of each point's second and first nearest-neighbour
    distances, locally uniform density on a :math:`d`-dimensional manifold makes :math:`\mu`
    Pareto, :math:`-\log(1 - F(\mu)) = d \log \mu`; :math:`d` is the least-squares slope
    through the origin after discarding the largest ``discard_fraction`` of the :math:`\mu`.
    Unlike EED it is non-linear and local: a curved 1-D manifold has TwoNN near 1 but a large EED.
    """
    h = _check_features(features)
    n = h.shape[0]
    if n < 3:
        raise ValueError(f"TwoNN needs at least 3 points, got {n}")
    r1, r2 = _two_nearest_distances(h)
    if (r1 <= 0).any():
        raise ValueError("TwoNN needs distinct points: some samples are exact duplicates; drop them first")
    mu = torch.sort(r2 / r1).values
    keep = int(math.floor(n * (1 - discard_fraction)))
    x = torch.log(mu[:keep])
    y = -torch.log1p(-torch.arange(1, keep + 1, dtype=torch.float64) / n)  # the empirical CDF
    return float((x * y).sum() / (x * x).sum())


def _two_nearest_distances(h: Tensor, chunk: int = 2048, candidates: int = 4) -> tuple[Tensor, Tensor]:
    """Distances to the first and second nearest other point, computed in row chunks: the
    matrix-product distance of the centred points picks ``candidates`` nearest others fast, and
    their distances are then computed directly, so duplicates give exactly 0."""
    wide = h.to(torch.float64)
    wide = wide - wide.mean(0)
    first, second = [], []
    for start in range(0, wide.shape[0], chunk):
        rows_of = wide[start : start + chunk]
        d = torch.cdist(rows_of, wide, compute_mode="use_mm_for_euclid_dist")
        rows = torch.arange(d.shape[0])
        d[rows, rows + start] = math.inf  # a point is not its own neighbour
        nearest = torch.topk(d, min(candidates, wide.shape[0] - 1), dim=1, largest=False).indices
        exact = (rows_of[:, None, :] - wide[nearest]).norm(dim=2).sort(dim=1).values
        first.append(exact[:, 0])
        second.append(exact[:, 1])
    return torch.cat(first), torch.cat(second)


def sorted_eigenvalues(matrix: Tensor) -> Tensor:
    """Eigenvalues of a symmetric matrix, largest first, negatives from round-off clamped to 0."""
    symmetric = (matrix + matrix.T) / 2
    return torch.linalg.eigvalsh(symmetric).clamp_min(0).flip(0)
