"""The EED chapter's figure of spectra with known answers: each normalised covariance
spectrum beside its effective dimension."""
from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import torch

from ..measure import metrics
from .captions import add_caption

#: The floor below which a share of variance is drawn, so that exact zeros stay on the log axis.
FLOOR = 1e-8


def plot_spectra(samples: Mapping[str, torch.Tensor]) -> plt.Figure:
    r"""The normalised covariance spectrum :math:`p_k = \lambda_k / \sum_j \lambda_j` of each
    feature matrix of ``samples`` (name -> [N, D]) on a log axis, labelled with its
    :math:`N_\mathrm{eff}`; shares below :data:`FLOOR` are drawn at it."""
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for name, features in samples.items():
        spectrum = metrics.covariance_spectrum(features)
        shares = (spectrum / spectrum.sum()).clamp_min(FLOOR)
        n_eff = metrics.effective_encoding_dimension(features)
        ax.semilogy(range(1, len(shares) + 1), shares, marker=".", label=f"{name} (N_eff = {n_eff:.1f})")
    ax.set(xlabel="principal direction k (sorted by variance)", ylabel="share of total variance p_k",
           title="Normalised covariance spectra and their effective dimension")
    ax.legend()
    n, d = next(iter(samples.values())).shape
    add_caption(fig, f"{n} Gaussian samples per spectrum, D = {d}; values below {FLOOR:g} drawn at {FLOOR:g}")
    return fig
