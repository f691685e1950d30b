r"""Information in bits: exact quantities of discrete distributions, and two estimators of
:math:`I(X;T)` and :math:`I(T;Y)` for the activations :math:`T` of a layer: the binning
estimator of Shwartz-Ziv & Tishby (:func:`binned_information`) and the pairwise-distance bound
of Kolchinsky & Tracey for a noisy channel :math:`T + \mathcal{N}(0, \sigma^2 I)`, as Saxe et
al. use it (:func:`kde_information`). :math:`X` is uniform over the distinct training inputs,
so for a deterministic network :math:`I(X;T) = H(T)`.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

Tensor = torch.Tensor

ESTIMATORS = ("binning", "kde")


@dataclass(frozen=True)
class InformationEstimate:
    """One point of the information plane, in bits."""

    i_xt: float
    i_ty: float


def entropy_bits(counts: Tensor) -> float:
    r"""Shannon entropy :math:`H = -\sum_k p_k \log_2 p_k` of a histogram of counts or
    probabilities, any shape."""
    return float(torch.special.entr(_normalised(counts).flatten()).sum()) / math.log(2)


def mutual_information_bits(joint: Tensor) -> float:
    r""":math:`I(A;B) = H(A) + H(B) - H(A,B)` of a joint table ``joint`` [A, B] of counts or
    probabilities."""
    if joint.ndim != 2:
        raise ValueError(f"joint must be a 2-D [A, B] table, got shape {tuple(joint.shape)}")
    p = _normalised(joint)
    return entropy_bits(p.sum(1)) + entropy_bits(p.sum(0)) - entropy_bits(p)


def ib_lagrangian(i_xt: float, i_ty: float, beta: float) -> float:
    r"""The Information Bottleneck objective :math:`I(X;T) - \beta\, I(T;Y)`, which an encoder
    minimises (Tishby, Pereira & Bialek 1999)."""
    return i_xt - beta * i_ty


def flipped_label_information(labels: Tensor, flip: float) -> InformationEstimate:
    r"""Exact :math:`I(X;T)` and :math:`I(T;Y)` of a stochastic encoder: :math:`T` is the binary
    label ``labels`` [N] flipped with probability ``flip``, X uniform over the N inputs. Noise,
    not merging inputs, is what removes the information."""
    y = labels.long()
    p_t_given_x = torch.stack([1 - flip - (1 - 2 * flip) * y, flip + (1 - 2 * flip) * y], dim=1).double()  # [N, 2]
    joint_xt = p_t_given_x / len(y)
    joint_yt = torch.stack([joint_xt[y == c].sum(0) for c in (0, 1)])  # p(y, t)
    return InformationEstimate(i_xt=mutual_information_bits(joint_xt), i_ty=mutual_information_bits(joint_yt))


def independence_bias_bits(occupied: int, classes: int, samples: int) -> float:
    r"""First-order bias of the plug-in :math:`I(T;Y)` when :math:`T` and :math:`Y` are
    independent: :math:`(K_T - 1)(K_Y - 1) / (2 N \ln 2)` bits (Miller 1955), ``occupied``
    being :math:`K_T`; valid while :math:`K_T \ll N`."""
    return (occupied - 1) * (classes - 1) / (2 * samples * math.log(2))


@contextlib.contextmanager
def one_thread():
    """Run a loop of small tensor operations on one thread: a second thread saves at most a
    quarter of the time on an idle machine, and makes them ten to forty times slower on a
    busy one (``benchmarks/bench_ib.py``)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def bin_codes(activations: Tensor, bins: int = 30, value_range: tuple[float, float] | None = None) -> Tensor:
    r"""The cell [N] of each row of ``activations`` [N, d], numbered :math:`0 \dots K-1` in sorted
    order: a tuple of per-unit bins, ``bins`` equal ones over ``value_range`` (default: the layer's
    range; values outside go to the edge bins)."""
    if activations.ndim != 2 or bins < 1:
        raise ValueError(f"need a 2-D [N, d] matrix and bins >= 1, got {tuple(activations.shape)}, bins={bins}")
    a = activations.detach().to(torch.float64)
    low, high = (float(a.min()), float(a.max())) if value_range is None else map(float, value_range)
    if not high > low:  # a constant layer: every row lands in one cell
        return torch.zeros(a.shape[0], dtype=torch.long)
    per_unit = ((a - low) / (high - low) * bins).floor().clamp_(0, bins - 1).long()
    return torch.unique(per_unit, dim=0, return_inverse=True)[1]


def binned_information(activations: Tensor, labels: Tensor, bins: int = 30,
                       value_range: tuple[float, float] | None = None) -> InformationEstimate:
    r"""The binning estimate of Shwartz-Ziv & Tishby: :math:`I(X;\hat T) = H(\hat T)` and
    :math:`I(\hat T;Y)`, :math:`\hat T` the cell of each row (:func:`bin_codes`).

    These are properties of the *binned* layer: they tend to :math:`\log_2 N` and :math:`H(Y)`
    as the bins shrink, for any injective layer.
    """
    return discrete_information(bin_codes(activations, bins, value_range), labels)


def discrete_information(codes: Tensor, labels: Tensor) -> InformationEstimate:
    r""":math:`I(X;T) = H(T)` and :math:`I(T;Y)` of an already discrete layer ``codes`` [N]
    (any integer labelling of its values), X uniform over the N inputs."""
    codes = torch.unique(codes.flatten(), return_inverse=True)[1]
    labels = _check_labels(labels, codes.shape[0])
    joint = torch.zeros(int(codes.max()) + 1, int(labels.max()) + 1, dtype=torch.float64)  # [K, C]
    joint.index_put_((codes, labels), torch.ones(codes.shape[0], dtype=torch.float64), accumulate=True)
    return InformationEstimate(i_xt=entropy_bits(joint.sum(1)), i_ty=mutual_information_bits(joint))


def kde_information(activations: Tensor, labels: Tensor, noise_variance: float = 1e-3, bound: str = "upper",
                    chunk: int = 128) -> InformationEstimate:
    r"""Pairwise-distance estimate for a noisy layer :math:`T = h(X) + Z`,
    :math:`Z \sim \mathcal{N}(0, \sigma^2 I_d)`, X uniform over the N rows of ``activations``.

    :math:`T` is a mixture of N Gaussians on the rows :math:`h_i`; Kolchinsky & Tracey's bound
    on its entropy gives

    .. math::

        I(X;T) \le -\frac{1}{N} \sum_i \log_2 \frac{1}{N} \sum_j
        \exp\!\Big(-\frac{\lVert h_i - h_j \rVert^2}{c\,\sigma^2}\Big),

    with :math:`c = 2` (Kullback-Leibler: the upper bound) or :math:`c = 8` (Bhattacharyya: a
    lower bound). As Saxe et al. do, :math:`I(T;Y) = H(T) - \sum_y p(y) H(T \mid Y = y)` applies
    the same estimate to each term (an estimate, not a bound). :math:`\sigma^2` sets the scale
    below which two inputs count as the same. Distances are in float32, ``chunk`` rows at a time.
    """
    if activations.ndim != 2:
        raise ValueError(f"activations must be a 2-D [N, d] matrix, got shape {tuple(activations.shape)}")
    scale = {"upper": 2.0, "lower": 8.0}.get(bound)
    if scale is None or noise_variance <= 0:
        raise ValueError(f"need bound 'upper' or 'lower' and noise_variance > 0, got {bound!r} and {noise_variance}")
    h = activations.detach().to(torch.float32)
    n = h.shape[0]
    labels = _check_labels(labels, n)
    onehot = F.one_hot(labels).to(torch.float32)  # [N, C]
    squared = (h * h).sum(1)
    class_sums = torch.empty(n, onehot.shape[1], dtype=torch.float64)
    with one_thread():
        for start in range(0, n, chunk):
            rows = slice(start, start + chunk)
            distance = (squared[rows, None] + squared[None, :] - 2 * h[rows] @ h.T).clamp_(min=0)
            # Exponents below -80 would only give denormal floats (ten times slower on x86);
            # cut there, their whole contribution to a row sum (at least 1) stays below 1e-30.
            kernel = distance.mul_(-1.0 / (scale * noise_variance)).clamp_(min=-80.0).exp_()  # [chunk, N]
            class_sums[rows] = (kernel @ onehot).to(torch.float64)
    class_sizes = onehot.sum(0).to(torch.float64)
    # Every row sum includes the row's own kernel value 1, so no logarithm sees 0.
    log_mixture = torch.log(class_sums.sum(1) / n)
    log_class_mixture = torch.log(class_sums.gather(1, labels[:, None])[:, 0] / class_sizes[labels])
    i_xt = float(-log_mixture.mean()) / math.log(2)
    i_ty = float((log_class_mixture - log_mixture).mean()) / math.log(2)
    return InformationEstimate(i_xt=i_xt, i_ty=i_ty)


def _normalised(counts: Tensor) -> Tensor:
    c = counts.to(torch.float64)
    if (c < 0).any() or c.sum() <= 0:
        raise ValueError("a histogram needs non-negative counts that are not all zero")
    return c / c.sum()


def _check_labels(labels: Tensor, n: int) -> Tensor:
    labels = labels.flatten().long()
    if labels.shape[0] != n:
        raise ValueError(f"need one label per row: got {labels.shape[0]} labels for {n} rows")
    if (labels < 0).any():
        raise ValueError("labels must be non-negative class indices 0..C-1")
    return labels
