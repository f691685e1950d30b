"""The binning estimator's bias figure: shuffled labels carry no information, yet fine bins report some."""
import torch

from ib_tutorial import ib
from ib_tutorial.book.information_plane import plot_binning_bias


def test_fine_bins_find_information_in_shuffled_labels_and_coarse_ones_do_not():
    task = ib.toy_task(seed=0)
    x, y = task.inputs[:1024], task.labels[:1024]
    with torch.no_grad():
        layers = ib.InformationNetwork("tanh", torch.Generator().manual_seed(0)).layer_outputs(x)
    shuffled = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    fig, spurious = plot_binning_bias(layers, y, shuffled, "test", bin_counts=(2, 30, 400))
    assert len(fig.axes) == 2 and set(spurious) == {(layer, bins) for layer in (0, 4) for bins in (2, 30, 400)}
    assert spurious[0, 2] < 0.5 < spurious[0, 400]  # labels carry nothing, yet fine bins find most of a bit
    assert spurious[4, 30] < spurious[0, 30]  # the narrow layer occupies fewer cells
