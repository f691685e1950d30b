r"""The Information Bottleneck toy: mutual-information estimators and the information plane,
everything the Information Bottleneck chapter computes (its figures:
:mod:`ib_tutorial.book.information_plane`). All information is in bits.

* :mod:`~ib_tutorial.ib.estimators`: exact information of discrete distributions, the
  binning estimator and the kernel (KDE) bound for the activations of a layer;
* :mod:`~ib_tutorial.ib.model`: the toy task (all 4096 inputs of 12 bits, two classes),
  the 12-10-7-5-4-3-2 network and its training, every layer recorded at log-spaced epochs;
* :mod:`~ib_tutorial.ib.experiment`: every layer's trajectory in the information plane,
  its EED, and the whole experiment as one call.
"""
from .estimators import (
    ESTIMATORS, bin_codes, binned_information, discrete_information, entropy_bits, flipped_label_information,
    ib_lagrangian, independence_bias_bits, kde_information, mutual_information_bits,
)
from .experiment import (
    InformationPlane, information_plane, layer_eed, run_information_experiment, saved_information_experiment,
)
from .model import (
    ACTIVATIONS, LAYER_WIDTHS, InformationNetwork, icosahedron_vertices, logged_epochs, sphere_score, toy_task,
    train_information_network,
)

__all__ = [
    "ACTIVATIONS", "ESTIMATORS", "LAYER_WIDTHS", "InformationNetwork", "InformationPlane", "bin_codes",
    "binned_information", "discrete_information", "entropy_bits", "flipped_label_information", "ib_lagrangian",
    "icosahedron_vertices", "independence_bias_bits", "information_plane", "kde_information", "layer_eed",
    "logged_epochs", "mutual_information_bits", "run_information_experiment", "saved_information_experiment",
    "sphere_score", "toy_task", "train_information_network",
]
