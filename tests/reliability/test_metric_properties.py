"""Properties of the metrics and the covariance accumulator, on inputs drawn by hypothesis.

What each kind of input gives (ib_tutorial.measure.metrics):

- NaN or inf anywhere: ``ValueError`` naming them; a rejected batch leaves an
  accumulator as it was.
- Fewer than 2 samples: ``ValueError`` ("at least 2 samples") from the one-shot
  functions, and from an accumulator's covariance until it holds 2.
- One column (D = 1): N_eff = 1 and EED = 100 %, whenever the column varies.
- Identical rows: the centred spectrum is exactly zero and N_eff and the participation
  ratio raise ``ValueError`` ("constant"); uncentred, N_eff = 1 unless the row is zero.
- float16 and bfloat16: their values, exactly; the one-shot result equals that of the
  same values in float64, and a stream of them is multiplied in float32.
- A shape other than [N, D] with D >= 1, or a batch of another width: ``ValueError``.
"""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ib_tutorial.measure.covariance import CovarianceAccumulator
from ib_tutorial.measure.metrics import (
    covariance_spectrum,
    eed_percent,
    effective_dimension_from_spectrum,
    effective_encoding_dimension,
    participation_ratio,
    participation_ratio_from_spectrum,
    rankme,
)

# Short runs, no example database on disk, no per-example deadline (torch's first call is slow).
quick = settings(max_examples=30, deadline=None, database=None)

seeds = st.integers(0, 2**32 - 1)
centring = st.booleans()


def rotation(d: int, generator: torch.Generator) -> torch.Tensor:
    q, r = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


@st.composite
def feature_matrices(draw, min_rows: int = 2, max_rows: int = 60, max_dim: int = 12) -> torch.Tensor:
    """float64 [N, D] Gaussian rows with a power-law spectrum (condition number up to
    D^4) in a random basis, around a mean of size 0, 1 or 1000."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_dim))
    decay = draw(st.floats(0, 2))
    offset = draw(st.sampled_from([0.0, 1.0, 1e3]))
    generator = torch.Generator().manual_seed(draw(seeds))
    spread = torch.arange(1, d + 1, dtype=torch.float64) ** -decay
    x = torch.randn(n, d, generator=generator, dtype=torch.float64) * spread @ rotation(d, generator)
    return x + offset * torch.randn(d, generator=generator, dtype=torch.float64)


def chunks(x: torch.Tensor, cuts: list[int]) -> list[torch.Tensor]:
    """``x`` cut at the row indices ``cuts`` (any order, repeats make empty chunks)."""
    bounds = [0, *sorted(min(c, len(x)) for c in cuts), len(x)]
    return [x[a:b] for a, b in zip(bounds, bounds[1:])]


def outcome(function):
    """The value of ``function()``, or the ValueError it raised (as its type)."""
    try:
        return function()
    except ValueError:
        return ValueError


# --- invariances and bounds ------------------------------------------------------------

@quick
@given(x=feature_matrices(), seed=seeds, scale=st.floats(1e-6, 1e6), center=centring)
def test_eed_is_invariant_to_rotation_and_positive_scale(x, seed, scale, center):
    base = effective_encoding_dimension(x, center=center)
    rotated = x @ rotation(x.shape[1], torch.Generator().manual_seed(seed))
    assert effective_encoding_dimension(rotated, center=center) == pytest.approx(base, rel=1e-9)
    assert effective_encoding_dimension(scale * x, center=center) == pytest.approx(base, rel=1e-9)


@quick
@given(n=st.integers(2, 40), d=st.integers(1, 12), k=st.integers(1, 12), seed=seeds, center=centring)
def test_neff_lies_between_one_and_the_rank(n, d, k, seed, center):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, k, generator=generator, dtype=torch.float64) @ torch.randn(k, d, generator=generator, dtype=torch.float64)
    rank = min(k, d, n - 1 if center else n)  # centring removes one dimension of n points
    n_eff = effective_encoding_dimension(x, center=center)
    assert 1 - 1e-12 <= n_eff <= rank * (1 + 1e-9)
    assert 1 - 1e-12 <= participation_ratio(x, center=center) <= n_eff * (1 + 1e-12)
    assert 0 < eed_percent(n_eff, d) <= 100 * (1 + 1e-9)


@quick
@given(spectrum=st.lists(st.floats(0, 1e6), max_size=20))
def test_spectrum_measures_are_bounded_by_the_nonzero_count(spectrum):
    lam = torch.tensor(spectrum, dtype=torch.float64)
    nonzero = int((lam > 0).sum())
    if nonzero == 0:
        with pytest.raises(ValueError, match="zeros"):
            effective_dimension_from_spectrum(lam)
        return
    n_eff = effective_dimension_from_spectrum(lam)
    assert 1 - 1e-12 <= participation_ratio_from_spectrum(lam) <= n_eff * (1 + 1e-12)
    assert n_eff <= nonzero * (1 + 1e-12)


# --- streaming against one shot --------------------------------------------------------

@quick
@given(
    x=feature_matrices(),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    dtype=st.sampled_from([torch.float64, torch.float32]),
)
def test_streaming_is_within_the_stated_bound_for_any_chunking(x, cuts, dtype):
    rows = x.to(dtype)
    reference = rows.double()
    n = len(reference)
    mean = reference.mean(0)
    scatter = (reference - mean).T @ (reference - mean)
    streamed = CovarianceAccumulator(x.shape[1])
    merged = CovarianceAccumulator(x.shape[1])
    for chunk in chunks(rows, cuts):
        streamed.update(chunk)
        part = CovarianceAccumulator(x.shape[1])
        part.update(chunk)
        merged.merge(part)
    # The class docstring's bound: gamma_(K+2) sqrt(S_jj S_kk), S the scatter about the
    # rounded batch means, here with room for a mean rounded by a few dozen u.
    u = torch.finfo(dtype).eps / 2
    k = min(n, 4096) + 2
    about_rounded_means = scatter.diagonal() + n * (64 * u * reference.abs().amax(0)) ** 2
    bound = k * u / (1 - k * u) * torch.outer(about_rounded_means, about_rounded_means).sqrt()
    float64_round_off = 1e-12 * scatter.abs().max()
    mean_bound = 64 * u * math.log2(n + 1) * (reference - mean).abs().amax(0) + 1e-13 * mean.abs()
    for acc in (streamed, merged):
        assert acc.count == n
        assert ((acc.scatter - scatter).abs() <= bound + float64_round_off).all()
        assert ((acc.mean - mean).abs() <= mean_bound).all()
    if dtype == torch.float64:
        expected = effective_dimension_from_spectrum(torch.linalg.eigvalsh(scatter))
        assert streamed.effective_dimension() == pytest.approx(expected, rel=1e-9)


# --- inputs at the edges -------------------------------------------------------------

@quick
@given(
    x=feature_matrices(),
    position=st.integers(0, 10_000),
    bad=st.sampled_from([math.nan, math.inf, -math.inf]),
    dtype=st.sampled_from([torch.float64, torch.float32, torch.float16, torch.bfloat16]),
)
def test_nan_and_inf_are_rejected(x, position, bad, dtype):
    x = x.to(dtype)
    x.view(-1)[position % x.numel()] = bad
    for measure in (effective_encoding_dimension, participation_ratio, rankme, covariance_spectrum):
        with pytest.raises(ValueError, match="NaN or inf"):
            measure(x)
    acc = CovarianceAccumulator(x.shape[1])
    acc.update(torch.zeros(3, x.shape[1]))
    with pytest.raises(ValueError, match="NaN or inf"):
        acc.update(x)
    assert acc.count == 3 and (acc.mean == 0).all() and (acc.scatter == 0).all()


@quick
@given(d=st.integers(1, 12), n=st.integers(0, 1), center=centring)
def test_fewer_than_two_samples_are_rejected(d, n, center):
    x = torch.randn(n, d)
    with pytest.raises(ValueError, match="at least 2 samples"):
        effective_encoding_dimension(x, center=center)
    acc = CovarianceAccumulator(d, center=center)
    acc.update(x)
    assert acc.count == n
    with pytest.raises(ValueError, match="at least 2 samples"):
        acc.effective_dimension()


@quick
@given(x=feature_matrices(max_dim=1), center=centring, dtype=st.sampled_from([torch.float64, torch.float32]))
def test_one_column_is_one_dimension(x, center, dtype):
    x = x.to(dtype)
    acc = CovarianceAccumulator(1, center=center)
    acc.update(x)
    for n_eff in (effective_encoding_dimension(x, center=center), acc.effective_dimension()):
        assert n_eff == pytest.approx(1, rel=1e-12)
        assert eed_percent(n_eff, 1) == pytest.approx(100, rel=1e-12)


@quick
@given(
    row=st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 6e4), st.floats(-6e4, -1e-3)), min_size=1, max_size=12),
    n=st.integers(2, 300),
    cuts=st.lists(st.integers(0, 300), max_size=4),
    dtype=st.sampled_from([torch.float64, torch.float32, torch.float16, torch.bfloat16]),
)
def test_identical_rows_have_a_zero_spectrum(row, n, cuts, dtype):
    x = torch.tensor(row, dtype=torch.float64).to(dtype).repeat(n, 1)
    assert (covariance_spectrum(x) == 0).all()
    acc = CovarianceAccumulator(x.shape[1])
    uncentred = CovarianceAccumulator(x.shape[1], center=False)
    for chunk in chunks(x, cuts):
        acc.update(chunk)
        uncentred.update(chunk)
    assert (acc.spectrum() == 0).all()
    for measure in (lambda: effective_encoding_dimension(x), lambda: participation_ratio(x), acc.effective_dimension):
        with pytest.raises(ValueError, match="constant"):
            measure()
    if (x[0] == 0).all():
        with pytest.raises(ValueError, match="constant"):
            uncentred.effective_dimension()
    else:
        assert effective_encoding_dimension(x, center=False) == pytest.approx(1, rel=1e-12)
        assert uncentred.effective_dimension() == pytest.approx(1, rel=1e-12)


@quick
@given(x=feature_matrices(), dtype=st.sampled_from([torch.float16, torch.bfloat16]), center=centring)
def test_half_precision_is_read_exactly(x, dtype, center):
    half = x.to(dtype)
    as_float64 = outcome(lambda: effective_encoding_dimension(half.double(), center=center))
    assert outcome(lambda: effective_encoding_dimension(half, center=center)) == as_float64
    acc = CovarianceAccumulator(x.shape[1], center=center)
    acc.update(half)
    streamed = outcome(acc.effective_dimension)
    if as_float64 is ValueError:
        assert streamed is ValueError
    else:
        assert streamed == pytest.approx(as_float64, rel=1e-6)


@quick
@given(shape=st.lists(st.integers(0, 4), max_size=4).filter(lambda s: len(s) != 2))
def test_shapes_other_than_a_matrix_are_rejected(shape):
    x = torch.ones(shape)
    with pytest.raises(ValueError, match="2-D"):
        effective_encoding_dimension(x)
    with pytest.raises(ValueError, match=r"\[n, 3\]"):
        CovarianceAccumulator(3).update(x)


@quick
@given(n=st.integers(0, 5), d=st.integers(0, 6))
def test_widths_must_match_and_be_positive(n, d):
    if d == 0:
        with pytest.raises(ValueError, match="at least 1"):
            CovarianceAccumulator(0)
        with pytest.raises(ValueError, match="no columns"):
            effective_encoding_dimension(torch.ones(max(n, 2), 0))
    with pytest.raises(ValueError, match=r"\[n, 7\]"):
        CovarianceAccumulator(7).update(torch.ones(n, d))
