"""One network in front of its controls: the controls' findings and fewer rows, on the committed measurements."""
import pytest

from ib_tutorial.book.measurement import control_findings, rows_comparison, run_measurements
from ib_tutorial.book.bundles import load_bundle
from ib_tutorial.book.bundles import stored_entry


@pytest.fixture(scope="module")
def measured():
    folder = stored_entry("supervised-seeds")
    if not folder.exists():
        pytest.skip("the committed results/ are not next to this package")
    run = min(load_bundle(folder).runs.values(), key=lambda run: run.config.seed)
    return run_measurements(folder / run.spec.folder), run_measurements(folder / run.spec.folder, 144)


def test_the_controls_and_fewer_rows_on_the_committed_network(measured):
    many, few = measured
    findings = control_findings(many[0], many[15])
    assert findings.scrambled_gap < 1.5 and findings.noise_ratio > 10
    assert findings.shapes["trained", "images"] == findings.shapes["trained", "phase-scrambled"] == "hump"
    rows = rows_comparison(many, few)
    assert rows.same_shapes and rows.largest_shift < 1 and rows.markdown.count("| epoch") == 4
    assert rows.images == (512, 144)
