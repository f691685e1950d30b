"""The level puzzle's sections: known answers on made-up measurements, the live sections on a
small number of generated images, and the committed numbers the chapter states."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from ib_tutorial.measure.bootstrap import BootstrapProfile
from ib_tutorial.files import in_repository
from ib_tutorial.presets import get_preset
from ib_tutorial.book import level_puzzle
from ib_tutorial.book.measurement import MeasuredProfile, MeasurementResult, paper_levels

WIDTH = 100  # so that N_eff reads as EED%


def flat(input: str, variant: str, tokens: str, eed: float) -> MeasuredProfile:
    """A profile at ``eed`` % in every block, its replicates within a tenth of a point."""
    n_eff = [eed] * 12
    replicates = torch.tensor(n_eff, dtype=torch.float64) + 0.1 * torch.linspace(-1, 1, 20, dtype=torch.float64)[:, None]
    return MeasuredProfile(input, variant, tokens, BootstrapProfile(n_eff, replicates, WIDTH, 0.9, "percentile", variant, 0))


def result(seed: int, shift: float = 0.0) -> MeasurementResult:
    profiles = (flat("images", "tokens", "all", 10 + shift), flat("images", "post_ln", "all", 20 + shift),
                flat("images", "tokens", "cls", 5 + shift), flat("phase-scrambled", "tokens", "all", 11 + shift),
                flat("noise", "tokens", "all", 55 + shift))
    return MeasurementResult(f"seed {seed}", 32, 8, 512, 20, 0.9, seed, {}, profiles)


@pytest.fixture
def results() -> list[MeasurementResult]:
    return [result(0, -1.0), result(1, 1.0)]


def test_variant_levels_spread_and_gap_are_the_known_ratios(results):
    section = level_puzzle.variant_levels(results)
    values = section.values
    assert values["pz_variants"] == 3
    assert values["pz_spread_early"] == pytest.approx(20 / 5)
    assert values["pz_gap_early"] == pytest.approx(58 / 10)  # the paper's 58-60 over the default's 10
    assert values["pz_gap_late"] == pytest.approx(91.5 / 10)
    assert values["pz_highest_middle"] == pytest.approx(20)
    assert "5.0 (tokens, cls)" in section.table and "20.0 (post_ln, all)" in section.table


def test_only_an_input_within_the_tolerance_reaches_the_papers_early_level(results):
    section = level_puzzle.paper_early_level(results)
    assert section.values["pz_reaching"] == 1 and section.values["pz_reaching_inputs"] == "noise"
    assert section.values["pz_closest_variant"] == "post_ln, all"
    assert section.values["pz_closest_images"] == pytest.approx(20)
    assert "| noise | tokens | all | 54.0-56.0 | yes |" in section.table
    strict = level_puzzle.paper_early_level(results, tolerance=1.0)  # 56 + 1 < 58: nothing comes near
    assert strict.values["pz_reaching"] == 0 and strict.values["pz_reaching_inputs"] == "none"


def test_no_committed_measurement_says_so(tmp_path):
    assert level_puzzle.committed_measurements(folder=tmp_path) == []
    assert "No measurement" in level_puzzle.variant_levels([]).table


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Eight generated images: no Tiny ImageNet under an empty root."""
    return level_puzzle.real_images(8, root=tmp_path_factory.mktemp("empty"))


def test_without_tiny_imagenet_the_generated_world_stands_in_and_says_so(generated):
    dataset, source = generated
    assert len(dataset) == 8 and "synthetic-objects" in source
    assert level_puzzle.stacked(dataset).shape == (8, 3, level_puzzle.IMG_SIZE, level_puzzle.IMG_SIZE)


def test_rows_cap_the_noise_and_its_level_rises_with_them(generated):
    preset = get_preset("ci")
    preset = dataclasses.replace(preset, profile=dataclasses.replace(preset.profile, images=8))
    section = level_puzzle.rows_and_tokens(preset, *generated)
    values = section.values
    width = values["pz_width"]
    # A covariance of n rows has rank at most n - 1, whatever the network: 2 images of 17 tokens.
    assert values["pz_rows_few"] == 2 * 17
    assert values["pz_noise_few_rows"] <= 100 * (values["pz_rows_few"] - 1) / width
    assert values["pz_noise_most_rows"] > values["pz_noise_few_rows"]
    assert values["pz_noise_patch8"] > 3 * values["pz_images_patch4"]
    assert len(section.figures) == 1 and section.table.count("\n") == 4


def test_live_inputs_put_noise_far_above_the_images(generated):
    preset = get_preset("ci")
    section = level_puzzle.input_levels(preset, *generated)
    values = section.values
    assert values["pz_images"] == 8
    assert values["pz_live_noise_early"] > 3 * values["pz_live_images_early"]
    assert "random, live (8 images)" in section.table


def test_eed_profile_is_the_default_measurement():
    model = level_puzzle.random_network()
    images = torch.randn(4, 3, level_puzzle.IMG_SIZE, level_puzzle.IMG_SIZE, generator=torch.Generator().manual_seed(0))
    profile = level_puzzle.eed_profile(model, images, batch_size=2)
    assert len(profile) == 12 and all(0 < value <= 100 * (4 * 17 - 1) / 192 + 1e-9 for value in profile)


@pytest.mark.skipif(not in_repository(), reason="the committed results live in a checkout")
def test_the_committed_numbers_the_chapter_states():
    rules = level_puzzle.seed_rules()
    assert len(rules) == 3 and all(rule.learned for rule in rules)
    first, last = level_puzzle.committed_measurements("first"), level_puzzle.committed_measurements("last")
    assert len(first) == len(last) == 3
    noise_early = level_puzzle.mean_levels(first, "noise")[0]
    assert 58 <= noise_early <= 61  # the white-noise control at the paper's early 58-60 %
    assert all(paper_levels(r.get().profile.eed_percent)[0] < 6 for r in first)
    assert level_puzzle.paper_early_level().values["pz_reaching_inputs"] == "noise"


def test_the_sentence_says_which_level_the_variants_move_further_than_its_gap():
    span = lambda spread, gap: level_puzzle.VariantSpan(spread, gap, ("tokens", "all"), ("post_ln", "all"))
    sentence = level_puzzle.variants_sentence({"early": span(3.3, 4.8), "middle": span(3.2, 2.3), "late": span(2.3, 7.7)})
    assert "the early level by a factor of 3.3, less than the factor of 4.8 to the paper's" in sentence
    assert "the middle level by a factor of 3.2, more than the factor of 2.3" in sentence
    assert sentence.endswith("for the middle level the choices move it further than the gap, for the others less.")
    assert "no choice" in level_puzzle.variants_sentence({"early": span(2.0, 4.8)})


def test_the_spans_name_the_variants_at_either_end(results):
    spans, levels = level_puzzle.variant_spans(results)
    assert spans["early"].lowest == ("tokens", "cls") and spans["early"].highest == ("post_ln", "all")
    assert spans["early"].spread == pytest.approx(20 / 5) and len(levels) == 3
