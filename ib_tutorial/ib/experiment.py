"""Every layer's trajectory in the information plane and its EED, and the whole experiment
(both activations, both estimators) as one call, saved while its settings and code are unchanged."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
from tqdm.auto import tqdm

from ..files import atomic_write, data_root
from ..measure.metrics import effective_encoding_dimension
from ..presets import IBSettings
from .estimators import ESTIMATORS, binned_information, kde_information
from .model import LAYER_WIDTHS, Trajectory, toy_task, train_information_network

Tensor = torch.Tensor


@dataclass
class InformationPlane:
    r"""Every layer's path through the information plane: ``i_xt[e][l]`` and ``i_ty[e][l]``
    (bits) at recorded epoch ``epochs[e]``; ``estimator`` says how they were estimated."""

    activation: str
    estimator: str
    epochs: list[int]
    i_xt: Tensor
    i_ty: Tensor

    def compression(self) -> dict[str, list[float]]:
        r"""Per layer: the peak of :math:`I(X;T)`, its epoch, its final value, and the compression,
        peak minus final (bits)."""
        peak, where = self.i_xt.max(0)
        final = self.i_xt[-1]
        return {
            "peak_bits": peak.tolist(),
            "peak_epoch": [self.epochs[int(e)] for e in where],
            "final_bits": final.tolist(),
            "compression_bits": (peak - final).tolist(),
        }


def information_plane(trajectory: Trajectory, estimator: str = "binning", bins: int | None = None,
                      noise_variance: float | None = None, bin_range: str = "run",
                      progress: bool = True) -> InformationPlane:
    r"""Estimate :math:`I(X;T_l)` and :math:`I(T_l;Y)` for every layer at every recorded epoch:
    ``"binning"`` with bins spanning each layer's range over the whole run (``bin_range="run"``,
    as Shwartz-Ziv & Tishby) or at each epoch (``"epoch"``), ``"kde"`` with the upper bound.
    ``bins`` and ``noise_variance`` default to the run's settings."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if bin_range not in ("run", "epoch"):
        raise ValueError(f"bin_range must be 'run' or 'epoch', got {bin_range!r}")
    bins = trajectory.settings.bins if bins is None else bins
    noise_variance = trajectory.settings.noise_variance if noise_variance is None else noise_variance
    ranges = [(float(layer.min()), float(layer.max())) if bin_range == "run" else None for layer in trajectory.layers]
    if estimator == "binning":
        span = "over the run" if bin_range == "run" else "at each epoch"
        description = f"binning, {bins} bins spanning each layer's range {span}"
    else:
        description = f"KDE upper bound, noise variance {noise_variance:g}"
    shape = (len(trajectory.epochs), len(trajectory.layers))
    i_xt, i_ty = torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)
    steps = tqdm(range(shape[0]), desc=f"{estimator} ({trajectory.activation})", disable=not progress, mininterval=0.5)
    for e in steps:
        for layer, values in enumerate(trajectory.layers):
            if estimator == "binning":
                point = binned_information(values[e], trajectory.labels, bins, ranges[layer])
            else:
                point = kde_information(values[e], trajectory.labels, noise_variance)
            i_xt[e, layer], i_ty[e, layer] = point.i_xt, point.i_ty
    return InformationPlane(trajectory.activation, description, list(trajectory.epochs), i_xt, i_ty)


def layer_eed(trajectory: Trajectory) -> Tensor:
    r"""EED :math:`N_\mathrm{eff}` [E, L] of every layer at every recorded epoch, over the
    training inputs: 1 for the softmax output (rank one), NaN for a constant layer."""
    eed = torch.full((len(trajectory.epochs), len(trajectory.layers)), math.nan, dtype=torch.float64)
    for layer, values in enumerate(trajectory.layers):
        for e in range(values.shape[0]):
            if values[e].std(0).max() > 0:
                eed[e, layer] = effective_encoding_dimension(values[e])
    return eed


@dataclass
class InformationExperiment:
    """One activation's run: its :class:`Trajectory`, its information plane by estimator, and
    ``eed`` (:func:`layer_eed`)."""

    trajectory: Trajectory
    planes: dict[str, InformationPlane]
    eed: Tensor

    def summary(self) -> dict:
        """Everything but the activations, as plain JSON-ready data (NaN written as None)."""
        state = self.state()
        return {
            **{key: state[key] for key in ("activation", "settings", "epochs", "train_accuracy", "test_accuracy",
                                           "train_loss")},
            "layer_widths": list(LAYER_WIDTHS),
            "estimators": {
                name: {"description": plane.estimator, "i_xt": plane.i_xt.tolist(), "i_ty": plane.i_ty.tolist(), **plane.compression()}
                for name, plane in self.planes.items()
            },
            "eed": [[None if math.isnan(v) else v for v in row] for row in self.eed.tolist()],
        }

    def state(self) -> dict:
        """Everything, activations included, as ``torch.load(weights_only=True)`` reads it back."""
        run = self.trajectory
        planes = {name: {"estimator": p.estimator, "i_xt": p.i_xt, "i_ty": p.i_ty} for name, p in self.planes.items()}
        return {**{f.name: getattr(run, f.name) for f in fields(run)}, "settings": asdict(run.settings),
                "eed": self.eed, "planes": planes}

    @classmethod
    def from_state(cls, state: dict) -> "InformationExperiment":
        run = Trajectory(**{f.name: state[f.name] for f in fields(Trajectory)})
        run.settings = IBSettings(**state["settings"])
        planes = {name: InformationPlane(run.activation, p["estimator"], run.epochs, p["i_xt"], p["i_ty"])
                  for name, p in state["planes"].items()}
        return cls(run, planes, state["eed"])

    def compression_report(self) -> str:
        """Train and test accuracy, then per estimator :meth:`InformationPlane.compression` by layer."""
        summary = self.summary()
        lines = [f"{summary['activation']}: train accuracy {summary['train_accuracy'][-1]:.3f}, "
                 f"test accuracy {summary['test_accuracy'][-1]:.3f}"]
        for estimator in summary["estimators"].values():
            lines += [f"  {estimator['description']}", "    layer  width  peak I(X;T) (epoch)  final  compression  [bits]"]
            rows = zip(summary["layer_widths"], estimator["peak_bits"], estimator["peak_epoch"], estimator["final_bits"],
                       estimator["compression_bits"])
            lines += [f"    T{layer}     {width:>3}   {peak:6.2f} ({epoch:>5})      {final:6.2f}  {drop:6.2f}"
                      for layer, (width, peak, epoch, final, drop) in enumerate(rows, start=1)]
        return "\n".join(lines)


def run_information_experiment(settings: IBSettings, activations: tuple[str, ...] = ("tanh", "relu"),
                               progress: bool = True) -> dict[str, InformationExperiment]:
    """Train the toy network once per activation, then estimate every layer's information
    plane with both estimators and its EED."""
    task = toy_task(seed=settings.seed)
    experiments = {}
    for activation in activations:
        trajectory = train_information_network(activation, settings, task, progress)
        planes = {name: information_plane(trajectory, name, progress=progress) for name in ESTIMATORS}
        experiments[activation] = InformationExperiment(trajectory, planes, layer_eed(trajectory))
    return experiments


def saved_information_experiment(settings: IBSettings, activations: tuple[str, ...] = ("tanh", "relu"),
                                 folder: str | Path | None = None,
                                 progress: bool = True) -> dict[str, InformationExperiment]:
    """:func:`run_information_experiment`, saved under ``folder`` (default
    ``<data root>/infoplane``) and loaded from there when the same settings were run by
    the same code of this subpackage before."""
    digest = hashlib.sha256(json.dumps([asdict(settings), list(activations)], sort_keys=True).encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    folder = Path(folder) if folder is not None else data_root() / "infoplane"
    path = folder / f"{digest.hexdigest()[:16]}.pt"
    if path.exists():
        print(f"loaded {path.name} from {path.parent.name}/ in the data folder: the same settings and code ran "
              "before (delete the file to run again)")
        states = torch.load(path, weights_only=True)
        return {name: InformationExperiment.from_state(state) for name, state in states.items()}
    experiments = run_information_experiment(settings, activations, progress)
    atomic_write(path, lambda f: torch.save({name: e.state() for name, e in experiments.items()}, f))
    return experiments

