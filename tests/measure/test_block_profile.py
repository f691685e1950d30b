"""The one-pass block profiler against running the blocks by hand."""
import pytest
import torch

from ib_tutorial.measure.block_profile import profile_measurements, profile_model, select_tokens
from ib_tutorial.measure.covariance import CovarianceAccumulator
from ib_tutorial.measure.metrics import effective_encoding_dimension
from ib_tutorial.models import vit_small


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return vit_small(img_size=32, patch_size=8).eval()


@pytest.fixture(scope="module")
def images():
    return torch.randn(12, 3, 32, 32, generator=torch.Generator().manual_seed(0))


def embed_tokens(model, images):
    """The tokens [B, T, D] block 0 of a timm ViT receives: patch embedding, class token and
    position embedding, patch dropout, pre-norm (timm's internals; no public call does it)."""
    tokens = model.patch_embed(images)
    tokens = model._pos_embed(tokens)
    tokens = model.patch_drop(tokens)
    return model.norm_pre(tokens)


def block_outputs_by_hand(model, images):
    """Run patch embedding, position embedding and each block explicitly."""
    with torch.no_grad():
        x = embed_tokens(model, images)
        outputs = []
        for block in model.blocks:
            x = block(x)
            outputs.append(x)
    return outputs


def test_embedded_tokens_through_the_blocks_are_the_forward_pass(model, images):
    """timm's internals (embed_tokens above) against its public forward."""
    with torch.no_grad():
        by_hand = model.norm(block_outputs_by_hand(model, images)[-1])
        assert torch.allclose(by_hand, model.forward_features(images), atol=1e-6)
    assert by_hand.shape == (12, 1 + (32 // 8) ** 2, 384)


@pytest.mark.parametrize("tokens", ["all", "cls", "patch", "mean"])
def test_profile_matches_blocks_run_by_hand(model, images, tokens):
    profile = profile_model(model, images, tokens=tokens, progress=False)
    for index, output in enumerate(block_outputs_by_hand(model, images)):
        expected = effective_encoding_dimension(select_tokens(output, tokens))
        assert profile.n_eff[index] == pytest.approx(expected, rel=1e-5)
    assert profile.depth == 12
    assert profile.dim == 384


def test_batches_from_a_loader_equal_one_batch(model, images):
    whole = profile_model(model, images, progress=False)
    loader = [(chunk, torch.zeros(len(chunk))) for chunk in torch.split(images, 5)]
    streamed = profile_model(model, loader, progress=False)
    assert streamed.n_eff == pytest.approx(whole.n_eff, rel=1e-6)
    assert streamed.n_images == 12
    assert streamed.n_tokens == 12 * 17


def test_measurements_from_one_pass_equal_one_call_each(model, images):
    measurements = [("all", True), ("cls", True), ("mean", False), ("all", False)]
    loader = [(chunk, torch.zeros(len(chunk))) for chunk in torch.split(images, 5)]
    shared = profile_measurements(model, loader, measurements, companions=("rankme", "twonn"), twonn_samples=50,
                                  progress=False)
    each = [profile_model(model, loader, tokens=tokens, center=center, companions=("rankme", "twonn"),
                          twonn_samples=50, progress=False) for tokens, center in measurements]
    assert shared == each
    with pytest.raises(ValueError, match="tokens must be one of"):
        profile_measurements(model, loader, [("all", True), ("every", True)], progress=False)


def test_token_counts(images):
    out = torch.randn(4, 17, 8)
    assert select_tokens(out, "all").shape == (68, 8)
    assert select_tokens(out, "cls").shape == (4, 8)
    assert select_tokens(out, "patch").shape == (64, 8)
    torch.testing.assert_close(select_tokens(out, "mean"), out[:, 1:].mean(1))


def test_companions_are_reported_per_block(model, images):
    profile = profile_model(
        model, images, companions=("rankme", "participation_ratio", "twonn"), twonn_samples=150, progress=False
    )
    for name in ("rankme", "participation_ratio", "twonn"):
        assert len(profile.companions[name]) == 12
    for pr, n_eff in zip(profile.companions["participation_ratio"], profile.n_eff):
        assert pr <= n_eff


def test_uncentred_profile_uses_the_uncentred_accumulator(model, images):
    profile = profile_model(model, images, center=False, tokens="cls", progress=False)
    last = block_outputs_by_hand(model, images)[-1][:, 0]
    acc = CovarianceAccumulator(384, center=False)
    acc.update(last)
    assert profile.n_eff[-1] == pytest.approx(acc.effective_dimension(), rel=1e-5)


def test_model_mode_is_restored(model, images):
    model.train()
    profile_model(model, images[:2], progress=False)
    assert model.training
    model.eval()


def test_bad_choices_name_the_options(model, images):
    with pytest.raises(ValueError, match="all"):
        profile_model(model, images, tokens="every", progress=False)
    with pytest.raises(ValueError, match="rankme"):
        profile_model(model, images, companions=("entropy",), progress=False)


def test_pretrained_control_reports_clearly_when_offline(monkeypatch, capsys):
    import huggingface_hub.constants

    from ib_tutorial.models import pretrained_dino_vit_small

    # The hub reads HF_HUB_OFFLINE at import; patch the constant so no request is tried.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_CACHE", "/nonexistent-hf-cache")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", "/nonexistent-hf-cache")
    assert pretrained_dino_vit_small() is None
    assert "vit_small_patch16_224.dino" in capsys.readouterr().out


def test_patch_eed_of_noise_fills_the_patch_and_of_flat_colour_is_one():
    from ib_tutorial.measure.block_profile import patch_eed

    generator = torch.Generator().manual_seed(0)
    noise = torch.randn(64, 3, 16, 16, generator=generator)
    n_eff, dim = patch_eed(noise, 4)
    assert dim == 48 and n_eff == pytest.approx(48, rel=0.05)
    # Every patch a flat grey of random brightness: one direction.
    flat = torch.rand(64, 1, 1, 1, generator=generator).expand(64, 3, 16, 16)
    flat = flat + 0.01 * torch.rand(64, 1, 4, 4, generator=generator).repeat_interleave(4, 2).repeat_interleave(4, 3)
    assert patch_eed(flat, 4)[0] < 1.1
