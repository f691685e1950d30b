r"""The Information Bottleneck toy: mutual-information estimators and the information plane.

Everything the Information Bottleneck chapter computes lives here:

* exact information quantities of discrete distributions (:func:`entropy_bits`,
  :func:`mutual_information_bits`), for worked examples and as the core of the binning
  estimator;
* two estimators of :math:`I(X;T)` and :math:`I(T;Y)` for the activations :math:`T` of a
  layer of a deterministic network: the binning estimator of Shwartz-Ziv & Tishby
  (:func:`binned_information`) and the pairwise-distance (kernel) bound of Kolchinsky &
  Tracey for a noisy channel :math:`T + \mathcal{N}(0, \sigma^2 I)`, as used by Saxe et al.
  (:func:`kde_information`);
* the toy task (all 4096 inputs of 12 bits, two classes, :func:`toy_task`), the
  12-10-7-5-4-3-2 network (:class:`InformationNetwork`), its training with the
  activations of every layer recorded at log-spaced epochs (:func:`train_information_network`),
  and the trajectory of every layer in the information plane (:func:`information_plane`).

All information is in bits. :math:`X` is uniform over the distinct training inputs, so
for a deterministic network :math:`I(X;T) = H(T)`.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .metrics import effective_encoding_dimension
from .presets import IBSettings

Tensor = torch.Tensor

INPUT_BITS = 12
LAYER_WIDTHS = (10, 7, 5, 4, 3, 2)
ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
ESTIMATORS = ("binning", "kde")
TRAIN_FRACTION = 0.85
DIPOLE_WEIGHT = 0.3


# --- exact information of discrete distributions -------------------------------------

def entropy_bits(counts: Tensor) -> float:
    r"""Shannon entropy :math:`H = -\sum_k p_k \log_2 p_k` (bits) of a histogram.

    ``counts`` may hold counts or probabilities, in any shape; it is normalised to sum
    to one, and empty cells contribute nothing (:math:`0 \log 0 = 0`).
    """
    p = _normalised(counts).flatten()
    return float(torch.special.entr(p).sum()) / math.log(2)


def mutual_information_bits(joint: Tensor) -> float:
    r"""Mutual information (bits) of a joint table ``joint`` [A, B] of counts or probabilities.

    .. math::

        I(A;B) = \sum_{a,b} p(a,b) \log_2 \frac{p(a,b)}{p(a)\,p(b)} = H(A) + H(B) - H(A,B).
    """
    if joint.ndim != 2:
        raise ValueError(f"joint must be a 2-D [A, B] table, got shape {tuple(joint.shape)}")
    p = _normalised(joint)
    return entropy_bits(p.sum(1)) + entropy_bits(p.sum(0)) - entropy_bits(p)


def ib_lagrangian(i_xt: float, i_ty: float, beta: float) -> float:
    r"""The Information Bottleneck objective :math:`\mathcal{L} = I(X;T) - \beta\, I(T;Y)`,
    which an encoder :math:`p(t \mid x)` minimises (Tishby, Pereira & Bialek 1999)."""
    return i_xt - beta * i_ty


def independence_bias_bits(occupied: int, classes: int, samples: int) -> float:
    r"""First-order bias of the plug-in (histogram) :math:`I(T;Y)` when :math:`T` and :math:`Y`
    are independent: :math:`(K_T - 1)(K_Y - 1) / (2 N \ln 2)` bits (Miller 1955).

    ``occupied`` is the number :math:`K_T` of occupied bins of :math:`T`, ``classes`` the
    number :math:`K_Y` of labels and ``samples`` :math:`N`. Valid while :math:`K_T \ll N`;
    once almost every sample has a bin to itself the plug-in estimate tends to
    :math:`H(Y)` instead, whatever the dependence.
    """
    return (occupied - 1) * (classes - 1) / (2 * samples * math.log(2))


def _normalised(counts: Tensor) -> Tensor:
    c = counts.to(torch.float64)
    if (c < 0).any():
        raise ValueError("counts and probabilities must be non-negative")
    total = c.sum()
    if total <= 0:
        raise ValueError("the histogram is empty")
    return c / total


@contextlib.contextmanager
def _one_thread():
    """Run a loop of small tensor operations on one thread. On an idle two-core machine a
    second thread saves at most about a quarter of the time (``benchmarks/bench_ib.py``);
    on one whose cores are busy with other work, every operation waits for the
    descheduled thread, and we measured them ten to forty times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# --- estimators for the activations of a layer ---------------------------------------

@dataclass(frozen=True)
class InformationEstimate:
    """One point of the information plane, in bits."""

    i_xt: float
    i_ty: float


def bin_codes(activations: Tensor, bins: int = 30, value_range: tuple[float, float] | None = None) -> Tensor:
    r"""Discretise a layer: the index [N] of the cell that holds each row of ``activations`` [N, d].

    Each unit is cut into ``bins`` equal bins over ``value_range`` (the same edges for
    every unit of the layer; values outside are put in the edge bins); a cell is a tuple
    of per-unit bins, and cells are numbered :math:`0 \dots K-1` in sorted order. Without
    ``value_range`` the bins span the smallest and largest value in ``activations``.
    """
    if activations.ndim != 2:
        raise ValueError(f"activations must be a 2-D [N, d] matrix, got shape {tuple(activations.shape)}")
    if bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins}")
    a = activations.detach().to(torch.float64)
    low, high = (float(a.min()), float(a.max())) if value_range is None else map(float, value_range)
    if not high > low:  # a constant layer: every row lands in one cell
        return torch.zeros(a.shape[0], dtype=torch.long)
    per_unit = ((a - low) / (high - low) * bins).floor().clamp_(0, bins - 1).long()
    return torch.unique(per_unit, dim=0, return_inverse=True)[1]


def binned_information(
    activations: Tensor,
    labels: Tensor,
    bins: int = 30,
    value_range: tuple[float, float] | None = None,
) -> InformationEstimate:
    r"""The binning estimate of Shwartz-Ziv & Tishby for one layer.

    ``activations`` [N, d] are the layer's outputs for N distinct inputs (X uniform over
    them) and ``labels`` [N] their classes. With :math:`\hat T` the cell of each row
    (:func:`bin_codes`), the network being deterministic,

    .. math::

        I(X;\hat T) = H(\hat T), \qquad I(\hat T;Y) = \sum_{t,y} p(t,y) \log_2 \frac{p(t,y)}{p(t)p(y)},

    from the joint histogram of cells and labels. Both are properties of the *binned*
    layer: they depend on ``bins`` and ``value_range``, and tend to :math:`\log_2 N` and
    :math:`H(Y)` as the bins shrink, for any injective layer.
    """
    codes = bin_codes(activations, bins, value_range)
    joint = _joint_counts(codes, _check_labels(labels, codes.shape[0]))
    return InformationEstimate(i_xt=entropy_bits(joint.sum(1)), i_ty=mutual_information_bits(joint))


def discrete_information(codes: Tensor, labels: Tensor) -> InformationEstimate:
    r""":math:`I(X;T) = H(T)` and :math:`I(T;Y)` of an already discrete layer ``codes`` [N]
    (any integer labelling of its values), with X uniform over the N inputs."""
    codes = torch.unique(codes.flatten(), return_inverse=True)[1]
    joint = _joint_counts(codes, _check_labels(labels, codes.shape[0]))
    return InformationEstimate(i_xt=entropy_bits(joint.sum(1)), i_ty=mutual_information_bits(joint))


def kde_information(
    activations: Tensor,
    labels: Tensor,
    noise_variance: float = 1e-3,
    bound: str = "upper",
    chunk: int = 128,
) -> InformationEstimate:
    r"""Pairwise-distance (kernel) estimate for a layer made noisy: :math:`T = h(X) + Z`,
    :math:`Z \sim \mathcal{N}(0, \sigma^2 I_d)`, X uniform over the N rows of ``activations`` [N, d].

    :math:`T` is then a mixture of N Gaussians centred on the rows :math:`h_i`. Kolchinsky &
    Tracey bound its entropy with pairwise distances between the components; since
    :math:`H(T \mid X)` is the entropy of the noise, the bound on the information is

    .. math::

        I(X;T) \le -\frac{1}{N} \sum_i \log_2 \frac{1}{N} \sum_j
        \exp\!\Big(-\frac{\lVert h_i - h_j \rVert^2}{c\,\sigma^2}\Big),

    with :math:`c = 2` (Kullback-Leibler distance: the upper bound, ``bound="upper"``) or
    :math:`c = 8` (Bhattacharyya distance: a lower bound, ``bound="lower"``). As Saxe et al.
    do, :math:`I(T;Y) = H(T) - \sum_y p(y) H(T \mid Y = y)` applies the same estimate to
    :math:`H(T)` and to each class's mixture; that difference is an estimate, not a bound.
    It never exceeds :math:`\log_2 N` and does not depend on bins, but it does depend on
    :math:`\sigma^2`: the noise sets the scale below which two inputs count as the same.

    Distances are computed in float32, ``chunk`` rows at a time, so memory is
    ``chunk * N`` floats, on one thread (small operations gain nothing from more).
    """
    if activations.ndim != 2:
        raise ValueError(f"activations must be a 2-D [N, d] matrix, got shape {tuple(activations.shape)}")
    if noise_variance <= 0:
        raise ValueError(f"noise_variance must be positive, got {noise_variance}")
    scale = {"upper": 2.0, "lower": 8.0}.get(bound)
    if scale is None:
        raise ValueError(f"bound must be 'upper' or 'lower', got {bound!r}")
    h = activations.detach().to(torch.float32)
    n = h.shape[0]
    labels = _check_labels(labels, n)
    onehot = F.one_hot(labels).to(torch.float32)  # [N, C]
    squared = (h * h).sum(1)
    class_sums = torch.empty(n, onehot.shape[1], dtype=torch.float64)
    with _one_thread():
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


def _check_labels(labels: Tensor, n: int) -> Tensor:
    labels = labels.flatten().long()
    if labels.shape[0] != n:
        raise ValueError(f"need one label per row: got {labels.shape[0]} labels for {n} rows")
    if (labels < 0).any():
        raise ValueError("labels must be non-negative class indices 0..C-1")
    return labels


def _joint_counts(codes: Tensor, labels: Tensor) -> Tensor:
    """The [K, C] histogram of (cell, label) pairs."""
    joint = torch.zeros(int(codes.max()) + 1, int(labels.max()) + 1, dtype=torch.float64)
    joint.index_put_((codes, labels), torch.ones(codes.shape[0], dtype=torch.float64), accumulate=True)
    return joint


# --- the toy task --------------------------------------------------------------------

@dataclass(frozen=True)
class ToyTask:
    """The 12-bit task: ``inputs`` [4096, 12] in {0, 1}, ``labels`` [4096] in {0, 1}, and
    the indices of the training and test inputs (a seeded split)."""

    inputs: Tensor
    labels: Tensor
    train_index: Tensor
    test_index: Tensor

    @property
    def train(self) -> tuple[Tensor, Tensor]:
        return self.inputs[self.train_index], self.labels[self.train_index]

    @property
    def test(self) -> tuple[Tensor, Tensor]:
        return self.inputs[self.test_index], self.labels[self.test_index]


def icosahedron_vertices() -> Tensor:
    r"""The 12 vertices [12, 3] of a regular icosahedron on the unit sphere: the cyclic
    permutations of :math:`(0, \pm 1, \pm\varphi)`, normalised. They are 12 points spread
    uniformly over the sphere, each one a unit's position in :func:`toy_task`."""
    phi = (1 + math.sqrt(5)) / 2
    points = []
    for a in (-1.0, 1.0):
        for b in (-phi, phi):
            points += [(0.0, a, b), (a, b, 0.0), (b, 0.0, a)]
    vertices = torch.tensor(points, dtype=torch.float64)
    return vertices / vertices.norm(dim=1, keepdim=True)


def sphere_score(inputs: Tensor) -> Tensor:
    r"""The rotation-invariant score [N] of binary patterns ``inputs`` [N, 12].

    With spins :math:`s_i = 2x_i - 1` placed on the icosahedron vertices :math:`u_i`,

    .. math::

        f(x) = \sum_i s_i - w \, \Big\lVert \sum_i s_i u_i \Big\rVert^2, \qquad w = 0.3,

    a monopole (how many bits are on) minus a dipole term (how lopsided the active points
    are). Both terms are unchanged by any rotation that maps the 12 points onto
    themselves, so the label depends on the pattern on the sphere, not on where it sits.
    """
    spins = 2 * inputs.to(torch.float64) - 1
    dipole = spins @ icosahedron_vertices()
    return spins.sum(1) - DIPOLE_WEIGHT * (dipole * dipole).sum(1)


def toy_task(train_fraction: float = TRAIN_FRACTION, seed: int = 0) -> ToyTask:
    r"""All :math:`2^{12} = 4096` binary inputs with the label :math:`y = [f(x) > \theta]`.

    A documented reconstruction of the data of Shwartz-Ziv & Tishby (2017), who describe
    12 binary inputs on 12 uniformly spread points of a sphere and a label from a
    threshold on a spherically symmetric function, without publishing the function.
    Here :math:`f` is :func:`sphere_score` and :math:`\theta` its median over the 4096
    inputs, so the classes are balanced up to ties (2,012 of 4,096 inputs are positive).
    As in the original data, the label is mostly set by the number of active bits (all
    inputs with at most four bits on are negative, all with nine or more positive), and
    the dipole term decides in between. ``train_fraction`` of the inputs (85 % as in the
    original) are drawn for training with a generator seeded by ``seed``.
    """
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be between 0 and 1, got {train_fraction}")
    codes = torch.arange(2**INPUT_BITS)
    inputs = ((codes[:, None] >> torch.arange(INPUT_BITS)) & 1).to(torch.float32)
    score = sphere_score(inputs)
    labels = (score > score.median()).long()
    order = torch.randperm(len(codes), generator=torch.Generator().manual_seed(seed))
    n_train = round(train_fraction * len(codes))
    return ToyTask(inputs, labels, order[:n_train].sort().values, order[n_train:].sort().values)


# --- the network and its training ----------------------------------------------------

class InformationNetwork(torch.nn.Module):
    r"""The 12-10-7-5-4-3-2 network of Shwartz-Ziv & Tishby: five hidden layers with a
    ``tanh`` or ``relu`` activation and a softmax output over two classes.

    Initialised as in the code released with Saxe et al.: hidden weights from a normal
    distribution with standard deviation :math:`1/\sqrt{\text{width}}` truncated at two
    standard deviations, output weights Glorot-uniform, biases zero.
    """

    def __init__(self, activation: str = "tanh", generator: torch.Generator | None = None):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.activation = activation
        widths = (INPUT_BITS, *LAYER_WIDTHS)
        self.linears = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.nonlinearity = ACTIVATIONS[activation]()
        with torch.no_grad():
            for linear in self.linears[:-1]:
                std = 1 / math.sqrt(linear.out_features)
                torch.nn.init.trunc_normal_(linear.weight, std=std, a=-2 * std, b=2 * std, generator=generator)
            torch.nn.init.xavier_uniform_(self.linears[-1].weight, generator=generator)
            for linear in self.linears:
                linear.bias.zero_()

    def forward(self, x: Tensor) -> Tensor:
        """Logits [N, 2] of inputs ``x`` [N, 12]."""
        for linear in self.linears[:-1]:
            x = self.nonlinearity(linear(x))
        return self.linears[-1](x)

    def layer_outputs(self, x: Tensor) -> list[Tensor]:
        """Every layer's output for ``x`` [N, 12]: five hidden [N, width], then the softmax [N, 2]."""
        outputs = []
        for linear in self.linears[:-1]:
            x = self.nonlinearity(linear(x))
            outputs.append(x)
        outputs.append(torch.softmax(self.linears[-1](x), dim=1))
        return outputs


def logged_epochs(epochs: int, count: int) -> list[int]:
    """At most ``count`` epochs from 0 (the initial network) to ``epochs``, spaced evenly
    in log(epoch): most records fall early, where the information plane moves fastest."""
    if epochs < 1 or count < 2:
        raise ValueError(f"need epochs >= 1 and count >= 2, got epochs={epochs}, count={count}")
    spaced = torch.logspace(0, math.log10(epochs), count - 1, dtype=torch.float64).round().long()
    return sorted({0, epochs, *spaced.tolist()})


@dataclass
class Trajectory:
    """A training run of :class:`InformationNetwork` with its layers recorded.

    ``layers[l]`` is [E, N, width]: layer l's outputs (the softmax for the last layer) on
    the N training inputs at each of the E recorded ``epochs``; ``labels`` [N] are their
    classes. Accuracies and the loss (cross-entropy, nats) are per recorded epoch.
    """

    activation: str
    settings: IBSettings
    epochs: list[int]
    layers: list[Tensor]
    labels: Tensor
    train_accuracy: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)


def train_information_network(
    activation: str,
    settings: IBSettings,
    task: ToyTask | None = None,
    progress: bool = True,
) -> Trajectory:
    """Train :class:`InformationNetwork` on the toy task with Adam and record every layer.

    ``settings`` gives the epochs, learning rate, batch size (``None``: the full training
    set in one step) and how many log-spaced epochs to record (:func:`logged_epochs`);
    ``settings.seed`` seeds the data split, the weights and the batch order. Runs on the
    CPU: the network is so small that a GPU only adds launch overhead.
    """
    task = task if task is not None else toy_task(seed=settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    network = InformationNetwork(activation, generator)
    # fused: one kernel updates all twelve tiny parameter tensors, the cheapest step on a CPU.
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.learning_rate, fused=True)
    x_train, y_train = task.train
    n = x_train.shape[0]
    batch = n if settings.batch_size is None else min(settings.batch_size, n)
    record_at = logged_epochs(settings.epochs, settings.logged_epochs)
    records: list[list[Tensor]] = []
    trajectory = Trajectory(activation, settings, record_at, [], y_train)

    bar = tqdm(range(settings.epochs + 1), desc=f"training ({activation})", disable=not progress, mininterval=0.5)
    with _one_thread():
        for epoch in bar:
            if epoch == record_at[len(records)]:
                records.append(_record(network, task, trajectory))
                bar.set_postfix(train_acc=f"{trajectory.train_accuracy[-1]:.3f}", refresh=False)
            if epoch == settings.epochs:
                break
            order = torch.randperm(n, generator=generator) if batch < n else None
            for start in range(0, n, batch):
                rows = order[start : start + batch] if order is not None else slice(None)
                loss = F.cross_entropy(network(x_train[rows]), y_train[rows])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
    trajectory.layers = [torch.stack(per_layer) for per_layer in zip(*records)]
    return trajectory


@torch.no_grad()
def _record(network: InformationNetwork, task: ToyTask, trajectory: Trajectory) -> list[Tensor]:
    x_train, y_train = task.train
    x_test, y_test = task.test
    outputs = network.layer_outputs(x_train)
    probabilities = outputs[-1]
    trajectory.train_accuracy.append(float((probabilities.argmax(1) == y_train).float().mean()))
    trajectory.test_accuracy.append(float((network(x_test).argmax(1) == y_test).float().mean()))
    trajectory.train_loss.append(float(F.nll_loss(probabilities.clamp_min(1e-12).log(), y_train)))
    return outputs


# --- the information plane -----------------------------------------------------------

@dataclass
class InformationPlane:
    r"""Every layer's path through the information plane.

    ``i_xt[e][l]`` and ``i_ty[e][l]`` (bits) are :math:`I(X;T_l)` and :math:`I(T_l;Y)` at
    recorded epoch ``epochs[e]``; ``estimator`` says how they were estimated.
    """

    activation: str
    estimator: str
    epochs: list[int]
    i_xt: Tensor
    i_ty: Tensor

    def compression(self) -> dict[str, list[float]]:
        r"""Per layer: the peak of :math:`I(X;T)` over training, its final value, and the
        compression, peak minus final (bits); the epoch of the peak."""
        peak, where = self.i_xt.max(0)
        final = self.i_xt[-1]
        return {
            "peak_bits": peak.tolist(),
            "peak_epoch": [self.epochs[int(e)] for e in where],
            "final_bits": final.tolist(),
            "compression_bits": (peak - final).tolist(),
        }


def information_plane(
    trajectory: Trajectory,
    estimator: str = "binning",
    bins: int | None = None,
    noise_variance: float | None = None,
    bin_range: str = "run",
    progress: bool = True,
) -> InformationPlane:
    r"""Estimate :math:`I(X;T_l)` and :math:`I(T_l;Y)` for every layer at every recorded epoch.

    ``estimator="binning"`` (:func:`binned_information`) cuts each layer into ``bins``
    bins; with ``bin_range="run"`` the bins span the smallest to the largest value the
    layer takes over the whole run (so every epoch of a layer is binned on the same grid;
    for tanh this is close to :math:`(-1, 1)` as in Shwartz-Ziv & Tishby), with
    ``bin_range="epoch"`` they span each epoch's own range. ``estimator="kde"``
    (:func:`kde_information`) uses the upper bound with noise variance
    ``noise_variance``. ``bins`` and ``noise_variance`` default to the run's settings.
    """
    settings = trajectory.settings
    bins = settings.bins if bins is None else bins
    noise_variance = settings.noise_variance if noise_variance is None else noise_variance
    if estimator == "binning":
        if bin_range not in ("run", "epoch"):
            raise ValueError(f"bin_range must be 'run' or 'epoch', got {bin_range!r}")
        ranges = [(float(layer.min()), float(layer.max())) if bin_range == "run" else None for layer in trajectory.layers]
        span = "over the run" if bin_range == "run" else "at each epoch"
        description = f"binning, {bins} bins spanning each layer's range {span}"

        def estimate(layer: int, values: Tensor) -> InformationEstimate:
            return binned_information(values, trajectory.labels, bins, ranges[layer])

    elif estimator == "kde":
        description = f"KDE upper bound, noise variance {noise_variance:g}"

        def estimate(layer: int, values: Tensor) -> InformationEstimate:
            return kde_information(values, trajectory.labels, noise_variance)

    else:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")

    shape = (len(trajectory.epochs), len(trajectory.layers))
    i_xt, i_ty = torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)
    steps = tqdm(range(shape[0]), desc=f"{estimator} ({trajectory.activation})", disable=not progress, mininterval=0.5)
    for e in steps:
        for layer, values in enumerate(trajectory.layers):
            point = estimate(layer, values[e])
            i_xt[e, layer], i_ty[e, layer] = point.i_xt, point.i_ty
    return InformationPlane(trajectory.activation, description, list(trajectory.epochs), i_xt, i_ty)


def layer_eed(trajectory: Trajectory, center: bool = True) -> Tensor:
    r"""EED :math:`N_\mathrm{eff}` [E, L] of every layer at every recorded epoch, from
    :func:`~ib_tutorial.metrics.effective_encoding_dimension` over the training inputs.

    The layers are narrow (D = 10, 7, 5, 4, 3, 2), so :math:`1 \le N_\mathrm{eff} \le D`
    leaves little room. The softmax output has rank one (its two probabilities sum to
    one), so its :math:`N_\mathrm{eff}` is always 1. A layer whose outputs are all equal
    (every ReLU unit dead) uses no direction at all; its entry is NaN.
    """
    eed = torch.full((len(trajectory.epochs), len(trajectory.layers)), math.nan, dtype=torch.float64)
    for layer, values in enumerate(trajectory.layers):
        for e in range(values.shape[0]):
            if values[e].std(0).max() > 0:
                eed[e, layer] = effective_encoding_dimension(values[e], center=center)
    return eed


# --- the whole experiment ------------------------------------------------------------

@dataclass
class InformationExperiment:
    """One activation's run: its recorded :class:`Trajectory`, its information plane under
    each estimator (``planes["binning"]``, ``planes["kde"]``), and ``eed`` [E, L], the EED
    of every layer at every recorded epoch (:func:`layer_eed`)."""

    trajectory: Trajectory
    planes: dict[str, InformationPlane]
    eed: Tensor

    def summary(self) -> dict:
        """Everything but the activations, as plain JSON-ready data (NaN written as None)."""
        run = self.trajectory
        return {
            "activation": run.activation,
            "settings": asdict(run.settings),
            "epochs": run.epochs,
            "train_accuracy": run.train_accuracy,
            "test_accuracy": run.test_accuracy,
            "train_loss": run.train_loss,
            "layer_widths": list(LAYER_WIDTHS),
            "estimators": {
                name: {"description": plane.estimator, "i_xt": plane.i_xt.tolist(), "i_ty": plane.i_ty.tolist(), **plane.compression()}
                for name, plane in self.planes.items()
            },
            "eed": [[None if math.isnan(v) else v for v in row] for row in self.eed.tolist()],
        }


def run_information_experiment(
    settings: IBSettings,
    activations: tuple[str, ...] = ("tanh", "relu"),
    progress: bool = True,
) -> dict[str, InformationExperiment]:
    """Train the toy network once per activation, then estimate every layer's information
    plane with both estimators (bins and noise variance from ``settings``) and its EED."""
    task = toy_task(seed=settings.seed)
    experiments = {}
    for activation in activations:
        trajectory = train_information_network(activation, settings, task, progress)
        planes = {name: information_plane(trajectory, name, progress=progress) for name in ESTIMATORS}
        experiments[activation] = InformationExperiment(trajectory, planes, layer_eed(trajectory))
    return experiments
