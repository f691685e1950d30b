"""The statements of "Beyond the paper", read from the committed bundles the chapter reads."""
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

from ib_tutorial.files import in_repository
from ib_tutorial.book import beyond
from ib_tutorial.book.plots import pruning_caption
from ib_tutorial.book.bundles import load_bundle, runs_differing_in
from ib_tutorial.book.learned import run_learned
from ib_tutorial.book.bundles import stored_entry

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


def test_setting_comparison_draws_the_knn_curves_and_profiles_of_each_dataset(real):
    groups = runs_differing_in(real, "objective")
    figures = beyond.plot_setting_comparison(groups, "objective")
    assert groups and len(figures) == 2 * len(groups)
    labels = {f"{dataset}, objective {value}" for dataset, runs in groups.items() for value in runs}
    assert {ax.get_title() for ax in figures[0].axes if ax.get_visible()} == labels  # one k-NN panel a run
    plt.close("all")


def test_all_measurements_draw_one_panel_a_run_with_every_measurement(real):
    fig = beyond.plot_all_measurements(real)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == list(real.runs)
    for ax, run in zip(panels, real.runs.values()):
        assert len(ax.get_lines()) >= 2 * (1 + len(run.variants))  # last epoch and initialisation of each
    plt.close(fig)


def test_last_pruning_draws_one_row_a_run_and_names_each_record_in_the_caption(real):
    records = beyond.pruning_of(real)
    fig = beyond.plot_last_pruning(records)
    assert [sub._suptitle.get_text() for sub in fig.subfigs] == list(records)
    text = " ".join(t.get_text() for t in fig.findobj(Text))
    assert all(pruning_caption(record)[:40] in text.replace("\n", " ") for record in records.values())
    plt.close(fig)
