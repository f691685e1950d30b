"""Information estimators against known answers, and the toy network's training."""
import dataclasses
import math

import pytest
import torch

from ib_tutorial.cli import build_parser
from ib_tutorial.ib import (
    LAYER_WIDTHS,
    InformationNetwork,
    bin_codes,
    binned_information,
    discrete_information,
    entropy_bits,
    flipped_label_information,
    ib_lagrangian,
    icosahedron_vertices,
    independence_bias_bits,
    information_plane,
    kde_information,
    layer_eed,
    logged_epochs,
    mutual_information_bits,
    saved_information_experiment,
    sphere_score,
    toy_task,
    train_information_network,
)
from ib_tutorial.presets import PRESETS, get_preset


def all_patterns() -> torch.Tensor:
    codes = torch.arange(4096)
    return ((codes[:, None] >> torch.arange(12)) & 1).float()


# --- exact quantities ----------------------------------------------------------------

def test_entropy_of_uniform_and_certain_distributions():
    assert entropy_bits(torch.ones(8)) == pytest.approx(3.0, abs=1e-12)
    assert entropy_bits(torch.tensor([5.0, 0.0, 0.0])) == pytest.approx(0.0, abs=1e-12)
    assert entropy_bits(torch.tensor([1.0, 3.0])) == pytest.approx(-(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75)))


def test_mutual_information_of_product_and_diagonal_tables():
    product = torch.outer(torch.tensor([0.2, 0.3, 0.5]), torch.tensor([0.6, 0.4]))
    assert mutual_information_bits(product) == pytest.approx(0.0, abs=1e-12)
    assert mutual_information_bits(torch.eye(4)) == pytest.approx(2.0, abs=1e-12)


def test_ib_lagrangian_prefers_the_label_over_the_input_when_beta_exceeds_one():
    identity, label, constant = (3.0, 1.0), (1.0, 1.0), (0.0, 0.0)  # (I(X;T), I(T;Y)) for X uniform on 8, Y = [X >= 4]
    for beta, best in ((0.5, constant), (2.0, label), (10.0, label)):
        scores = {t: ib_lagrangian(*t, beta) for t in (identity, label, constant)}
        assert min(scores, key=scores.get) == best


# --- binning -------------------------------------------------------------------------

def test_a_flipped_label_keeps_one_minus_the_binary_entropy_of_the_flip():
    labels = (torch.arange(8) >= 4).long()
    for flip in (0.0, 0.1, 0.3):
        lost = 0.0 if flip == 0 else -(flip * math.log2(flip) + (1 - flip) * math.log2(1 - flip))
        point = flipped_label_information(labels, flip)
        assert point.i_xt == pytest.approx(1 - lost) and point.i_ty == pytest.approx(1 - lost)
    assert flipped_label_information(labels, 0.5).i_xt == pytest.approx(0.0, abs=1e-12)


def test_invertible_map_gives_the_entropy_of_the_input():
    # Every 12-bit pattern in its own cell: I(X;T) = H(X) = 12 bits, I(T;Y) = H(Y).
    x = all_patterns()
    y = (x.sum(1) > 6).long()
    estimate = binned_information(x, y, bins=2, value_range=(0.0, 1.0))
    assert estimate.i_xt == pytest.approx(12.0, abs=1e-12)
    assert estimate.i_ty == pytest.approx(entropy_bits(torch.bincount(y)), abs=1e-12)


def test_a_constant_layer_carries_no_information():
    estimate = binned_information(torch.full((100, 3), 0.7), torch.arange(100) % 2)
    assert (estimate.i_xt, estimate.i_ty) == (0.0, 0.0)


def test_independent_labels_give_zero_within_the_stated_bias(generator):
    # T has K = 8 equally likely cells, Y two classes, independent: the plug-in I(T;Y)
    # is chi-squared with 7 degrees of freedom over 2 N ln 2.
    n, cells = 4096, 8
    bias = independence_bias_bits(cells, 2, n)
    draws = []
    for _ in range(200):
        t = torch.rand(n, 3, generator=generator)
        y = torch.randint(0, 2, (n,), generator=generator)
        draws.append(binned_information(t, y, bins=2, value_range=(0.0, 1.0)).i_ty)
    draws = torch.tensor(draws)
    assert (draws >= 0).all()
    assert draws.max() < bias * (1 + 6 * math.sqrt(2 / (cells - 1)))  # six standard deviations
    assert draws.mean() == pytest.approx(bias, rel=0.15)  # the first-order bias is the mean


def test_binning_is_invariant_to_relabelling_bins_and_units(generator):
    t = torch.rand(500, 4, generator=generator) * 2 - 1
    y = torch.randint(0, 3, (500,), generator=generator)
    reference = binned_information(t, y, bins=7, value_range=(-1.0, 1.0))
    mirrored = binned_information(-t, y, bins=7, value_range=(-1.0, 1.0))  # bin k becomes bin 6 - k
    shuffled_units = binned_information(t[:, torch.randperm(4, generator=generator)], y, bins=7, value_range=(-1.0, 1.0))
    assert mirrored.i_xt == pytest.approx(reference.i_xt, abs=1e-12)
    assert mirrored.i_ty == pytest.approx(reference.i_ty, abs=1e-12)
    assert shuffled_units.i_xt == pytest.approx(reference.i_xt, abs=1e-12)
    assert shuffled_units.i_ty == pytest.approx(reference.i_ty, abs=1e-12)
    # Any renaming of the cells (here a random permutation, spread out) changes nothing.
    codes = bin_codes(t, bins=7, value_range=(-1.0, 1.0))
    renamed = torch.randperm(int(codes.max()) + 1, generator=generator)[codes] * 13 + 5
    for name in ("i_xt", "i_ty"):
        assert getattr(discrete_information(renamed, y), name) == pytest.approx(getattr(discrete_information(codes, y), name), abs=1e-12)
    assert discrete_information(codes, y).i_xt == pytest.approx(reference.i_xt, abs=1e-12)


def test_values_outside_the_range_fall_in_the_edge_bins():
    codes = bin_codes(torch.tensor([[-5.0], [0.1], [0.9], [7.0]]), bins=2, value_range=(0.0, 1.0))
    assert codes.tolist() == [0, 0, 1, 1]


def test_more_bins_never_merge_cells(generator):
    # Doubling the bins refines the partition, so H(T) cannot fall.
    t = torch.randn(800, 3, generator=generator)
    y = torch.randint(0, 2, (800,), generator=generator)
    values = [binned_information(t, y, bins=b, value_range=(-4.0, 4.0)).i_xt for b in (2, 4, 8, 16, 32)]
    assert values == sorted(values)
    assert values[-1] <= math.log2(800) + 1e-12


# --- kernel (noisy channel) estimator ------------------------------------------------

def kde_reference(h: torch.Tensor, y: torch.Tensor, variance: float, scale: float) -> tuple[float, float]:
    """The pairwise-distance estimate written out directly, in float64."""
    h = h.double()
    kernel = torch.exp(-torch.cdist(h, h) ** 2 / (scale * variance))
    i_xt = -torch.log(kernel.mean(1)).mean()
    conditional = 0.0
    for c in y.unique():
        rows = y == c
        conditional += rows.double().mean() * -torch.log(kernel[rows][:, rows].mean(1)).mean()
    return float(i_xt) / math.log(2), float(i_xt - conditional) / math.log(2)


@pytest.mark.parametrize("bound, scale", [("upper", 2.0), ("lower", 8.0)])
def test_kde_matches_the_formula_written_out(generator, bound, scale):
    h = torch.randn(300, 4, generator=generator) * 0.2
    y = torch.randint(0, 3, (300,), generator=generator)
    estimate = kde_information(h, y, noise_variance=0.01, bound=bound, chunk=64)
    i_xt, i_ty = kde_reference(h, y, 0.01, scale)
    assert estimate.i_xt == pytest.approx(i_xt, abs=1e-4)
    assert estimate.i_ty == pytest.approx(i_ty, abs=1e-4)


def test_kde_of_well_separated_points_is_the_entropy_of_the_input():
    # Distinct binary patterns are at distance >= 1, far beyond the noise (sigma ~ 0.03).
    x = all_patterns()
    y = (x.sum(1) > 6).long()
    estimate = kde_information(x, y, noise_variance=1e-3)
    assert estimate.i_xt == pytest.approx(12.0, abs=1e-6)
    assert estimate.i_ty == pytest.approx(entropy_bits(torch.bincount(y)), abs=1e-6)


def test_kde_of_a_constant_layer_is_zero():
    estimate = kde_information(torch.zeros(200, 3), torch.arange(200) % 2)
    assert estimate.i_xt == pytest.approx(0.0, abs=1e-9)
    assert estimate.i_ty == pytest.approx(0.0, abs=1e-9)


def test_kde_of_two_far_clusters_is_one_bit(generator):
    y = torch.arange(400) % 2
    h = y[:, None].float() * 100 + 1e-4 * torch.randn(400, 2, generator=generator)
    estimate = kde_information(h, y, noise_variance=1.0)
    assert estimate.i_xt == pytest.approx(1.0, abs=1e-3)
    assert estimate.i_ty == pytest.approx(1.0, abs=1e-3)


def test_kde_of_independent_labels_is_near_zero(generator):
    # Dense points (spacing 1/2000) under wide noise (sigma = 0.1): the noisy channel
    # carries almost no information about labels drawn independently. Measured bias: a
    # few thousandths of a bit; the stated tolerance is 0.01 bit.
    h = torch.rand(2000, 1, generator=generator)
    y = torch.randint(0, 2, (2000,), generator=generator)
    estimate = kde_information(h, y, noise_variance=1e-2)
    assert abs(estimate.i_ty) < 0.01


def test_kde_upper_bound_lies_above_the_lower_bound(generator):
    h = torch.randn(500, 3, generator=generator) * 0.1
    y = torch.randint(0, 2, (500,), generator=generator)
    upper = kde_information(h, y, noise_variance=1e-2, bound="upper")
    lower = kde_information(h, y, noise_variance=1e-2, bound="lower")
    assert lower.i_xt < upper.i_xt <= math.log2(500)


def test_estimators_reject_mistakes():
    with pytest.raises(ValueError, match="one label per row"):
        binned_information(torch.zeros(5, 2), torch.zeros(4))
    with pytest.raises(ValueError, match="noise_variance"):
        kde_information(torch.zeros(5, 2), torch.zeros(5), noise_variance=0)
    with pytest.raises(ValueError, match="bound"):
        kde_information(torch.zeros(5, 2), torch.zeros(5), bound="middle")


# --- the task and the network --------------------------------------------------------

def test_toy_task_is_every_pattern_with_a_balanced_split():
    task = toy_task()
    assert torch.unique(task.inputs, dim=0).shape[0] == 4096
    assert int(task.labels.sum()) == 2012
    assert len(task.train_index) == round(0.85 * 4096)
    together = torch.cat([task.train_index, task.test_index]).sort().values
    assert torch.equal(together, torch.arange(4096))


def test_label_is_invariant_to_rotations_of_the_sphere():
    # (x, y, z) -> (y, z, x) is a rotation that maps the icosahedron onto itself,
    # so it only permutes the 12 units; the score must not change.
    u = icosahedron_vertices()
    rotated = u[:, [1, 2, 0]]
    source_of = torch.cdist(rotated, u).argmin(1)  # rotated[i] == u[source_of[i]]
    assert torch.allclose(u[source_of], rotated)
    x = all_patterns()
    moved = torch.empty_like(x)
    moved[:, source_of] = x  # unit i's value now sits on vertex R u_i
    assert torch.allclose(sphere_score(moved), sphere_score(x))


def test_network_layers_have_the_published_widths():
    network = InformationNetwork("relu", torch.Generator().manual_seed(0))
    x = all_patterns()[:50]
    outputs = network.layer_outputs(x)
    assert tuple(o.shape[1] for o in outputs) == LAYER_WIDTHS
    assert torch.allclose(outputs[-1], torch.softmax(network(x), dim=1))
    with pytest.raises(ValueError, match="activation"):
        InformationNetwork("sigmoid")


def test_logged_epochs_are_log_spaced_and_include_both_ends():
    epochs = logged_epochs(10000, 20)
    assert epochs[0] == 0 and epochs[-1] == 10000 and len(epochs) <= 20
    assert epochs == sorted(set(epochs))
    assert epochs[1:4] == [1, 2, 3]


def test_every_preset_has_ib_settings():
    for preset in PRESETS.values():
        assert preset.ib.epochs > 0 and preset.ib.bins > 0 and preset.ib.noise_variance > 0


def test_cli_offers_the_information_plane():
    args = build_parser().parse_args(["infoplane", "--preset", "ci", "--activation", "tanh"])
    assert args.activation == ["tanh"] and args.func.__name__ == "_information_plane"


# --- training (ci preset) ------------------------------------------------------------

@pytest.fixture(scope="module")
def ci_runs():
    settings = get_preset("ci").ib
    task = toy_task(seed=settings.seed)
    return {a: train_information_network(a, settings, task, progress=False) for a in ("tanh", "relu")}


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_ci_network_learns_the_task(ci_runs, activation):
    run = ci_runs[activation]
    assert run.train_accuracy[0] < 0.6  # chance before training
    assert run.train_accuracy[-1] > 0.95
    assert run.test_accuracy[-1] > 0.9
    assert run.train_loss[-1] < run.train_loss[0] / 3


def test_tanh_compresses_and_relu_does_not_under_binning(ci_runs):
    # The contrast of Saxe et al.: the last hidden layer (T5) of the tanh network loses
    # bits of I(X;T) after its peak; the ReLU network's hidden layers keep theirs.
    tanh = information_plane(ci_runs["tanh"], "binning", progress=False).compression()
    relu = information_plane(ci_runs["relu"], "binning", progress=False).compression()
    assert tanh["compression_bits"][4] > 2.0
    assert max(relu["compression_bits"][:5]) < 0.5


def test_information_plane_and_eed_shapes(ci_runs):
    run = ci_runs["relu"]
    for estimator, options in (("binning", {"bin_range": "epoch"}), ("kde", {})):
        short = dataclasses.replace(run, epochs=run.epochs[:2], layers=[layer[:2] for layer in run.layers])
        plane = information_plane(short, estimator, progress=False, **options)
        assert plane.i_xt.shape == (2, 6) and plane.i_ty.shape == (2, 6)
        assert (plane.i_xt <= math.log2(len(run.labels)) + 1e-6).all()
    eed = layer_eed(run)
    assert eed.shape == (len(run.epochs), 6)
    assert torch.allclose(eed[:, -1], torch.ones(len(run.epochs), dtype=torch.float64), atol=1e-6)  # softmax: rank one
    widths = torch.tensor(LAYER_WIDTHS, dtype=torch.float64)
    assert (eed[~eed.isnan()] >= 1 - 1e-9).all() and (eed.nan_to_num(1.0) <= widths + 1e-9).all()
    with pytest.raises(ValueError, match="estimator"):
        information_plane(run, "ksg")


def test_training_is_repeatable():
    settings = dataclasses.replace(get_preset("ci").ib, epochs=20, logged_epochs=3)
    first, second = (train_information_network("tanh", settings, progress=False) for _ in range(2))
    assert all(torch.equal(a, b) for a, b in zip(first.layers, second.layers))


def test_a_saved_experiment_is_loaded_back_whole_and_only_for_the_same_settings(tmp_path, capsys):
    settings = dataclasses.replace(get_preset("ci").ib, epochs=20, logged_epochs=3)
    first = saved_information_experiment(settings, ("tanh",), folder=tmp_path, progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 1 and "loaded" not in capsys.readouterr().out
    again = saved_information_experiment(settings, ("tanh",), folder=tmp_path, progress=False)
    assert "loaded" in capsys.readouterr().out
    a, b = first["tanh"], again["tanh"]
    assert all(torch.equal(x, y) for x, y in zip(a.trajectory.layers, b.trajectory.layers))
    assert torch.equal(a.planes["kde"].i_xt, b.planes["kde"].i_xt) and a.summary() == b.summary()
    assert a.compression_report() == b.compression_report() and "T6" in a.compression_report()
    saved_information_experiment(dataclasses.replace(settings, bins=10), ("tanh",), folder=tmp_path, progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 2  # another setting, another result


def test_every_logged_epoch_is_recorded_once_from_the_first_to_the_last():
    settings = dataclasses.replace(get_preset("ci").ib, epochs=7, logged_epochs=3)
    run = train_information_network("tanh", settings, progress=False)
    assert run.epochs[0] == 0 and run.epochs[-1] == 7 and len(run.train_accuracy) == len(run.epochs)
