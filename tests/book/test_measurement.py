"""The controls and measurement variants of a network, on a small ViT with random weights and on a run's saved network."""
from __future__ import annotations

import pytest
import torch
from timm.models.vision_transformer import VisionTransformer
from torch.utils.data import TensorDataset
from training_runs import DATASET, TINY

from ib_tutorial import cli
from ib_tutorial.measure.block_profile import profile_model
from ib_tutorial.measure.bootstrap import BootstrapProfile, Interval
from ib_tutorial.measure.covariance import CovarianceAccumulator
from ib_tutorial.book.measurement import (
    DEFAULT,
    INPUTS,
    MeasuredProfile,
    MeasurementResult,
    controls_table,
    measure_controls,
    measure_run,
    measured_epochs,
    measurement_path,
    measurements,
    near,
    near_paper,
    paper_levels,
    variants_table,
)
from ib_tutorial.book.paper import REPORTED
from ib_tutorial.training import loop

DEPTH, WIDTH = 4, 24


def small_vit() -> torch.nn.Module:
    torch.manual_seed(0)
    return VisionTransformer(img_size=16, patch_size=4, embed_dim=WIDTH, depth=DEPTH, num_heads=2,
                             num_classes=0).eval()


def smooth_images(count: int = 48) -> TensorDataset:
    """Periodic images of the lowest spatial frequencies only (white noise low-passed in the
    Fourier domain): patches that span few directions, unlike white noise, and a spectrum that
    phase scrambling keeps (no edge at the wrap-around)."""
    noise = torch.randn(count, 3, 16, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    frequencies = torch.fft.fftfreq(16).abs()
    low = (frequencies[:, None] <= 1 / 16) & (frequencies[None, :] <= 1 / 16)
    images = torch.fft.ifft2(torch.fft.fft2(noise) * low).real.float()
    return TensorDataset(images, torch.zeros(count, dtype=torch.long))


@pytest.fixture(scope="module")
def result() -> MeasurementResult:
    return measure_controls(small_vit(), smooth_images(), "small", replicates=20, batch_size=16, progress=False)


def test_every_defined_measurement_of_the_images_and_the_default_of_the_controls(result):
    assert len(measurements()) == 16  # 5 variants x 4 token choices, less per-image and position-centred of cls, mean
    assert ("per_image", "cls") not in measurements() and ("post_ln", "mean") in measurements()
    assert [(m.variant, m.tokens) for m in result.profiles if m.input == "images"] == measurements()
    assert [(m.input, (m.variant, m.tokens)) for m in result.profiles if m.input != "images"] == [
        ("phase-scrambled", DEFAULT), ("noise", DEFAULT)]
    assert all(m.profile.replicates.shape == (20, DEPTH) for m in result.profiles)


def test_noise_at_initialisation_is_near_isotropic_beside_smooth_images(result):
    images, noise = result.get("images"), result.get("noise")
    assert min(noise.profile.n_eff) > 1.5 * max(images.profile.n_eff)
    assert result.raw_patches["noise"].n_eff > 3 * result.raw_patches["images"].n_eff
    # Phase scrambling keeps the spectrum, hence (up to clipping) the patches' covariance.
    assert result.raw_patches["phase-scrambled"].n_eff == pytest.approx(result.raw_patches["images"].n_eff, rel=0.1)
    assert result.raw_patches["noise"].rank == result.raw_patches["noise"].dim == 3 * 4 * 4


def test_measured_values_are_the_profilers(result):
    model, images = small_vit(), smooth_images().tensors[0]
    for tokens in ("all", "cls", "patch", "mean"):
        expected = profile_model(model, images, tokens=tokens, progress=False).n_eff
        assert result.get("images", ("tokens", tokens)).profile.n_eff == pytest.approx(expected, rel=1e-5)


def test_post_layernorm_of_the_last_block_is_the_final_features(result):
    with torch.no_grad():
        features = small_vit().forward_features(smooth_images().tensors[0])
    accumulator = CovarianceAccumulator(WIDTH)
    accumulator.update(features.reshape(-1, WIDTH))
    measured = result.get("images", ("post_ln", "all")).profile.n_eff[-1]
    assert measured == pytest.approx(accumulator.effective_dimension(), rel=1e-5)


def test_results_are_a_function_of_the_seed():
    first, second, other = (measure_controls(small_vit(), smooth_images(16), "small", measured=[DEFAULT],
                                             replicates=5, seed=seed, progress=False) for seed in (3, 3, 4))
    assert first.to_dict() == second.to_dict()
    assert first.to_dict() != other.to_dict()


def test_paper_levels_are_the_early_mean_middle_minimum_and_late_maximum():
    values = [59.0, 57, 31, 30, 33, 40, 50, 60, 70, 80, 88, 92.5]
    assert paper_levels(values) == (58.0, 30.0, 92.5)


def test_near_a_range_within_the_tolerance():
    assert near(Interval(50.0, 48, 52, 0.9), (58.0, 60.0), tolerance=10)
    assert not near(Interval(40.0, 38, 45, 0.9), (58.0, 60.0), tolerance=10)
    assert near(Interval(95.0, 94, 96, 0.9), (None, 92.5), tolerance=5)
    assert near(Interval(5.0, 4, 6, 0.9), None) is None


def fixed(values: list[float], dim: int = 100) -> BootstrapProfile:
    """A profile whose replicates all equal its measured values (intervals of zero width)."""
    return BootstrapProfile(values, torch.tensor([values] * 4, dtype=torch.float64), dim, 0.9, "basic", "tokens", 0)


def test_tables_have_a_row_per_network_and_input_or_measurement(result):
    controls = controls_table([result, result]).strip().splitlines()
    assert len(controls) == 2 + 2 * len(INPUTS)
    assert controls[2].startswith("| small | images |")
    variants = variants_table([result]).strip().splitlines()
    assert len(variants) == 2 + len(measurements())


def test_a_profile_at_the_papers_levels_is_flagged_near():
    reported = REPORTED["tiny-imagenet"]
    paper = [59.0, 59, 30.5, 31, 31, 40, 50, 60, 70, 80, 85, 92.0]
    flat = [5.0] * 12
    profiles = (MeasuredProfile("images", "tokens", "all", fixed(paper)),
                MeasuredProfile("images", "tokens", "cls", fixed(flat)))
    result = MeasurementResult("paper-like", 32, 8, 10, 4, 0.9, 0, {}, profiles)
    assert all(near_paper(profiles[0]).values())
    assert not any(near_paper(profiles[1]).values())
    rows = variants_table([result], tolerance=1).strip().splitlines()
    assert rows[2].endswith("| **near** |") and rows[3].endswith("| 0 of 3 |")
    assert f"{reported.early_eed[0]:g}-{reported.early_eed[1]:g}" in rows[0]
    shape, share = profiles[0].shape()
    assert (shape, share) == ("U", 1.0)


def test_a_saved_result_reads_back_with_the_same_tables(result, tmp_path):
    result.save(tmp_path / "small.json")
    read = MeasurementResult.load(tmp_path / "small.json")
    assert (read.label, read.images, read.replicates, read.level) == (result.label, result.images, 20, result.level)
    assert read.raw_patches == result.raw_patches
    for kept, original in zip(read.profiles, result.profiles):
        assert (kept.input, kept.variant, kept.tokens) == (original.input, original.variant, original.tokens)
        for name, interval in original.levels().items():  # replicates kept to four decimals
            assert kept.levels()[name].low == pytest.approx(interval.low, abs=1e-3)
            assert kept.levels()[name].high == pytest.approx(interval.high, abs=1e-3)
        assert kept.shape()[0] == original.shape()[0]
    assert not list(tmp_path.glob("*.tmp*"))


def result_of_random_weights_has_no_provenance() -> bool:
    return measure_controls(small_vit(), smooth_images(8), "small", measured=[DEFAULT], replicates=2,
                            progress=False).provenance is None


def test_a_runs_saved_network_is_measured_on_its_profile_images_and_kept_in_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    loop.train(DATASET, "ci", out=out, progress=False, epochs=1, **TINY)
    path = measure_run(out, 0, images=16, measured=[DEFAULT], replicates=5, progress=False)
    assert path == out / "measurement" / "0-16-images.json"  # beside, not in place of, the default's 0.json
    measured = MeasurementResult.load(path)
    assert measured.label == f"{DATASET} dino vit_tiny, epoch 0" and measured.images == 16
    assert measured.provenance.preset == "ci" and measured.provenance.n_images == 16
    assert result_of_random_weights_has_no_provenance()
    assert [m.input for m in measured.profiles] == list(INPUTS)
    with pytest.raises(ValueError, match=r"saved no network at epoch 7; it saved epochs \[0, 1\]"):
        measure_run(out, 7)
    # the command: the last saved network by default, both tables printed, the file beside the profiles
    cli.main(["measure", str(out), "--default-only", "--images", "16", "--replicates", "5", "--no-progress"])
    printed = capsys.readouterr().out
    assert "| network | input | raw patches" in printed and "near the paper" in printed
    assert MeasurementResult.load(out / "measurement" / "1-16-images.json").label.endswith("epoch 1")
    assert measurement_path(out, 1) == out / "measurement" / "1.json"


def test_measured_epochs_are_those_on_the_default_number_of_images(tmp_path):
    folder = tmp_path / "measurement"
    folder.mkdir()
    for name in ("0.json", "15.json", "15-144-images.json", "3-144-images.json", "notes.json"):
        (folder / name).write_text("{}")
    assert measured_epochs(tmp_path) == [0, 15]
    assert measured_epochs(tmp_path, images=144) == [3, 15]
    assert measured_epochs(tmp_path / "absent") == []
