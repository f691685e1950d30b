"""Metrics against cases with known answers."""
import math

import pytest
import torch

from ib_tutorial.metrics import (
    CovarianceAccumulator,
    covariance_spectrum,
    eed_percent,
    effective_dimension_from_spectrum,
    effective_encoding_dimension,
    participation_ratio,
    participation_ratio_from_spectrum,
    rankme,
    spectral_entropy,
    twonn_dimension,
)


def gaussian(n, d, generator, dtype=torch.float64):
    return torch.randn(n, d, generator=generator, dtype=dtype)


def random_rotation(d, generator):
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


# --- closed-form spectra -------------------------------------------------------------

def test_flat_spectrum_uses_every_dimension():
    assert effective_dimension_from_spectrum(torch.ones(50)) == pytest.approx(50, rel=1e-12)


def test_single_direction_gives_one():
    lam = torch.zeros(50)
    lam[0] = 3.0
    assert effective_dimension_from_spectrum(lam) == pytest.approx(1.0, rel=1e-12)


def test_two_level_spectrum_matches_closed_form():
    # k eigenvalues of a and D-k of b: S = -k p_a log p_a - (D-k) p_b log p_b.
    k, d, a, b = 5, 20, 4.0, 1.0
    lam = torch.tensor([a] * k + [b] * (d - k))
    total = k * a + (d - k) * b
    pa, pb = a / total, b / total
    expected = -k * pa * math.log(pa) - (d - k) * pb * math.log(pb)
    assert spectral_entropy(lam) == pytest.approx(expected, rel=1e-12)


def test_power_law_spectrum_matches_closed_form():
    lam = torch.arange(1, 101, dtype=torch.float64) ** -1.0
    p = lam / lam.sum()
    expected = math.exp(-float((p * p.log()).sum()))
    assert effective_dimension_from_spectrum(lam) == pytest.approx(expected, rel=1e-12)
    assert 1 < expected < 100


def test_participation_ratio_never_exceeds_neff():
    lam = torch.arange(1, 65, dtype=torch.float64) ** -1.5
    assert participation_ratio_from_spectrum(lam) < effective_dimension_from_spectrum(lam)
    assert participation_ratio_from_spectrum(torch.ones(64)) == pytest.approx(64)


# --- EED on sampled data -------------------------------------------------------------

def test_isotropic_gaussian_is_nearly_full_rank(generator):
    x = gaussian(20_000, 64, generator)
    assert eed_percent(effective_encoding_dimension(x), 64) >= 97


def test_exact_rank_k_data_gives_k(generator):
    k, d = 10, 64
    x = gaussian(20_000, k, generator) @ random_rotation(d, generator)[:k]
    assert effective_encoding_dimension(x) == pytest.approx(k, rel=0.02)


def test_invariant_to_rotation_and_rescaling(generator):
    x = gaussian(2000, 32, generator) * torch.linspace(0.1, 3, 32, dtype=torch.float64)
    base = effective_encoding_dimension(x)
    rotated = x @ random_rotation(32, generator)
    assert effective_encoding_dimension(rotated) == pytest.approx(base, rel=1e-9)
    assert effective_encoding_dimension(17.5 * x) == pytest.approx(base, rel=1e-9)


def test_centring_removes_a_large_mean(generator):
    # Isotropic spread around a mean far from the origin: centred sees D dimensions,
    # uncentred sees one dominant direction (the mean) and N_eff collapses towards 1.
    d = 32
    x = gaussian(5000, d, generator) + 100.0 * torch.ones(d, dtype=torch.float64)
    centred = effective_encoding_dimension(x, center=True)
    uncentred = effective_encoding_dimension(x, center=False)
    assert centred > 0.95 * d
    assert uncentred < 1.1
    # With zero mean the two agree up to the N-1 vs N normalisation (which EED ignores).
    z = gaussian(5000, d, generator)
    z = z - z.mean(0)
    assert effective_encoding_dimension(z, center=False) == pytest.approx(
        effective_encoding_dimension(z, center=True), rel=1e-12
    )


def test_uncentred_covariance_is_gram_over_n(generator):
    x = gaussian(300, 8, generator) + 2.0
    acc = CovarianceAccumulator(8, center=False)
    acc.update(x)
    torch.testing.assert_close(acc.covariance(), x.T @ x / 300, rtol=1e-12, atol=1e-12)


def test_centred_covariance_matches_torch_cov(generator):
    x = gaussian(300, 8, generator) + 5.0
    acc = CovarianceAccumulator(8)
    acc.update(x)
    torch.testing.assert_close(acc.covariance(), torch.cov(x.T), rtol=1e-12, atol=1e-12)


# --- streaming -----------------------------------------------------------------------

@pytest.mark.parametrize("center", [True, False])
def test_streaming_equals_one_shot(generator, center):
    x = gaussian(10_000, 48, generator) * 3.0 + 50.0
    one_shot = CovarianceAccumulator(48, center=center)
    one_shot.update(x)
    streamed = CovarianceAccumulator(48, center=center)
    for chunk in torch.split(x, 97):  # many uneven batches
        streamed.update(chunk)
    torch.testing.assert_close(streamed.covariance(), one_shot.covariance(), rtol=1e-9, atol=0)
    assert streamed.effective_dimension() == pytest.approx(one_shot.effective_dimension(), rel=1e-9)


def test_merging_accumulators_equals_one_pass(generator):
    x = gaussian(4000, 16, generator) + 10.0
    parts = [CovarianceAccumulator(16) for _ in range(3)]
    for acc, chunk in zip(parts, torch.tensor_split(x, 3)):
        acc.update(chunk)
    merged = CovarianceAccumulator(16)
    for acc in parts:
        merged.merge(acc)
    torch.testing.assert_close(merged.covariance(), torch.cov(x.T), rtol=1e-9, atol=0)


def test_float32_batches_accumulate_in_float64(generator):
    x = gaussian(1000, 8, generator).float()
    acc = CovarianceAccumulator(8)
    acc.update(x)
    assert acc.covariance().dtype == torch.float64


# --- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_input_is_rejected(bad):
    x = torch.randn(10, 4)
    x[3, 2] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        effective_encoding_dimension(x)


def test_one_sample_is_rejected():
    with pytest.raises(ValueError, match="at least 2 samples"):
        effective_encoding_dimension(torch.randn(1, 4))


def test_wrong_width_is_rejected():
    with pytest.raises(ValueError, match=r"\[n, 4\]"):
        CovarianceAccumulator(4).update(torch.randn(3, 5))


def test_round_off_negative_eigenvalues_are_clamped(generator):
    x = gaussian(5, 40, generator)  # rank 4 < D: most eigenvalues are 0 up to round-off
    assert (covariance_spectrum(x) >= 0).all()


# --- companions ----------------------------------------------------------------------

def test_rankme_of_orthogonal_rows_is_their_count():
    x = torch.eye(12, dtype=torch.float64)[:5] * 3.0  # 5 equal singular values
    assert rankme(x) == pytest.approx(5, rel=1e-5)


def test_rankme_exceeds_neff_on_a_decaying_spectrum(generator):
    x = gaussian(4000, 32, generator) * torch.logspace(0, -2, 32, dtype=torch.float64)
    assert rankme(x) > effective_encoding_dimension(x)


def test_streaming_rankme_matches_direct(generator):
    x = gaussian(2000, 16, generator) + 1.0
    acc = CovarianceAccumulator(16)
    for chunk in torch.split(x, 300):
        acc.update(chunk)
    assert acc.rankme() == pytest.approx(rankme(x), rel=1e-6)


def test_participation_ratio_of_isotropic_data(generator):
    assert participation_ratio(gaussian(20_000, 16, generator)) == pytest.approx(16, rel=0.02)


@pytest.mark.parametrize("d", [2, 5])
def test_twonn_recovers_dimension_of_a_flat_manifold(generator, d):
    # Uniform points on a d-dimensional cube, embedded by a rotation in 30 dimensions.
    x = torch.rand(4000, d, generator=generator, dtype=torch.float64)
    embedded = torch.nn.functional.pad(x, (0, 30 - d)) @ random_rotation(30, generator)
    assert twonn_dimension(embedded) == pytest.approx(d, rel=0.1)


def test_twonn_sees_a_curve_as_one_dimensional_while_eed_does_not(generator):
    t = torch.rand(3000, generator=generator, dtype=torch.float64) * 2 * math.pi
    freqs = torch.arange(1, 9, dtype=torch.float64)
    curve = torch.cat([torch.cos(t[:, None] * freqs), torch.sin(t[:, None] * freqs)], dim=1)
    assert twonn_dimension(curve) == pytest.approx(1, rel=0.1)
    assert effective_encoding_dimension(curve) > 10


def test_twonn_agrees_with_scikit_dimension(generator):
    skdim = pytest.importorskip("skdim")
    x = gaussian(1500, 6, generator)
    reference = skdim.id.TwoNN(discard_fraction=0.1).fit(x.numpy()).dimension_
    assert twonn_dimension(x) == pytest.approx(reference, rel=1e-6)


def test_twonn_rejects_duplicates():
    x = torch.randn(50, 3, dtype=torch.float64)
    x[7] = x[3]
    with pytest.raises(ValueError, match="duplicates"):
        twonn_dimension(x)
