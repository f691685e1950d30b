"""Control inputs: matched noise, phase scrambling, and the raw patches' reference."""
import numpy as np
import pytest
import torch
from PIL import Image
from shared_data import TINY_SAMPLE, needs
from torchvision.transforms.functional import pil_to_tensor

from ib_tutorial.data import get_dataset
from ib_tutorial.data.controls import (
    GaussianNoiseImages,
    PhaseScrambled,
    channel_moments,
    phase_scramble,
    raw_patch_statistics,
)
from ib_tutorial.measure.block_profile import patch_eed


def to_tensor(image):
    return pil_to_tensor(image).float() / 255


@pytest.fixture(scope="module")
def objects():
    """Sixteen 32-px images of shapes over clutter, as tensors in [0, 1]."""
    return get_dataset("synthetic-objects", "val", transform=to_tensor, size=16)


def amplitude(image: torch.Tensor) -> torch.Tensor:
    return torch.fft.fft2(image.double()).abs()


# --- noise -------------------------------------------------------------------------------

def test_noise_has_the_moments_it_is_given():
    mean, std = [0.1, -0.2, 0.3], [1.0, 2.0, 0.5]
    noise = GaussianNoiseImages(200, (3, 16, 16), mean, std, seed=3)
    measured_mean, measured_std = channel_moments(noise)
    # 51,200 pixels a channel: the standard error of the mean is 0.0044 deviations.
    assert torch.allclose(measured_mean, torch.tensor(mean, dtype=torch.float64), atol=0.02 * max(std))
    assert torch.allclose(measured_std, torch.tensor(std, dtype=torch.float64), rtol=0.02)


def test_noise_matches_a_datasets_moments_and_shape(objects):
    noise = GaussianNoiseImages.matching(objects, size=64)
    assert len(noise) == 64 and noise[0][0].shape == objects[0][0].shape
    target_mean, target_std = channel_moments(objects)
    mean, std = channel_moments(noise)
    assert torch.allclose(mean, target_mean, atol=0.02) and torch.allclose(std, target_std, rtol=0.03)


def test_noise_is_white_so_its_patches_use_every_direction():
    noise = torch.stack([GaussianNoiseImages(100, (3, 8, 8), [0.5] * 3, [0.2] * 3)[i][0] for i in range(100)])
    reference = raw_patch_statistics(noise, patch_size=2)
    assert reference.rank == reference.dim == 12
    assert reference.eed_percent > 97


def test_noise_is_a_function_of_seed_and_index():
    noise = GaussianNoiseImages(10, (3, 4, 4), [0.0] * 3, [1.0] * 3, seed=1)
    assert torch.equal(noise[7][0], noise[7][0])
    assert torch.equal(noise[7][0], GaussianNoiseImages(10, (3, 4, 4), [0.0] * 3, [1.0] * 3, seed=1)[7][0])
    assert not torch.equal(noise[7][0], noise[6][0])
    assert not torch.equal(noise[7][0], GaussianNoiseImages(10, (3, 4, 4), [0.0] * 3, [1.0] * 3, seed=2)[7][0])
    with pytest.raises(IndexError):
        noise[10]


# --- phase scrambling --------------------------------------------------------------------

def test_phase_scrambling_keeps_the_amplitude_spectrum_and_changes_the_image(objects):
    image = objects[0][0]
    scrambled = phase_scramble(image, np.random.default_rng(0))
    assert torch.allclose(amplitude(scrambled), amplitude(image), rtol=1e-4, atol=1e-3)
    assert torch.allclose(scrambled.mean((1, 2)), image.mean((1, 2)), atol=1e-6)
    # The pixels themselves are others: the scrambled image hardly correlates with the original.
    correlation = torch.corrcoef(torch.stack([image.flatten(), scrambled.flatten()]))[0, 1]
    assert abs(correlation) < 0.5
    assert (scrambled - image).abs().mean() > 0.05


def test_phase_scrambling_keeps_the_colour_cross_spectra(objects):
    image = objects[1][0].double()
    scrambled = phase_scramble(image, np.random.default_rng(1))
    spectrum, kept = torch.fft.fft2(image), torch.fft.fft2(scrambled)
    cross, kept_cross = spectrum[0] * spectrum[1].conj(), kept[0] * kept[1].conj()
    assert torch.allclose(kept_cross, cross, atol=1e-9)
    # Hence the channels' covariance over pixels too.
    assert torch.allclose(torch.cov(scrambled.flatten(1)), torch.cov(image.flatten(1)), atol=1e-12)


def test_phase_scrambled_dataset_clips_to_each_channels_range_and_keeps_labels(objects):
    scrambled = PhaseScrambled(objects, seed=5)
    assert len(scrambled) == len(objects) and scrambled.classes == objects.classes
    for index in range(4):
        (image, label), (original, original_label) = scrambled[index], objects[index]
        assert label == original_label
        assert (image.flatten(1).amin(1) >= original.flatten(1).amin(1)).all()
        assert (image.flatten(1).amax(1) <= original.flatten(1).amax(1)).all()
        # Clipping is the one change to the amplitude spectrum: small beside it (up to 0.13
        # on these images, which have large flat areas at the ends of their range).
        difference = (amplitude(image) - amplitude(original)).norm() / amplitude(original).norm()
        assert difference < 0.2
    unclipped = PhaseScrambled(objects, seed=5, clip=False)
    assert torch.allclose(amplitude(unclipped[0][0]), amplitude(objects[0][0]), rtol=1e-4, atol=1e-3)


@needs(TINY_SAMPLE)
def test_clipping_real_images_moves_their_spectra_as_documented():
    # PhaseScrambled's docstring: 8 % of the pixels clipped, spectra moved by 6 % on average.
    paths = sorted((TINY_SAMPLE / "val" / "images").glob("*.JPEG"))
    images = [to_tensor(Image.open(path).convert("RGB")) for path in paths]
    clipped, exact = PhaseScrambled(images), PhaseScrambled(images, clip=False)
    shares = [(clipped[i] != exact[i]).double().mean().item() for i in range(len(images))]
    moved = [((amplitude(clipped[i]) - amplitude(image)).norm() / amplitude(image).norm()).item()
             for i, image in enumerate(images)]
    assert len(images) == 100
    assert np.mean(shares) == pytest.approx(0.08, abs=0.005)
    assert np.mean(moved) == pytest.approx(0.06, abs=0.005) and max(moved) == pytest.approx(0.24, abs=0.005)


def test_phase_scrambling_keeps_items_that_are_bare_images(objects):
    images = [objects[i][0] for i in range(3)]
    scrambled = PhaseScrambled(images, seed=5)
    assert isinstance(scrambled[1], torch.Tensor)
    assert torch.equal(scrambled[1], PhaseScrambled(objects, seed=5)[1][0])


def test_phase_scrambling_is_a_function_of_seed_and_index(objects):
    first, again, other = (PhaseScrambled(objects, seed=seed) for seed in (5, 5, 6))
    assert torch.equal(first[3][0], again[3][0])
    assert not torch.equal(first[3][0], other[3][0])


def test_controls_refuse_images_that_are_not_tensors():
    with pytest.raises(TypeError, match="evaluation transform"):
        PhaseScrambled(get_dataset("synthetic-objects", "val", size=2))[0]


# --- raw patches -------------------------------------------------------------------------

def test_raw_patches_n_eff_is_the_profilers_patch_baseline(objects):
    images = torch.stack([objects[i][0] for i in range(len(objects))])
    reference = raw_patch_statistics(images, patch_size=4)
    n_eff, dim = patch_eed(images, patch_size=4)
    assert reference.dim == dim == 48
    assert reference.n_eff == pytest.approx(n_eff, rel=1e-6)
    assert reference.eed_percent == pytest.approx(100 * n_eff / 48, rel=1e-6)


def test_raw_patches_rank_counts_the_directions_images_span(objects):
    images = torch.stack([objects[i][0] for i in range(len(objects))])
    assert raw_patch_statistics(images, patch_size=4).rank == 48
    # Grey images (three equal channels) span one channel's p^2 directions only.
    grey = images.mean(1, keepdim=True).expand(-1, 3, -1, -1)
    assert raw_patch_statistics(grey, patch_size=4).rank == 16
    batches = [(grey[:8], None), (grey[8:], None)]  # a loader's (images, labels) pairs
    in_batches, at_once = raw_patch_statistics(batches, patch_size=4), raw_patch_statistics(grey, patch_size=4)
    assert (in_batches.rank, in_batches.dim) == (at_once.rank, at_once.dim)
    assert in_batches.n_eff == pytest.approx(at_once.n_eff, rel=1e-12)
    with pytest.raises(ValueError, match="no images"):
        raw_patch_statistics([], patch_size=4)


def test_the_controls_bracket_the_images_patch_statistics():
    # Phase scrambling keeps the second-order statistics, so the raw patches' N_eff (5.27 of 48
    # here) stays (5.30 unclipped); matched noise has none, so its patches use every direction.
    world = get_dataset("synthetic-objects", "val", transform=to_tensor, size=64)

    def patches(dataset):
        return raw_patch_statistics(torch.stack([dataset[i][0] for i in range(len(dataset))]), patch_size=4)

    images, scrambled = patches(world), patches(PhaseScrambled(world, clip=False))
    assert scrambled.n_eff == pytest.approx(images.n_eff, rel=0.05)
    assert images.n_eff < 8
    assert patches(GaussianNoiseImages.matching(world)).n_eff > 40


def test_phase_scrambling_known_answers_constant_and_grating():
    """A constant image has no phase to scramble: it comes back unchanged. A cosine grating
    (one spatial frequency) comes back as a grating of the same frequency and amplitude,
    shifted: :math:`a\\cos(2\\pi k x / n) \\mapsto a\\cos(2\\pi k x / n + \\varphi)`."""
    constant = torch.full((3, 8, 8), 0.25, dtype=torch.float64)
    assert torch.allclose(phase_scramble(constant, np.random.default_rng(0)), constant, atol=1e-12)
    x = torch.arange(16, dtype=torch.float64)
    grating = (0.5 + 0.3 * torch.cos(2 * torch.pi * 3 * x / 16)).expand(3, 16, 16).transpose(1, 2).contiguous()
    scrambled = phase_scramble(grating, np.random.default_rng(2))
    wave = scrambled[0, :, 0] - 0.5
    phase = torch.atan2(-(wave * torch.sin(2 * torch.pi * 3 * x / 16)).sum(), (wave * torch.cos(2 * torch.pi * 3 * x / 16)).sum())
    expected = 0.5 + 0.3 * torch.cos(2 * torch.pi * 3 * x / 16 + phase)
    assert torch.allclose(scrambled, expected[None, :, None].expand(3, 16, 16), atol=1e-9)
    assert not torch.allclose(scrambled, grating, atol=1e-3)  # the phase did move
