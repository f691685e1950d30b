"""One network in front of its controls: the spans of the measurement variants against the gap
to the paper's levels, the controls' findings and fewer rows, on the committed measurements."""
import pytest

from ib_tutorial.report.controls import (VariantSpan, control_findings, paper_level, rows_comparison,
                                         run_measurements, variant_spans, variants_sentence)
from ib_tutorial.reproduction.bundles import load_bundle
from ib_tutorial.reproduction.manifest import stored_entry


def test_the_sentence_says_which_level_the_variants_move_further_than_its_gap():
    spans = {"early": VariantSpan(3.3, 4.8), "middle": VariantSpan(3.2, 2.3), "late": VariantSpan(2.3, 7.7)}
    sentence = variants_sentence(spans)
    assert "the early level by a factor of 3.3, less than the factor of 4.8 to the paper's" in sentence
    assert "the middle level by a factor of 3.2, more than the factor of 2.3" in sentence
    assert sentence.endswith("for the middle level the choices move it further than the gap, for the others less.")
    assert "no choice" in variants_sentence({"early": VariantSpan(2.0, 4.8)})


def test_the_paper_levels_are_the_middles_of_its_ranges():
    assert (paper_level("early"), paper_level("middle"), paper_level("late")) == (59.0, 30.5, 92.5)


@pytest.fixture(scope="module")
def measured():
    folder = stored_entry("supervised-seeds")
    if not folder.exists():
        pytest.skip("the committed results/ are not next to this package")
    run = min(load_bundle(folder).runs.values(), key=lambda run: run.config.seed)
    return run_measurements(folder / run.spec.folder), run_measurements(folder / run.spec.folder, 144)


def test_the_committed_variants_span_less_than_the_gap_early_and_late_and_more_in_the_middle(measured):
    many, _ = measured
    spans = variant_spans(many[15])
    assert [round(spans[level].span, 1) for level in spans] == [3.3, 3.2, 2.3]
    assert [round(spans[level].gap, 1) for level in spans] == [4.8, 2.3, 7.7]


def test_the_controls_and_fewer_rows_on_the_committed_network(measured):
    many, few = measured
    findings = control_findings(many[0], many[15])
    assert findings.scrambled_gap < 1.5 and findings.noise_ratio > 10
    assert findings.shapes["trained", "images"] == findings.shapes["trained", "phase-scrambled"] == "hump"
    rows = rows_comparison(many, few)
    assert rows.same_shapes and rows.largest_shift < 1 and rows.markdown.count("| epoch") == 4
    assert rows.images == (512, 144)
