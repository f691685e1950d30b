"""The bootstrap over images: coverage on data with a known spectrum, joint replicates, memory, Wilson."""
import pytest
import torch

from ib_tutorial.measure.block_profile import profile_model
from ib_tutorial.measure.bootstrap import (
    METHODS,
    BootstrapProfile,
    ImageStatistics,
    StoredReplicates,
    Interval,
    bootstrap_eed,
    bootstrap_interval,
    joint_interval,
    resampling_weights,
    wilson_interval,
)
from ib_tutorial.measure.metrics import effective_dimension_from_spectrum, effective_encoding_dimension
from ib_tutorial.measure.shape import ProfileShape, Verdict, depth_regions, middle_dip, u_depth
from ib_tutorial.models import vit_small

# Tokens of an image share an image effect (variances IMAGE) and add their own noise (TOKEN):
# the pooled covariance of all tokens is diag(IMAGE + TOKEN), but tokens of one image are
# correlated, so only resampling images gives honest intervals.
IMAGE = torch.tensor([4.0, 2.0, 1.0, 0.5], dtype=torch.float64)
TOKEN = torch.tensor([0.5, 0.5, 1.0, 1.0], dtype=torch.float64)
TRUE_N_EFF = effective_dimension_from_spectrum(IMAGE + TOKEN)


def images(count: int, tokens: int, generator: torch.Generator) -> torch.Tensor:
    effect = IMAGE.sqrt() * torch.randn(count, 1, 4, generator=generator, dtype=torch.float64)
    return effect + TOKEN.sqrt() * torch.randn(count, tokens, 4, generator=generator, dtype=torch.float64)


# In 32 dimensions, N_eff of a few hundred images is biased low by more than its spread.
WIDE_IMAGE = torch.linspace(1, 0.2, 32, dtype=torch.float64)
WIDE_TOKEN = 0.3


def wide_images(count: int, tokens: int, generator: torch.Generator) -> torch.Tensor:
    effect = WIDE_IMAGE.sqrt() * torch.randn(count, 1, 32, generator=generator, dtype=torch.float64)
    return effect + WIDE_TOKEN**0.5 * torch.randn(count, tokens, 32, generator=generator, dtype=torch.float64)


def statistics_of(tokens: torch.Tensor, **options) -> ImageStatistics:
    statistics = ImageStatistics(tokens.shape[-1], **options)
    for batch in tokens.split(64):
        statistics.update(batch)
    return statistics


def coverage(repetitions: int, draw=images, true_n_eff: float = TRUE_N_EFF, count: int = 200, tokens: int = 8,
             groups: int = 200, resample_tokens: bool = False) -> dict[str, float]:
    """The share of 90 % intervals of each method (200 replicates each, ``count`` images of
    ``tokens`` tokens from ``draw``) that hold the true N_eff."""
    generator = torch.Generator().manual_seed(0)
    hits = dict.fromkeys(METHODS, 0)
    for repetition in range(repetitions):
        sample = draw(count, tokens, generator)
        if resample_tokens:  # every token its own "image", the mistake the bootstrap must not make
            sample = sample.reshape(-1, 1, sample.shape[-1])
        profile = bootstrap_eed([statistics_of(sample, groups=groups)], replicates=200, level=0.9, seed=repetition)
        for method in METHODS:
            interval = bootstrap_interval(profile.n_eff[0], profile.replicates[:, 0], 0.9, method)
            hits[method] += interval.low <= true_n_eff <= interval.high
    return {method: hit / repetitions for method, hit in hits.items()}



def test_intervals_cover_the_true_value_at_about_their_level():
    # Measured: basic 0.865, percentile 0.92 (200 repetitions; the binomial standard error is 0.02).
    shares = coverage(200)
    assert 0.8 <= shares["basic"] <= 0.97 and 0.8 <= shares["percentile"] <= 0.97


def test_basic_intervals_cover_where_the_bias_is_as_large_as_the_spread():
    # Measured: basic 0.96, percentile 0.00 (100 repetitions, 400 images in 32 dimensions).
    true_n_eff = effective_dimension_from_spectrum(WIDE_IMAGE + WIDE_TOKEN)
    shares = coverage(100, wide_images, true_n_eff, count=400, tokens=4, groups=400)
    assert 0.8 <= shares["basic"] <= 0.99
    assert shares["percentile"] < 0.2


def test_intervals_from_groups_of_images_cover_too():
    # 40 groups of about 5 images each (the memory-bound path). Measured: 0.89 (100 repetitions).
    assert 0.8 <= coverage(100, groups=40)["basic"] <= 0.97


def test_resampling_tokens_instead_of_images_would_undercover():
    # Measured: 0.52, far under the level: the coverage tests above can fail.
    assert coverage(100, resample_tokens=True)["basic"] < 0.75


def dip_coverage(middle_scales: list[float], repetitions: int = 80, count: int = 200, tokens: int = 8) -> dict:
    """Twelve blocks of the same images (a shared image effect, each block its own token
    noise), the middle ones scaled by ``middle_scales``: the share of 90 % basic and
    percentile intervals of the middle dip that hold its true value, and the share of basic
    intervals of the clipped U-depth that reach below 0, where it cannot go."""
    scales = [torch.tensor(middle_scales if block in depth_regions(12).middle else [1.0] * 4, dtype=torch.float64)
              for block in range(12)]
    true_dip = middle_dip([effective_dimension_from_spectrum((IMAGE + TOKEN) * scale**2) for scale in scales])
    generator = torch.Generator().manual_seed(0)
    hits, below_zero = dict.fromkeys(METHODS, 0), 0
    for repetition in range(repetitions):
        effect = IMAGE.sqrt() * torch.randn(count, 1, 4, generator=generator, dtype=torch.float64)
        blocks = [(effect + TOKEN.sqrt() * torch.randn(count, tokens, 4, generator=generator, dtype=torch.float64))
                  * scale for scale in scales]
        profile = bootstrap_eed([statistics_of(block) for block in blocks], replicates=200, level=0.9, seed=repetition)
        for method in METHODS:
            interval = joint_interval(middle_dip, [profile], method=method)
            hits[method] += interval.low <= true_dip <= interval.high
        below_zero += joint_interval(u_depth, [profile], method="basic").low < 0
    return {**{method: hit / repetitions for method, hit in hits.items()}, "u_depth_below_zero": below_zero / repetitions}


def test_middle_dip_intervals_cover_a_shallow_u_and_a_flat_profile():
    # Measured (100 repetitions): a shallow U (true dip 0.17 directions) basic 0.87,
    # percentile 0.79; a flat profile (true dip 0) basic 0.86, percentile 0.83. On the flat
    # profile the clipped U-depth's basic interval reached below 0 in 64 % of the draws.
    shallow, flat = dip_coverage([1.0, 0.9, 0.9, 0.9]), dip_coverage([1.0] * 4)
    assert 0.8 <= shallow["basic"] <= 0.97 and 0.8 <= flat["basic"] <= 0.97
    assert flat["u_depth_below_zero"] > 0.4


def test_measured_value_is_the_pooled_tokens_n_eff(generator):
    tokens = images(50, 6, generator)
    profile = bootstrap_eed([statistics_of(tokens)], replicates=20)
    assert profile.n_eff[0] == pytest.approx(effective_encoding_dimension(tokens.reshape(-1, 4)), rel=1e-10)
    assert profile.eed_percent[0] == pytest.approx(25 * profile.n_eff[0])
    assert profile.replicates.shape == (20, 1)


def test_bias_is_large_for_few_images_and_small_for_many(generator):
    few = bootstrap_eed([statistics_of(images(8, 2, generator))], replicates=200)
    many = bootstrap_eed([statistics_of(images(2000, 2, generator))], replicates=200)
    assert few.bias[0] < -0.1  # repeated images in a replicate span fewer directions
    assert abs(many.bias[0]) < 0.02
    assert many.bias[0] == pytest.approx(many.replicates[:, 0].mean().item() - many.n_eff[0])


def test_replicates_are_a_function_of_the_seed(generator):
    statistics = [statistics_of(images(40, 5, generator))]
    first, again = bootstrap_eed(statistics, replicates=30, seed=7), bootstrap_eed(statistics, replicates=30, seed=7)
    assert torch.equal(first.replicates, again.replicates)
    assert not torch.equal(first.replicates, bootstrap_eed(statistics, replicates=30, seed=8).replicates)


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"))]


@pytest.mark.parametrize("device", DEVICES)
def test_the_bootstrap_gives_the_same_replicates_on_any_device(generator, device):
    # The weights are drawn on the CPU and the sums are float64 wherever they are formed: the
    # devices differ by the order of float64 sums only (an eigenvalue's relative 1e-12).
    statistics = [statistics_of(wide_images(150, 6, generator), groups=100) for _ in range(2)]
    here = bootstrap_eed(statistics, replicates=40, seed=3)
    there = bootstrap_eed(statistics, replicates=40, seed=3, device=device)
    torch.testing.assert_close(there.replicates, here.replicates, rtol=1e-9, atol=0)
    assert there.n_eff == pytest.approx(here.n_eff, rel=1e-12)


def test_profiles_bootstrap_where_their_forward_passes_run(monkeypatch):
    from ib_tutorial.measure import bootstrap

    seen = []
    original = bootstrap.bootstrap_eed
    monkeypatch.setattr(bootstrap, "bootstrap_eed",
                        lambda *args, **kwargs: seen.append(kwargs["device"]) or original(*args, **kwargs))
    torch.manual_seed(0)
    model = vit_small(16, 8).eval()
    bootstrap.bootstrap_blocks(model, torch.randn(6, 3, 16, 16), [("tokens", "all")], replicates=5,
                                     device=torch.device("cpu"))
    assert seen == [torch.device("cpu")]


def test_resampling_weights_draw_as_many_groups_as_there_are():
    weights = resampling_weights(groups=17, replicates=500, seed=0)
    assert weights.shape == (500, 17)
    assert torch.equal(weights.sum(1), torch.full((500,), 17.0, dtype=torch.float64))
    assert weights.mean().item() == pytest.approx(1.0)
    assert weights.var().item() == pytest.approx(1 - 1 / 17, rel=0.1)  # multinomial: n p (1 - p)


def test_every_block_is_measured_on_the_same_replicates(generator):
    # Blocks 1 and 3 see the same tokens as block 0; block 2 other ones. A statistic of several
    # blocks is then computed on each replicate's own images: the difference between two blocks
    # of identical tokens is exactly 0 in every replicate, not the spread of two resamplings.
    tokens, other = images(60, 5, generator), images(60, 5, generator)
    profile = bootstrap_eed([statistics_of(t) for t in (tokens, tokens, other, tokens)], replicates=100)
    same = profile.interval(lambda values: values[3] - values[0])
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    different = profile.interval(lambda values: values[2] - values[0])
    assert different.high - different.low > 0.05


def test_a_stored_bootstrap_gives_back_its_intervals(generator):
    profile = bootstrap_eed([statistics_of(images(60, 5, generator)) for _ in range(3)], replicates=80, seed=2)
    stored = profile.stored()
    read = BootstrapProfile.from_stored(profile.n_eff, profile.dim, stored, profile.level, profile.method)
    assert (read.variant, read.seed) == (profile.variant, profile.seed) == ("tokens", 2)
    for kept, original in zip(read.intervals(), profile.intervals()):
        assert kept.low == pytest.approx(original.low, abs=1e-3) and kept.high == pytest.approx(original.high, abs=1e-3)
    with pytest.raises(ValueError, match="do not match a profile of 2 blocks"):
        BootstrapProfile.from_stored(profile.n_eff[:2], profile.dim, stored)
    with pytest.raises(ValueError, match="unknown interval method"):
        BootstrapProfile.from_stored(profile.n_eff, profile.dim, StoredReplicates("tokens", 0, [[1.0] * 3]), method="bca")


def test_profiles_with_one_seed_on_the_same_images_are_paired(generator):
    tokens = images(60, 5, generator)
    first = bootstrap_eed([statistics_of(tokens)], replicates=50, seed=3)
    scaled = bootstrap_eed([statistics_of(3 * tokens + 1)], replicates=50, seed=3)  # N_eff does not change
    change = joint_interval(lambda before, after: after[0] - before[0], [first, scaled])
    assert abs(change.low) < 1e-9 and abs(change.high) < 1e-9
    unpaired = bootstrap_eed([statistics_of(3 * tokens + 1)], replicates=50, seed=4)
    spread = joint_interval(lambda before, after: after[0] - before[0], [first, unpaired])
    assert spread.high - spread.low > 0.05


def test_u_depth_gets_an_interval_and_a_verdict(generator):
    # Twelve blocks whose middle ones use fewer directions: a U of known depth.
    def block(scales):
        return images(80, 6, generator) * torch.tensor(scales, dtype=torch.float64)

    wide, narrow = [1.0, 1.0, 1.0, 1.0], [1.0, 0.1, 0.1, 0.1]
    profile = bootstrap_eed([statistics_of(block(narrow if b in (2, 3, 4) else wide)) for b in range(12)],
                            replicates=100)
    depth = profile.interval(u_depth)
    assert depth.estimate == pytest.approx(u_depth(profile.n_eff))
    assert depth.low <= depth.estimate <= depth.high
    assert depth.verdict(margin=1.0) == Verdict.HOLDS
    assert depth.verdict(margin=depth.estimate) == Verdict.UNDETERMINED
    assert depth.verdict(margin=10.0) == Verdict.FAILS
    in_percent = profile.interval(u_depth, percent=True)
    assert in_percent.estimate == pytest.approx(25 * depth.estimate)
    assert profile.shape_shares(tolerance=1.0) == {ProfileShape.U: 1.0}
    # With the U-depth itself as the tolerance, some replicates are a U and others are not.
    split = profile.shape_shares(tolerance=depth.estimate)
    assert 0 < split[ProfileShape.U] < 1
    assert sum(split.values()) == pytest.approx(1.0)


def test_percent_intervals_are_scaled_n_eff_intervals(generator):
    profile = bootstrap_eed([statistics_of(images(40, 5, generator))], replicates=50)
    n_eff, percent = profile.intervals()[0], profile.intervals(percent=True)[0]
    assert (percent.low, percent.high) == pytest.approx((25 * n_eff.low, 25 * n_eff.high))


def test_groups_follow_the_memory_budget_and_later_images_join_them(generator):
    group_bytes = 8 * (1 + 4 + 16)  # an image count, a token sum [4] and a Gram matrix [4, 4]
    statistics = statistics_of(images(100, 3, generator), max_bytes=10 * group_bytes)
    assert statistics.groups == 10
    assert statistics.group_images().sum().item() == 100
    assert statistics.group_images().min().item() >= 1
    exact = statistics_of(images(100, 3, generator), max_bytes=1000 * group_bytes)
    assert exact.groups == 100  # one image a group: the bootstrap resamples images exactly
    assert torch.equal(exact.group_images(), torch.ones(100, dtype=torch.float64))


def test_storage_made_at_once_or_grown_holds_the_same_sums(generator):
    tokens = images(100, 3, generator)
    weights = resampling_weights(100, 7, seed=1)
    for groups in (None, 40):  # one image a group, then later images joining 40 groups
        grown, at_once = ImageStatistics(4, groups=groups), ImageStatistics(4, groups=groups, expected_images=100)
        for batch in tokens.split(16):
            grown.update(batch)
            at_once.update(batch)
        assert grown.groups == at_once.groups == (groups or 100)
        w = weights[:, : grown.groups]
        assert torch.equal(grown.moments(w).gram, at_once.moments(w).gram)
        assert torch.equal(grown.group_images(), at_once.group_images())


def test_blocks_fed_different_images_are_refused(generator):
    with pytest.raises(ValueError, match="different images"):
        bootstrap_eed([statistics_of(images(10, 3, generator)), statistics_of(images(11, 3, generator))])


def test_statistics_refuse_inconsistent_batches(generator):
    statistics = ImageStatistics(4)
    statistics.update(images(3, 5, generator))
    with pytest.raises(ValueError, match="same number of tokens"):
        statistics.update(images(3, 6, generator))
    with pytest.raises(ValueError, match=r"expected tokens \[B, T, 4\]"):
        statistics.update(torch.zeros(3, 5, 3))
    with pytest.raises(ValueError, match="NaN"):
        statistics.update(torch.full((1, 5, 4), float("nan")))
    with pytest.raises(ValueError, match="unknown sums"):
        ImageStatistics(4, keep=["whitened"])


def test_intervals_of_known_replicates():
    replicates = torch.arange(101, dtype=torch.float64)  # quantiles 0.05 and 0.95: 5 and 95
    percentile = bootstrap_interval(60.0, replicates, level=0.9, method="percentile")
    assert (percentile.estimate, percentile.low, percentile.high, percentile.level) == pytest.approx((60, 5, 95, 0.9))
    basic = bootstrap_interval(60.0, replicates, level=0.9)  # reflected about the estimate
    assert (basic.low, basic.high) == pytest.approx((2 * 60 - 95, 2 * 60 - 5))
    with pytest.raises(ValueError, match="between 0 and 1"):
        bootstrap_interval(0.0, torch.zeros(3), level=90)
    with pytest.raises(ValueError, match="choose from basic, percentile"):
        bootstrap_interval(0.0, torch.zeros(3), level=0.9, method="bca")


def test_wilson_interval_of_a_known_case():
    # 8 of 10 at 95 %: (0.4902, 0.9433) (Brown, Cai & DasGupta 2001; Newcombe 1998).
    interval = wilson_interval(8, 10, level=0.95)
    assert (interval.estimate, interval.low, interval.high) == pytest.approx((0.8, 0.4902, 0.9433), abs=1e-4)
    # 0 of 10 and 10 of 10 stay inside [0, 1]; k of n mirrors n - k of n.
    assert wilson_interval(0, 10).low == 0.0 and wilson_interval(0, 10).high == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(10, 10).high == 1.0
    mirrored = wilson_interval(2, 10)
    assert (mirrored.low, mirrored.high) == pytest.approx((1 - interval.high, 1 - interval.low))


def test_wilson_interval_narrows_with_more_images():
    small, large = wilson_interval(40, 100), wilson_interval(400, 1000)
    assert large.high - large.low < small.high - small.low
    with pytest.raises(ValueError, match="correct <= total"):
        wilson_interval(11, 10)


def test_an_interval_gives_a_three_valued_verdict():
    assert Interval(2.0, 1.5, 2.5, 0.9).verdict(margin=1.0) == Verdict.HOLDS
    assert Interval(1.0, 0.5, 1.5, 0.9).verdict(margin=1.0) == Verdict.UNDETERMINED
    assert Interval(0.0, -0.5, 0.5, 0.9).verdict(margin=1.0) == Verdict.FAILS


def test_a_vits_blocks_measured_from_image_sums_match_the_profiler():
    torch.manual_seed(0)
    model = vit_small(img_size=32, patch_size=8).eval()
    pictures = torch.randn(12, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    statistics = [ImageStatistics(model.embed_dim) for _ in model.blocks]
    hooks = [block.register_forward_hook(lambda _m, _i, out, s=s: s.update(out))
             for block, s in zip(model.blocks, statistics)]
    with torch.no_grad():
        model.forward_features(pictures[:5])
        model.forward_features(pictures[5:])
    for hook in hooks:
        hook.remove()
    profile = bootstrap_eed(statistics, replicates=10)
    expected = profile_model(model, pictures, progress=False).n_eff
    # The profiler's float32 products, summed in another order by each CPU's kernels (1.3e-6 seen).
    assert profile.n_eff == pytest.approx(expected, rel=1e-5)
    assert profile.replicates.shape == (10, 12)


def test_shape_shares_read_the_replicates_as_the_intervals_do():
    measured = [59.0, 58, 31, 30, 31, 40, 50, 60, 70, 80, 88, 92]
    falling = [60.0 - 4 * block for block in range(12)]
    reflected = torch.tensor([[2 * m - f for m, f in zip(measured, falling)]] * 5, dtype=torch.float64)
    basic = BootstrapProfile(measured, reflected, 384, 0.9, "basic", "tokens", 0)
    assert basic.shape_shares() == {ProfileShape.FALLING: 1.0}  # 2 v - v* is the falling profile
    percentile = BootstrapProfile(measured, torch.tensor([falling] * 5, dtype=torch.float64), 384, 0.9, "percentile",
                                  "tokens", 0)
    assert percentile.shape_shares() == {ProfileShape.FALLING: 1.0}


def test_middle_minimum_share_reads_the_replicates_as_the_intervals_do():
    # Three replicates of a four-block profile (early L0, middle L1, late L3): the measured
    # minimum is L1; reflected about it (basic), one replicate's minimum moves to L3.
    replicates = torch.tensor([[5.0, 2.0, 4.0, 4.0], [5.0, 3.0, 4.0, 4.0], [5.0, 2.0, 4.0, 6.5]], dtype=torch.float64)
    n_eff = [5.0, 2.5, 4.0, 4.5]
    as_drawn = BootstrapProfile(n_eff, replicates, 4, 0.9, "percentile", "tokens", 0)
    reflected = BootstrapProfile(n_eff, replicates, 4, 0.9, "basic", "tokens", 0)
    assert as_drawn.middle_minimum_share() == 1.0
    assert reflected.middle_minimum_share() == pytest.approx(2 / 3)
