"""The trajectory of every layer in the information plane, the EED of every layer, and
the whole experiment (both activations, both estimators) as one call."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from tqdm.auto import tqdm

from ..metrics import effective_encoding_dimension
from ..presets import IBSettings
from .estimators import ESTIMATORS, InformationEstimate, binned_information, kde_information
from .model import LAYER_WIDTHS, Trajectory, toy_task, train_information_network

Tensor = torch.Tensor


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
