"""The toy task (all 4096 inputs of 12 bits, two classes), the 12-10-7-5-4-3-2 network, and
its training with every layer recorded at log-spaced epochs."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..presets import IBSettings
from .estimators import one_thread

Tensor = torch.Tensor

INPUT_BITS = 12
LAYER_WIDTHS = (10, 7, 5, 4, 3, 2)
ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}


@dataclass(frozen=True)
class ToyTask:
    """``inputs`` [4096, 12] and ``labels`` [4096] in {0, 1}, and a seeded train/test split."""

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
    permutations of :math:`(0, \pm 1, \pm\varphi)`, normalised; one an input bit."""
    phi = (1 + math.sqrt(5)) / 2
    points = []
    for a in (-1.0, 1.0):
        for b in (-phi, phi):
            points += [(0.0, a, b), (a, b, 0.0), (b, 0.0, a)]
    vertices = torch.tensor(points, dtype=torch.float64)
    return vertices / vertices.norm(dim=1, keepdim=True)


def sphere_score(inputs: Tensor) -> Tensor:
    r"""The rotation-invariant score [N] of binary patterns ``inputs`` [N, 12]: with spins
    :math:`s_i = 2x_i - 1` placed on the icosahedron vertices :math:`u_i`,

    .. math::

        f(x) = \sum_i s_i - w \, \Big\lVert \sum_i s_i u_i \Big\rVert^2, \qquad w = 0.3,

    a monopole (how many bits are on) minus a dipole (how lopsided the active points are).
    """
    spins = 2 * inputs.to(torch.float64) - 1
    dipole = spins @ icosahedron_vertices()
    return spins.sum(1) - 0.3 * (dipole * dipole).sum(1)


def toy_task(seed: int = 0) -> ToyTask:
    r"""All :math:`2^{12} = 4096` binary inputs labelled :math:`y = [f(x) > \theta]`, 85 % drawn for
    training as in Shwartz-Ziv & Tishby (2017), who did not publish their function: :math:`f` is
    :func:`sphere_score` and :math:`\theta` its median (2,012 of 4,096 positive)."""
    codes = torch.arange(2**INPUT_BITS)
    inputs = ((codes[:, None] >> torch.arange(INPUT_BITS)) & 1).to(torch.float32)
    score = sphere_score(inputs)
    labels = (score > score.median()).long()
    order = torch.randperm(len(codes), generator=torch.Generator().manual_seed(seed))
    n_train = round(0.85 * len(codes))
    return ToyTask(inputs, labels, order[:n_train].sort().values, order[n_train:].sort().values)


class InformationNetwork(torch.nn.Module):
    r"""The 12-10-7-5-4-3-2 network of Shwartz-Ziv & Tishby: five hidden ``tanh`` or ``relu``
    layers and a softmax output. Initialised as in the code released with Saxe et al.: hidden weights
    normal with standard deviation :math:`1/\sqrt{\text{width}}` truncated at two standard deviations,
    output weights Glorot-uniform, biases zero.
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
    """At most ``count`` epochs from 0 to ``epochs``, spaced evenly in log(epoch): most records
    fall early, where the information plane moves fastest."""
    if epochs < 1 or count < 2:
        raise ValueError(f"need epochs >= 1 and count >= 2, got epochs={epochs}, count={count}")
    spaced = torch.logspace(0, math.log10(epochs), count - 1, dtype=torch.float64).round().long()
    return sorted({0, epochs, *spaced.tolist()})


@dataclass
class Trajectory:
    """A training run with its layers recorded: ``layers[l]`` is [E, N, width], layer l's outputs
    on the N training inputs at each recorded epoch; accuracies and loss (nats) per recorded epoch."""

    activation: str
    settings: IBSettings
    epochs: list[int]
    layers: list[Tensor]
    labels: Tensor
    train_accuracy: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)


def train_information_network(activation: str, settings: IBSettings, task: ToyTask | None = None,
                              progress: bool = True) -> Trajectory:
    """Train :class:`InformationNetwork` with Adam and record every layer at :func:`logged_epochs`;
    on the CPU, where a network this small runs fastest."""
    task = task if task is not None else toy_task(seed=settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    network = InformationNetwork(activation, generator)
    # fused: one kernel updates all twelve tiny parameter tensors, the cheapest step on a CPU.
    optimizer = torch.optim.Adam(network.parameters(), lr=settings.learning_rate, fused=True)
    (x_train, y_train), (x_test, y_test) = task.train, task.test
    n = x_train.shape[0]
    batch = n if settings.batch_size is None else min(settings.batch_size, n)
    record_at = logged_epochs(settings.epochs, settings.logged_epochs)
    records: list[list[Tensor]] = []
    trajectory = Trajectory(activation, settings, record_at, [], y_train)

    @torch.no_grad()
    def record() -> None:
        outputs = network.layer_outputs(x_train)
        probabilities = outputs[-1]
        trajectory.train_accuracy.append(float((probabilities.argmax(1) == y_train).float().mean()))
        trajectory.test_accuracy.append(float((network(x_test).argmax(1) == y_test).float().mean()))
        trajectory.train_loss.append(float(F.nll_loss(probabilities.clamp_min(1e-12).log(), y_train)))
        records.append(outputs)

    bar = tqdm(range(settings.epochs), desc=f"training ({activation})", unit="epoch", disable=not progress,
               mininterval=0.5)
    with one_thread():
        for epoch in bar:
            if epoch == record_at[len(records)]:  # the network as it enters this epoch
                record()
                bar.set_postfix(train_acc=f"{trajectory.train_accuracy[-1]:.3f}", refresh=False)
            order = torch.randperm(n, generator=generator) if batch < n else None
            for start in range(0, n, batch):
                rows = order[start : start + batch] if order is not None else slice(None)
                loss = F.cross_entropy(network(x_train[rows]), y_train[rows])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        record()  # after the last epoch (the last of record_at)
    trajectory.layers = [torch.stack(per_layer) for per_layer in zip(*records)]
    return trajectory
