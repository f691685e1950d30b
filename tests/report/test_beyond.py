"""The statements of "Beyond the paper", read from the committed bundles the chapter reads."""
import pytest

from ib_tutorial.paths import in_repository
from ib_tutorial.report import beyond
from ib_tutorial.reproduction.bundles import load_bundle, runs_differing_in
from ib_tutorial.reproduction.learned import run_learned
from ib_tutorial.reproduction.manifest import stored_entry

pytestmark = pytest.mark.skipif(not in_repository(), reason="the committed results live in a checkout")


@pytest.fixture(scope="module")
def real():
    return load_bundle(stored_entry("beyond-real"))


def test_pruning_statements_answer_only_from_runs_that_learned():
    records, runs = beyond.committed_pruning()
    assert records and set(records) == set(runs)
    text = beyond.pruning_statements(records, runs)
    assert text.count("- **") == len(records)
    for label, run in runs.items():
        assert ("did not learn" in text.split(f"**{label}**")[1].split("\n")[0]) == (not run_learned(run))


def test_objective_and_measurement_statements_name_every_run(real):
    groups = runs_differing_in(real, "objective")
    text = beyond.objective_statements(groups)
    assert all(f"**{dataset}, {objective}**" in text for dataset, runs in groups.items() for objective in runs)
    table = beyond.measurement_table(real)
    assert all(f"| {spec} |" in table for spec in real.runs)
    assert all(f"- **{spec}** {'learned' if run_learned(run) else 'did not learn'}" in table
               for spec, run in real.runs.items())


def test_pruning_of_keeps_the_last_record_of_each_run(real):
    records = beyond.pruning_of(real)
    assert all(records[spec] is run.pruning[-1] for spec, run in real.runs.items() if run.pruning)
