"""Metrics against cases with known answers."""
import math

import pytest
import torch

from ib_tutorial.measure.covariance import CovarianceAccumulator
from ib_tutorial.measure.metrics import (
    _two_nearest_distances,
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


# --- float32 products of float32 batches -----------------------------------------------
# A model's float32 tokens are multiplied in float32 (CovarianceAccumulator, "Precision");
# the reference is the float64 one-shot value of the same float32 numbers.

SPECTRA = {
    "eigenvalues from 1 down to 1e-8": lambda d: torch.logspace(0, -8, d, dtype=torch.float64),
    "three at 1, the rest at 1e-8": lambda d: torch.cat([torch.ones(3), torch.full((d - 3,), 1e-8)]).double(),
    "power law 1/k": lambda d: torch.arange(1, d + 1, dtype=torch.float64) ** -1.0,
}


def float32_tokens(eigenvalues, n, generator, offset):
    """float32 rows whose covariance has ``eigenvalues`` in a random basis, around a mean
    whose entries lie between ``offset`` and twice it."""
    d = len(eigenvalues)
    x = gaussian(n, d, generator) * eigenvalues.sqrt() @ random_rotation(d, generator)
    return (x + offset * (1 + torch.rand(d, generator=generator, dtype=torch.float64))).float()


def streamed(x, rows_per_batch, center=True):
    acc = CovarianceAccumulator(x.shape[1], center=center)
    for batch in torch.split(x, rows_per_batch):
        acc.update(batch)
    return acc


@pytest.mark.parametrize("spectrum", SPECTRA)
@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_float32_streaming_matches_float64_one_shot(generator, spectrum, offset):
    x = float32_tokens(SPECTRA[spectrum](64), 20_000, generator, offset)
    expected = effective_encoding_dimension(x)  # float64 throughout
    for rows_per_batch in (20_000, 97, 1000, 3152):  # one product split in 5, many small, ViT-S batch
        assert streamed(x, rows_per_batch).effective_dimension() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_float32_streaming_at_vit_width(generator, offset):
    x = float32_tokens(SPECTRA["three at 1, the rest at 1e-8"](384), 8000, generator, offset)
    expected = effective_encoding_dimension(x)
    for rows_per_batch in (8000, 3152, 500):
        assert streamed(x, rows_per_batch).effective_dimension() == pytest.approx(expected, rel=1e-6)


def test_float32_uncentred_streaming_matches_float64(generator):
    x = float32_tokens(SPECTRA["eigenvalues from 1 down to 1e-8"](64), 20_000, generator, 0.0)
    expected = effective_encoding_dimension(x, center=False)
    assert streamed(x, 3152, center=False).effective_dimension() == pytest.approx(expected, rel=1e-6)


def test_accumulators_sharing_work_buffers_match_ones_updated_alone(generator):
    # A thread's accumulators share the buffers of their float32 products (one per block in
    # a profile): interleaving them, at two widths and with pieces of several lengths, must
    # give what each gives on its own.
    wide = float32_tokens(SPECTRA["power law 1/k"](96), 9000, generator, 1e3)
    narrow = float32_tokens(SPECTRA["eigenvalues from 1 down to 1e-8"](64), 9000, generator, 0.0)
    other = float32_tokens(SPECTRA["power law 1/k"](96), 9000, generator, 0.0)
    xs = (wide, narrow, other)
    lengths = ([500, 4500, 1000, 3000], [4500, 500, 3000, 1000], [3000, 1000, 500, 4500])  # 4 pieces each
    interleaved = [CovarianceAccumulator(x.shape[1]) for x in xs]
    for pieces in zip(*(torch.split(x, sizes) for x, sizes in zip(xs, lengths))):
        for accumulator, piece in zip(interleaved, pieces):
            accumulator.update(piece)
    for accumulator, x, sizes in zip(interleaved, xs, lengths):
        alone = CovarianceAccumulator(x.shape[1])
        for piece in torch.split(x, sizes):
            alone.update(piece)
        torch.testing.assert_close(accumulator.scatter, alone.scatter, rtol=0, atol=0)


def test_accumulators_in_two_threads_do_not_share_work_buffers(generator):
    import threading

    xs = [float32_tokens(SPECTRA["power law 1/k"](128), 6000, generator, offset) for offset in (0.0, 1e3)]
    expected = [streamed(x, 300).scatter for x in xs]
    accumulators = [CovarianceAccumulator(128) for _ in xs]
    start = threading.Barrier(2)

    def update(accumulator, x):
        start.wait()
        for piece in torch.split(x, 300):
            accumulator.update(piece)

    threads = [threading.Thread(target=update, args=pair) for pair in zip(accumulators, xs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for accumulator, scatter in zip(accumulators, expected):
        torch.testing.assert_close(accumulator.scatter, scatter, rtol=0, atol=0)


def test_a_float32_product_of_uncentred_rows_would_not_do(generator):
    # The control for the tests above: what per-batch centring avoids.
    x = float32_tokens(SPECTRA["power law 1/k"](64), 20_000, generator, 1e3)
    n = x.shape[0]
    naive = (x.T @ x).double() - n * torch.outer(x.double().mean(0), x.double().mean(0))
    naive_n_eff = effective_dimension_from_spectrum(torch.linalg.eigvalsh(naive))
    assert naive_n_eff != pytest.approx(effective_encoding_dimension(x), rel=1e-2)


@pytest.mark.parametrize("spread", [1e-25, 1e25])
def test_float32_spreads_beyond_the_square_range_of_float32(generator, spread):
    # Squares of 1e25 overflow float32 and squares of 1e-25 underflow it.
    x = float32_tokens(SPECTRA["power law 1/k"](32), 2000, generator, 0.0) * spread
    assert streamed(x, 300).effective_dimension() == pytest.approx(effective_encoding_dimension(x), rel=1e-6)


def test_float32_products_ignore_autocast(generator):
    # The probe runs its hooks inside autocast on CUDA; bf16 products would lose 16 bits.
    x = float32_tokens(SPECTRA["power law 1/k"](32), 2000, generator, 1.0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        n_eff = streamed(x, 500).effective_dimension()
    assert n_eff == pytest.approx(effective_encoding_dimension(x), rel=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_products_run_without_tf32_and_leave_the_setting_alone(generator):
    x = float32_tokens(SPECTRA["eigenvalues from 1 down to 1e-8"](64), 20_000, generator, 1e3)
    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    try:
        n_eff = streamed(x.cuda(), 3152).effective_dimension()
        assert matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = previous
    assert n_eff == pytest.approx(effective_encoding_dimension(x), rel=1e-6)


def test_repeated_row_has_exactly_zero_scatter(generator):
    # The float64 mean of 1000 copies of a row is rounded; their scatter must still be 0,
    # not round-off that EED would read as a direction.
    row = gaussian(1, 16, generator)[0]
    for rows_per_batch in (1000, 7):
        acc = streamed(row.repeat(1000, 1), rows_per_batch)
        assert (acc.scatter == 0).all()
        torch.testing.assert_close(acc.mean, row, rtol=0, atol=0)
        with pytest.raises(ValueError, match="constant"):
            acc.effective_dimension()


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


def test_the_two_nearest_distances_are_the_direct_ones_far_from_the_origin_and_across_chunks(generator):
    # Far from the origin the matrix-product distance loses the small ones to cancellation;
    # it only picks the candidates, whose distances are then computed directly.
    x = 1e4 + 1e-3 * torch.randn(300, 20, generator=generator, dtype=torch.float64)
    direct = torch.cdist(x, x, compute_mode="donot_use_mm_for_euclid_dist").fill_diagonal_(math.inf)
    expected = torch.topk(direct, 2, dim=1, largest=False).values
    first, second = _two_nearest_distances(x, chunk=64)
    assert torch.allclose(first, expected[:, 0], rtol=1e-9, atol=0)
    assert torch.allclose(second, expected[:, 1], rtol=1e-9, atol=0)
    product = torch.cdist(x, x, compute_mode="use_mm_for_euclid_dist").fill_diagonal_(math.inf)
    assert not torch.allclose(torch.topk(product, 2, dim=1, largest=False).values, expected, rtol=1e-3)


def test_twonn_rejects_duplicates():
    x = torch.randn(50, 3, dtype=torch.float64)
    x[7] = x[3]
    with pytest.raises(ValueError, match="duplicates"):
        twonn_dimension(x)
