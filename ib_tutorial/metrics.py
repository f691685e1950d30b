r"""Spectral measures of how many dimensions a representation uses.

Everything here is a pure function of a feature matrix :math:`H \in \mathbb{R}^{N \times D}`
(rows are samples: images or tokens) or of a covariance spectrum, plus one streaming
accumulator so that millions of tokens never need to sit in memory at once. No model
code lives here.

The central quantity is the Effective Encoding Dimension (EED). With
:math:`\lambda_1 \ge \dots \ge \lambda_D \ge 0` the eigenvalues of the covariance
:math:`C` of :math:`H` and :math:`p_k = \lambda_k / \sum_j \lambda_j`,

.. math::

    S = -\sum_k p_k \log p_k, \qquad N_\mathrm{eff} = e^{S}, \qquad
    \mathrm{EED\%} = 100\, N_\mathrm{eff} / D .
"""
from __future__ import annotations

import contextlib
import math
import threading

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
    r"""Shannon entropy (nats) of a non-negative spectrum normalised to sum to one.

    :math:`S = -\sum_k p_k \log p_k` with :math:`p_k = \lambda_k / \sum_j \lambda_j`;
    zero eigenvalues contribute nothing (:math:`0 \log 0 = 0`). An all-zero spectrum
    (constant features) has no distribution and raises ``ValueError``.
    """
    p = _normalised(eigenvalues)
    return float(-(torch.special.xlogy(p, p)).sum())


def effective_dimension_from_spectrum(eigenvalues: Tensor) -> float:
    r""":math:`N_\mathrm{eff} = \exp S` of a spectrum; between 1 and the number of eigenvalues."""
    return math.exp(spectral_entropy(eigenvalues))


def participation_ratio_from_spectrum(eigenvalues: Tensor) -> float:
    r"""Participation ratio :math:`(\sum_k \lambda_k)^2 / \sum_k \lambda_k^2 = 1 / \sum_k p_k^2` of a spectrum.

    Equals :math:`\exp` of the Rényi-2 entropy of :math:`p`, so it is never larger than
    :math:`N_\mathrm{eff}` (Rényi entropies decrease with their order).
    """
    p = _normalised(eigenvalues)
    return float(1 / (p**2).sum())


def covariance_spectrum(features: Tensor, center: bool = True) -> Tensor:
    r"""Eigenvalues, largest first, of the covariance of ``features`` [N, D].

    Centred: :math:`C = (H - \bar h)^\top (H - \bar h) / (N - 1)`.
    Uncentred: :math:`C = H^\top H / N`. Computed in float64 whatever the input dtype
    (this is the reference the streaming float32 path is tested against); the tiny
    negative eigenvalues that round-off produces are clamped to zero. Constant features
    give an all-zero centred spectrum.
    """
    h = _check_features(features)
    acc = CovarianceAccumulator(h.shape[1], center=center)
    acc.update(h)
    return acc.spectrum()


def effective_encoding_dimension(features: Tensor, center: bool = True) -> float:
    r"""Effective Encoding Dimension :math:`N_\mathrm{eff} = \exp S` of ``features`` [N, D].

    :math:`S` is the spectral entropy of the covariance eigenvalues (see
    :func:`covariance_spectrum`). :math:`N_\mathrm{eff} = D` for an isotropic
    representation and 1 for a representation that varies along one direction only.
    Invariant to rotations and to a global rescaling of the features.
    """
    return effective_dimension_from_spectrum(covariance_spectrum(features, center=center))


def eed_percent(n_eff: float, dim: int) -> float:
    r"""EED as a percentage of the width: :math:`100\, N_\mathrm{eff} / D`."""
    if dim < 1:
        raise ValueError(f"the width D must be at least 1, got {dim}")
    return 100.0 * n_eff / dim


def participation_ratio(features: Tensor, center: bool = True) -> float:
    r"""Participation ratio of the covariance spectrum of ``features`` [N, D]; see
    :func:`participation_ratio_from_spectrum`."""
    return participation_ratio_from_spectrum(covariance_spectrum(features, center=center))


def rankme_from_singular_values(singular_values: Tensor, eps: float = 1e-7) -> float:
    r"""RankMe (Garrido et al. 2023) from the singular values :math:`\sigma_k` of a feature matrix.

    :math:`p_k = \sigma_k / \lVert\sigma\rVert_1 + \varepsilon`, and
    :math:`\mathrm{RankMe} = \exp(-\sum_k p_k \log p_k)`. Same entropy as EED, but over
    singular values of the *uncentred* matrix rather than eigenvalues of the
    covariance: since :math:`\lambda_k \propto \sigma_k^2` for centred data, RankMe
    weights small directions more and is larger than :math:`N_\mathrm{eff}`
    whenever the spectrum is not flat.
    """
    p = _normalised(singular_values) + eps
    return float(torch.exp(-(p * torch.log(p)).sum()))


def rankme(features: Tensor, eps: float = 1e-7) -> float:
    r"""RankMe of ``features`` [N, D]: effective rank over the singular values of
    :math:`H` itself (no centring), see :func:`rankme_from_singular_values`."""
    h = _check_features(features)
    return rankme_from_singular_values(torch.linalg.svdvals(h), eps=eps)


def twonn_dimension(features: Tensor, discard_fraction: float = 0.1) -> float:
    r"""TwoNN intrinsic dimension (Facco et al. 2017) of the points ``features`` [N, D].

    For each point, :math:`\mu_i = r_2 / r_1`, the ratio of the distances to its second and
    first nearest neighbours. If the density is locally uniform on a
    :math:`d`-dimensional manifold, :math:`\mu` is Pareto distributed,
    :math:`F(\mu) = 1 - \mu^{-d}`, so :math:`-\log(1 - F(\mu)) = d \log \mu`.
    :math:`d` is the slope of a least-squares line through the origin fitted to the
    empirical :math:`F`, after discarding the largest ``discard_fraction`` of the
    :math:`\mu` (they are the most sensitive to noise), as in the original paper.

    Unlike EED it is a *non-linear*, local measure: a curved one-dimensional manifold
    spanning many directions has TwoNN close to 1 but a large EED.
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
    empirical_cdf = torch.arange(1, n + 1, dtype=torch.float64) / n
    x = torch.log(mu[:keep])
    y = -torch.log1p(-empirical_cdf[:keep])
    return float((x * y).sum() / (x * x).sum())


def _two_nearest_distances(h: Tensor, chunk: int = 2048) -> tuple[Tensor, Tensor]:
    """Distances to the first and second nearest other point, computed in row chunks."""
    first, second = [], []
    for start in range(0, h.shape[0], chunk):
        # The direct (not matrix-product) distance is exact, so duplicates give exactly 0.
        d = torch.cdist(h[start : start + chunk], h, compute_mode="donot_use_mm_for_euclid_dist")
        rows = torch.arange(d.shape[0])
        d[rows, rows + start] = math.inf  # a point is not its own neighbour
        two = torch.topk(d, 2, dim=1, largest=False).values
        first.append(two[:, 0])
        second.append(two[:, 1])
    return torch.cat(first), torch.cat(second)


# A float32 product sums the rows it is given in float32, so its rounding error grows with
# their number: longer batches are split into products of at most this many rows, summed
# in float64.
_ROWS_PER_PRODUCT = 4096
# The scatter is symmetric: a product is formed in column blocks of this width, on and
# above the diagonal only (0.58 of the work for D = 384; narrower blocks ran slower).
_COLUMN_BLOCK = 64
# pi/4 as a float32 number. Centred rows are multiplied by it (times a power of two)
# before a product; see "Precision" in CovarianceAccumulator.
_UNBIASING_FACTOR = float(torch.tensor(math.pi / 4, dtype=torch.float32))


class CovarianceAccumulator:
    r"""Streaming first and second moments of D-dimensional samples, held in float64.

    Keeps the count :math:`n`, the mean :math:`\bar h` and the centred scatter
    :math:`M = \sum_i (h_i - \bar h)(h_i - \bar h)^\top`. Each batch is reduced to its
    own count, mean and scatter, and batches (and accumulators from other processes) are
    merged with the pairwise update of Chan et al. (1979),

    .. math::

        M = M_a + M_b + \delta\delta^\top \frac{n_a n_b}{n_a + n_b},
        \qquad \delta = \bar h_b - \bar h_a,

    which stays accurate when the mean is large compared with the spread, where the
    naive :math:`\sum h h^\top - n \bar h \bar h^\top` loses every digit.

    **Precision.** float64 batches are multiplied in float64 (the one-shot functions
    above always pass float64). Any other dtype (a model's float32 output, float16,
    bfloat16) is multiplied in float32, half the cost of float64 on a CPU and a small
    fraction of it on most GPUs:

    1. the rows are centred in float32 on their float32 mean :math:`\tilde m`, which
       only needs to be near the mean: :math:`c_i = h_i - \tilde m`;
    2. :math:`\sum_i c_i c_i^\top` is formed in float32 (no autocast, no TF32) over at
       most 4,096 rows at a time, blocks on and above the diagonal only; the rows of each
       piece are first multiplied by :math:`\pi/4` times the power of two that brings
       their largest entry near 1 (so no product overflows or underflows), and the
       pieces are unscaled and summed in float64;
    3. the mean :math:`\bar c` of the :math:`c_i` (round-off only) is summed, and the
       batch's mean :math:`\tilde m + \bar c` and scatter
       :math:`\sum_i c_i c_i^\top - n \bar c \bar c^\top` are completed in float64.

    Every entry of the accumulated scatter then errs by at most

    .. math::

        |\Delta M_{jk}| \le \gamma_{K+2} \sqrt{S_{jj} S_{kk}}, \qquad
        S = M + \sum_b n_b (\bar h_b - \tilde m_b)(\bar h_b - \tilde m_b)^\top,
        \qquad \gamma_K = \frac{K u}{1 - K u},\ u = 2^{-24},

    with :math:`K \le 4096` the rows of one product (centring and scaling add the 2).
    :math:`|\bar h_b - \tilde m_b|` is a few :math:`u |\bar h_b|`, so :math:`S` is
    :math:`M` up to terms in :math:`u^2 \bar h^2`: the error is relative to the
    *centred* variances, whatever the mean. A float32 product of uncentred rows has the
    same bound with :math:`\sum_i |h_{ij}||h_{ik}| \approx n(\bar h_j \bar h_k + \dots)`
    in place of :math:`S`: for tokens offset by :math:`10^3` with unit spread, :math:`10^6`
    times more, which swamps the covariance.

    For :math:`N_\mathrm{eff}` this means: the errors met are near
    :math:`u \sqrt{M_{jj} M_{kk}}` and random in sign, so eigenvalues well above
    :math:`u` times the largest keep their relative accuracy and smaller ones are
    resolved only to their own size; :math:`N_\mathrm{eff}` errs by about the entropy
    those carry at most (pass float64 rows to go further). Random in sign needs unbiased
    rounding, which data that float32 has already quantised coarsely do not get (a large
    mean and a small spread leave the centred rows a dozen significant bits, and squares
    of integers are 0, 1 or 4 mod 8): every row then rounds the same way, about
    :math:`7u` low per entry, which moved :math:`N_\mathrm{eff}` by :math:`10^{-5}` on a
    spectrum reaching :math:`10^{-8}`. The non-dyadic factor :math:`\pi/4` fills those
    low bits. Splitting rows into float32 high and low parts would not help: the error
    comes from the float32 sums, not the products. Streamed :math:`N_\mathrm{eff}`
    matches the float64 one-shot value to :math:`10^{-6}` relative in
    tests/test_metrics.py (eigenvalues from 1 down to :math:`10^{-8}`, means of
    :math:`10^3`, widths 64 and 384, several chunkings).

    Args:
        dim: D, the feature width.
        center: whether :meth:`covariance` is centred (:math:`M/(n-1)`, the default)
            or the uncentred second moment :math:`H^\top H / n = M/n + \bar h \bar h^\top`.
    """

    def __init__(self, dim: int, center: bool = True):
        if dim < 1:
            raise ValueError(f"the width D must be at least 1, got {dim}")
        self.dim = dim
        self.center = center
        self.count = 0
        self.mean = torch.zeros(dim, dtype=torch.float64)
        self.scatter = torch.zeros(dim, dim, dtype=torch.float64)
        self._spread_seen = False  # until two different rows are seen, the scatter stays exactly 0

    def update(self, features: Tensor) -> None:
        """Add a batch of samples ``features`` [n, D] (any float dtype, any device).

        float64 batches are multiplied in float64, all others in float32; see the class
        docstring for the error that costs.
        """
        if features.ndim != 2 or features.shape[1] != self.dim:
            raise ValueError(f"expected a [n, {self.dim}] batch, got shape {tuple(features.shape)}")
        n = features.shape[0]
        if n == 0:
            return
        product_dtype = torch.float64 if features.dtype == torch.float64 else torch.float32
        rows = features.detach().to(product_dtype)
        total = rows.sum(0)  # any NaN or inf shows in it
        if not torch.isfinite(total).all():
            raise ValueError(
                f"features contain NaN or inf (or values whose sum overflows {product_dtype}); "
                "check the model output or the input images"
            )
        if not self._spread_seen:
            if torch.equal(rows, rows[:1].expand_as(rows)):
                # One row repeated: its scatter is 0, not the round-off of a mean.
                self._merge(n, rows[0].to(torch.float64), torch.zeros_like(self.scatter))
                return
            self._spread_seen = True
        shift = total / n
        summed, upper = self._shifted_moments(rows, shift)
        # The rows' mean is shift + residual (residual: round-off only), and their scatter
        # about it is the one about the shift less n residual residual^T.
        residual = summed / n
        upper.addr_(residual, residual, alpha=-n).triu_()
        self._merge(n, shift.to(torch.float64) + residual, upper)

    def _shifted_moments(self, rows: Tensor, shift: Tensor) -> tuple[Tensor, Tensor]:
        r"""Column sums of :math:`C = R - \mathrm{shift}` and the blocks of :math:`C^\top C`
        on and above the diagonal, in float64, from products in ``rows``' dtype over at most
        ``_ROWS_PER_PRODUCT`` rows at a time.

        Each piece of rows is centred and scaled (:func:`_unbiasing_scale`) in the thread's
        work buffers (:func:`_work_buffers`).
        """
        dim, device = self.dim, rows.device
        pieces = torch.split(rows, _ROWS_PER_PRODUCT)
        centred, product, moments = _work_buffers(len(pieces[0]), dim, rows.dtype, device)
        summed = torch.zeros(dim, dtype=torch.float64, device=device)
        moments.zero_()
        with _exact_float32_products(device.type):
            for piece in pieces:
                scaled = torch.sub(piece, shift, out=centred[: len(piece)])
                scale = _unbiasing_scale(scaled)
                scaled.mul_(scale)
                unscale = scale.to(torch.float64).reciprocal()
                summed.addcmul_(scaled.sum(0), unscale)
                for start in range(0, dim, _COLUMN_BLOCK):
                    stop = start + _COLUMN_BLOCK
                    torch.mm(scaled[:, start:stop].T, scaled[:, start:], out=product[start:stop, start:])
                moments.addcmul_(product, unscale**2)
        return summed, moments

    def merge(self, other: "CovarianceAccumulator") -> None:
        """Fold another accumulator (e.g. another process's) into this one."""
        if other.dim != self.dim:
            raise ValueError(f"cannot merge width {other.dim} into width {self.dim}")
        if other.count:
            self._merge(other.count, other.mean, other.scatter.triu())

    def _merge(self, n_b: int, mean_b: Tensor, upper_b: Tensor) -> None:
        """Fold in ``n_b`` samples of mean ``mean_b`` whose scatter about it has the upper
        triangle ``upper_b`` (overwritten). In place: no temporaries of size D x D."""
        # The running moments stay on the CPU, whichever device the batches come from.
        mean_b, upper_b = mean_b.cpu(), upper_b.cpu()
        n_a = self.count
        n = n_a + n_b
        delta = mean_b - self.mean
        upper_b.diagonal().mul_(0.5)  # added twice below, once as itself and once transposed
        self.scatter.add_(upper_b).add_(upper_b.T).addr_(delta, delta, alpha=n_a * n_b / n)
        self.mean += delta * (n_b / n)
        self.count = n

    def covariance(self) -> Tensor:
        """The [D, D] covariance (centred or uncentred, as chosen at construction)."""
        if self.count < 2:
            raise ValueError(f"need at least 2 samples to estimate a covariance, got {self.count}")
        if self.center:
            return self.scatter / (self.count - 1)
        return self.scatter / self.count + torch.outer(self.mean, self.mean)

    def second_moment(self) -> Tensor:
        r"""The uncentred :math:`H^\top H` whose eigenvalues are the squared singular values of H."""
        return self.scatter + self.count * torch.outer(self.mean, self.mean)

    def spectrum(self) -> Tensor:
        """Eigenvalues of :meth:`covariance`, largest first, negatives from round-off clamped to 0."""
        return _sorted_eigenvalues(self.covariance())

    def effective_dimension(self) -> float:
        r""":math:`N_\mathrm{eff}` of the accumulated samples."""
        return effective_dimension_from_spectrum(self.spectrum())

    def rankme(self, eps: float = 1e-7) -> float:
        """RankMe of the accumulated samples, from the singular values of H (uncentred)."""
        singular_values = _sorted_eigenvalues(self.second_moment()).sqrt()
        return rankme_from_singular_values(singular_values, eps=eps)


# One set of work buffers per thread, shared by every accumulator the thread updates (an
# update uses them only until it returns): a profile's accumulators, one per block, then
# touch one set of fresh pages instead of one each, and later profiles none. Fresh pages
# cost a fault per 4 KiB: with the C library's default allocator, buffers of its own for
# each accumulator made a one-batch profile of ViT-S on a CPU 8 % slower.
_work = threading.local()


def _work_buffers(rows: int, dim: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """This thread's buffers for centred rows [>= rows, dim] and a product [dim, dim], in
    ``dtype``, and float64 moments [dim, dim]; made anew for a piece of another width,
    dtype or device, or a longer one."""
    buffers = getattr(_work, "buffers", None)
    if buffers is None or (buffers[0].shape[1], buffers[0].dtype, buffers[0].device) != (dim, dtype, device) \
            or len(buffers[0]) < rows:
        buffers = _work.buffers = (
            torch.empty(rows, dim, dtype=dtype, device=device),
            torch.zeros(dim, dim, dtype=dtype, device=device),  # the product; below the diagonal blocks it stays 0
            torch.empty(dim, dim, dtype=torch.float64, device=device),
        )
    return buffers


def _unbiasing_scale(centred: Tensor) -> Tensor:
    """pi/4 times the power of two that brings the largest entry of ``centred`` into
    [0.5, 1) (within the dtype's range), as a 0-d tensor on its device."""
    widest = math.frexp(torch.finfo(centred.dtype).max)[1] - 2
    lowest, highest = torch.aminmax(centred)  # no temporary the size of ``centred``
    exponent = torch.frexp(torch.maximum(-lowest, highest)).exponent.clamp(-widest, widest)
    return _UNBIASING_FACTOR * torch.exp2(-exponent.to(centred.dtype))


@contextlib.contextmanager
def _exact_float32_products(device_type: str):
    """Matrix products in true float32: no autocast to 16 bits and, on CUDA, no TF32 (whose
    10-bit mantissa would void the error bound)."""
    with torch.autocast(device_type, enabled=False):
        if device_type != "cuda":
            yield
            return
        matmul = torch.backends.cuda.matmul
        try:
            setting, ieee = "fp32_precision", "ieee"
            previous = matmul.fp32_precision
        except AttributeError:  # torch before 2.9 has only the older switch
            setting, ieee = "allow_tf32", False
            previous = matmul.allow_tf32
        setattr(matmul, setting, ieee)
        try:
            yield
        finally:
            setattr(matmul, setting, previous)


def _sorted_eigenvalues(matrix: Tensor) -> Tensor:
    symmetric = (matrix + matrix.T) / 2
    return torch.linalg.eigvalsh(symmetric).clamp_min(0).flip(0)
