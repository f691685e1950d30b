"""The streaming covariance of a block's tokens: millions of rows, one batch at a time, in float64."""
from __future__ import annotations

import contextlib
import math
import threading

import torch

from .metrics import effective_dimension_from_spectrum, rankme_from_singular_values, sorted_eigenvalues

Tensor = torch.Tensor

# A float32 product's rounding error grows with its rows: longer batches are split into
# products of at most this many rows, summed in float64.
_ROWS_PER_PRODUCT = 4096
# The scatter is symmetric: a product is formed in column blocks of this width, on and
# above the diagonal only (0.58 of the work for D = 384; narrower blocks ran slower).
_COLUMN_BLOCK = 64
# pi/4 as a float32 number. Centred rows are multiplied by it (times a power of two)
# before a product; see "Precision" in CovarianceAccumulator.
_UNBIASING_FACTOR = float(torch.tensor(math.pi / 4, dtype=torch.float32))


class CovarianceAccumulator:
    r"""The count :math:`n`, mean :math:`\bar h` and centred scatter
    :math:`M = \sum_i (h_i - \bar h)(h_i - \bar h)^\top` of D-dimensional samples, in float64;
    batches (and other processes' accumulators) are merged by the pairwise update of Chan et al. (1979),

    .. math::

        M = M_a + M_b + \delta\delta^\top \frac{n_a n_b}{n_a + n_b},
        \qquad \delta = \bar h_b - \bar h_a,

    which stays accurate where the naive :math:`\sum h h^\top - n \bar h \bar h^\top` loses every digit.

    **Precision.** Batches not in float64 are centred on their float32 mean, multiplied in
    float32 at most 4,096 rows at a time and summed in float64: every entry errs by at most
    :math:`\gamma_{K+2} \sqrt{M_{jj} M_{kk}}`, relative to the *centred* variances.

    :meth:`covariance` is centred, :math:`M/(n-1)`, or with ``center=False`` the uncentred
    second moment :math:`H^\top H / n = M/n + \bar h \bar h^\top`.
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
        """Add a batch of samples ``features`` [n, D] (any float dtype, any device)."""
        if features.ndim != 2 or features.shape[1] != self.dim:
            raise ValueError(f"expected a [n, {self.dim}] batch, got shape {tuple(features.shape)}")
        n = features.shape[0]
        if n == 0:
            return
        product_dtype = torch.float64 if features.dtype == torch.float64 else torch.float32
        rows = features.detach().to(product_dtype)
        total = rows.sum(0)  # any NaN or inf shows in it
        if not torch.isfinite(total).all():
            raise ValueError(f"features contain NaN or inf (or values whose sum overflows {product_dtype}); "
                             "check the model output or the input images")
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
        on and above the diagonal, in float64, from products in ``rows``' dtype, each piece
        centred and scaled (:func:`_unbiasing_scale`) in the thread's work buffers."""
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

    def spectrum(self) -> Tensor:
        """Eigenvalues of :meth:`covariance`, largest first, negatives from round-off clamped to 0."""
        return sorted_eigenvalues(self.covariance())

    def effective_dimension(self) -> float:
        r""":math:`N_\mathrm{eff}` of the accumulated samples."""
        return effective_dimension_from_spectrum(self.spectrum())

    def rankme(self, eps: float = 1e-7) -> float:
        """RankMe of the accumulated samples, from the singular values of H (uncentred): the
        square roots of the eigenvalues of :math:`H^\top H`."""
        singular_values = sorted_eigenvalues(self.scatter + self.count * torch.outer(self.mean, self.mean)).sqrt()
        return rankme_from_singular_values(singular_values, eps=eps)


# One set of work buffers per thread, shared by every accumulator the thread updates (an
# update uses them only until it returns), so a profile's accumulators touch one set of fresh
# pages, not one each: buffers of their own made a one-batch profile of ViT-S on a CPU 8 % slower.
_work = threading.local()


def _work_buffers(rows: int, dim: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """This thread's buffers for centred rows [>= rows, dim] and a product [dim, dim], in
    ``dtype``, and float64 moments [dim, dim]; made anew when those do not fit."""
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
