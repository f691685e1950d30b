"""The EED chapter's spectra figure: one line per feature matrix, its share of variance per direction."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch

from ib_tutorial.book.plots import FLOOR, plot_spectra


def test_each_spectrum_is_drawn_as_its_shares_of_variance_with_its_effective_dimension():
    generator = torch.Generator().manual_seed(0)
    white = torch.randn(4000, 8, generator=generator, dtype=torch.float64)
    rank_two = white * torch.tensor([1.0, 1.0] + [0.0] * 6, dtype=torch.float64)
    ax = plot_spectra({"isotropic": white, "rank 2": rank_two}).axes[0]
    isotropic, low_rank = (line.get_ydata() for line in ax.lines)
    assert np.allclose(isotropic, 1 / 8, rtol=0.1)
    assert low_rank[:2] == pytest.approx([0.5, 0.5], rel=0.1) and np.all(low_rank[2:] == FLOOR)
    assert [text.get_text() for text in ax.get_legend().get_texts()][1] == "rank 2 (N_eff = 2.0)"
