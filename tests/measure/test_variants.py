"""Each measurement variant against a case with a closed-form or direct answer."""
import pytest
import torch
from timm.models.vision_transformer import VisionTransformer

from ib_tutorial.measure.bootstrap import ImageStatistics
from ib_tutorial.measure.metrics import covariance_spectrum, effective_dimension_from_spectrum
from ib_tutorial.measure.variants import (
    IMAGE_OUTER,
    POSITIONS,
    VARIANTS,
    get_variant,
    needed_sums,
    next_norms,
    post_layernorm,
)


def covariance(tokens: torch.Tensor, variant: str, groups: int | None = None) -> torch.Tensor:
    """The variant's covariance of ``tokens`` [N, T, D], accumulated in two batches."""
    statistics = ImageStatistics(tokens.shape[-1], keep=needed_sums([variant]), groups=groups)
    for batch in tokens.split((len(tokens) + 1) // 2):
        statistics.update(batch)
    return get_variant(variant).covariance(statistics.moments())


def n_eff(matrix: torch.Tensor) -> float:
    return effective_dimension_from_spectrum(torch.linalg.eigvalsh(matrix))


@pytest.fixture
def tokens(generator):
    # 30 images of 7 tokens, width 5, with an image effect, unequal scales and a large offset.
    image_effect = torch.randn(30, 1, 5, generator=generator, dtype=torch.float64)
    noise = torch.randn(30, 7, 5, generator=generator, dtype=torch.float64)
    return 1e3 + (image_effect + noise) * torch.tensor([1.0, 2, 3, 4, 5], dtype=torch.float64)


def test_tokens_is_the_pooled_covariance(tokens):
    pooled = tokens.reshape(-1, 5)
    assert torch.allclose(covariance(tokens, "tokens"), torch.cov(pooled.T), rtol=1e-10, atol=0)
    spectrum = torch.linalg.eigvalsh(covariance(tokens, "tokens")).flip(0)
    assert torch.allclose(spectrum, covariance_spectrum(pooled), rtol=1e-10)


def test_correlation_is_the_pooled_correlation(tokens):
    assert torch.allclose(covariance(tokens, "correlation"), torch.corrcoef(tokens.reshape(-1, 5).T), atol=1e-12)


def test_correlation_of_independent_channels_with_unequal_scales_is_isotropic():
    # Seven exactly orthogonal, zero-mean columns (Hadamard patterns), scaled from 1 to 1000:
    # their covariance is diagonal and dominated by one channel, their correlation the identity.
    hadamard = torch.ones(1, 1, dtype=torch.float64)
    for _ in range(3):
        hadamard = torch.cat([torch.cat([hadamard, hadamard], 1), torch.cat([hadamard, -hadamard], 1)])
    scales = torch.tensor([1, 3, 10, 30, 100, 300, 1000], dtype=torch.float64)
    tokens = (hadamard[:, 1:] * scales).repeat(4, 1).reshape(4, 8, 7)
    assert n_eff(covariance(tokens, "tokens")) < 1.5
    assert torch.allclose(covariance(tokens, "correlation"), torch.eye(7, dtype=torch.float64), atol=1e-12)
    assert n_eff(covariance(tokens, "correlation")) == pytest.approx(7, rel=1e-12)


def test_a_channel_that_does_not_vary_adds_a_zero_eigenvalue_to_the_correlation(tokens):
    tokens = tokens.clone()
    tokens[..., 2] = 5.0
    eigenvalues = torch.linalg.eigvalsh(covariance(tokens, "correlation"))
    assert eigenvalues.abs().min() < 1e-12
    assert torch.isfinite(eigenvalues).all()


def test_position_centring_removes_a_per_position_offset_exactly(tokens, generator):
    offsets = 100 * torch.randn(1, 7, 5, generator=generator, dtype=torch.float64)
    centred = covariance(tokens, "position_centred")
    assert torch.allclose(covariance(tokens + offsets, "position_centred"), centred, rtol=1e-9, atol=1e-9)
    # The offsets dominate the pooled covariance, which the plain measurement reads.
    assert covariance(tokens + offsets, "tokens").trace() > 100 * centred.trace()
    # And it is the covariance of each position's deviations from its mean over images.
    deviations = (tokens - tokens.mean(0)).reshape(-1, 5)
    assert torch.allclose(centred, deviations.T @ deviations / (7 * (30 - 1)), rtol=1e-10)


def test_per_image_covariance_of_images_constant_over_tokens_is_zero(generator):
    means = 50 + torch.randn(20, 1, 6, generator=generator, dtype=torch.float64)
    constant = means.expand(20, 9, 6)
    assert covariance(constant, "per_image").abs().max() < 1e-10
    assert n_eff(covariance(constant, "tokens")) > 3  # the images differ from one another


def test_per_image_covariance_is_the_mean_of_each_images_covariance(tokens):
    expected = torch.stack([torch.cov(image.T) for image in tokens]).mean(0)
    assert torch.allclose(covariance(tokens, "per_image"), expected, rtol=1e-10)


def test_post_layernorm_collapses_tokens_that_differ_only_in_scale(generator):
    direction = torch.tensor([3.0, -1.0, 0.5, 2.0, -4.0, 1.5])
    scales = 1 + 9 * torch.rand(10, 5, 1, generator=generator)
    tokens = scales * direction  # every token is a positive multiple of one vector
    norm = torch.nn.LayerNorm(6, eps=1e-6)
    normed = post_layernorm(tokens, norm)
    assert n_eff(covariance(tokens.double(), "tokens")) == pytest.approx(1.0, abs=1e-6)
    assert covariance(normed.double(), "post_ln").abs().max() < 1e-10
    assert torch.allclose(normed[0, 0], (direction - direction.mean()) / direction.std(unbiased=False), atol=1e-5)


def test_next_norms_are_what_the_next_block_reads():
    torch.manual_seed(0)
    model = VisionTransformer(img_size=16, patch_size=8, embed_dim=16, depth=3, num_heads=2, num_classes=0).eval()
    norms = next_norms(model)
    assert norms == [model.blocks[1].norm1, model.blocks[2].norm1, model.norm]
    outputs, read = [], []
    hooks = [block.register_forward_hook(lambda _m, _i, out: outputs.append(out)) for block in model.blocks]
    hooks += [norm.register_forward_hook(lambda _m, _i, out: read.append(out)) for norm in norms]
    with torch.no_grad():
        model.forward_features(torch.randn(2, 3, 16, 16))
    for hook in hooks:
        hook.remove()
    # Forward order: block 0's output, then block 1's norm1 reading it, ...
    for block, norm in enumerate(norms):
        assert torch.equal(post_layernorm(outputs[block], norm), read[block])


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_groups_do_not_change_the_measurement(tokens, variant):
    assert torch.allclose(covariance(tokens, variant, groups=4), covariance(tokens, variant), rtol=1e-10, atol=1e-10)


def test_the_table_names_the_sums_each_variant_needs():
    assert list(VARIANTS)[0] == "tokens"
    assert needed_sums(["tokens", "correlation", "post_ln"]) == frozenset()
    assert needed_sums(VARIANTS) == {POSITIONS, IMAGE_OUTER}
    assert VARIANTS["post_ln"].layer_norm and not VARIANTS["tokens"].layer_norm
    with pytest.raises(ValueError, match="choose from tokens, post_ln"):
        get_variant("whitened")


def test_a_variant_without_its_sums_says_which_to_keep(tokens):
    statistics = ImageStatistics(5)
    statistics.update(tokens)
    with pytest.raises(ValueError, match="keep 'positions'"):
        get_variant("position_centred").covariance(statistics.moments())
    with pytest.raises(ValueError, match="keep 'image_outer'"):
        get_variant("per_image").covariance(statistics.moments())
