"""The chapter "From runs to results": one bundle's command and verdicts, the table of every
other bundle, and the GPU run's paragraph that names its candidate causes without choosing one."""
import dataclasses

import matplotlib

matplotlib.use("Agg")

import pytest
from profile_records import bundle_run

from ib_tutorial.book import walkthrough
from ib_tutorial.book.bundles import Bundle, load_bundle
from ib_tutorial.book.dataset_runs import DatasetRun
from ib_tutorial.book.walkthrough import FloorsTest, GpuRunFacts
from ib_tutorial.book.bundles import stored_entry


def learned_run(spec, first=20.0, last=40.0):
    run = bundle_run(spec)
    knn = [{"epoch": 0, "step": 0, "top1": first, "n_eval": 1000}, {"epoch": 2, "step": 100, "top1": last, "n_eval": 1000}]
    return dataclasses.replace(run, knn=knn)


def test_the_command_remakes_the_bundle_where_the_book_reads_it():
    bundle = Bundle("laptop-x", None, "laptop", {"tiny-imagenet": learned_run("tiny-imagenet"),
                                                 "dtd:folder=dtd@seed=1": learned_run("dtd:folder=dtd@seed=1")})
    assert walkthrough.bundle_command(bundle) == ("ib-tutorial reproduce --preset laptop --datasets tiny-imagenet "
                                                  "dtd:folder=dtd@seed=1 --out /tmp/laptop-x --export results/laptop-x")


def test_each_run_gets_the_rules_verdict_and_its_reason():
    bundle = Bundle("b", None, "laptop", {"tiny-imagenet@objective=supervised": learned_run("tiny-imagenet@objective=supervised"),
                                          "tiny-imagenet@objective=supervised,seed=1":
                                              learned_run("tiny-imagenet@objective=supervised,seed=1", last=20.5)})
    lines = walkthrough.learned_markdown(bundle).splitlines()[2:]
    assert lines[0].startswith("| `tiny-imagenet@objective=supervised` | learned | +20.0 (")
    assert "| did not learn | +0.5 (" in lines[1]
    assert lines[0].endswith("| - |")  # a supervised run has no teacher to collapse


def test_the_bundles_table_counts_learned_runs_and_links_the_chapters_that_read_them():
    bundle = Bundle("laptop-x", None, "laptop", {"tiny-imagenet": learned_run("tiny-imagenet"),
                                                 "tiny-imagenet@seed=1": learned_run("tiny-imagenet@seed=1", last=20.0)})
    table = walkthrough.bundles_markdown([bundle])
    row = table.splitlines()[-1]
    assert row.startswith("| `laptop-x` | `laptop` | 2: `tiny-imagenet` |") and "| 1 of 2 |" in row
    assert "{doc}`results_tiny_imagenet`" in row  # a plain run is shown in its Results chapter
    assert walkthrough.bundles_markdown([bundle], skip=["laptop-x"]).count("\n") == 1  # the header alone


def test_the_gpu_paragraph_names_every_candidate_as_untested_and_the_floors_test_as_run():
    facts = GpuRunFacts(epochs=12, steps=468, batch=256, warmup_steps=39, freeze_steps=39, out_dim=65536,
                        train_images=10000, knn_first=23.2, knn_last=19.4, knn_se=1.25, learned=False,
                        teacher_share=(0.9, 0.94))
    floors = FloorsTest(gain_without=4.4, gain_with=3.0, steps=3744, warmup_steps=(78, 800), difference=1.4,
                        difference_se=1.93)
    entry = DatasetRun(Bundle("gpu", None, "paper", {}), bundle_run("tiny-imagenet"))
    text = walkthrough.gpu_run_markdown(entry, facts, floors)
    assert "**it did not learn**" in text and "Why is not known" in text and "because" not in text
    assert "cut them to 39 and 39 steps" in text and "+4.4 points without the floors and +3.0 with them" in text
    assert "neither helped nor hurt measurably" in text
    assert "K = 65,536 outputs for 10,000 training images, 6.6 per image. Untested." in text
    assert "468 in all. Untested." in text and "90-94 % of log K" in text
    helped = walkthrough.gpu_run_markdown(entry, facts, dataclasses.replace(floors, difference=-5.0))
    assert "the floors helped by more than two standard errors" in helped


@pytest.mark.skipif(not all(stored_entry(key).exists() for key in ("walkthrough", "gpu-run", "floors-without")),
                    reason="the committed bundles are not next to this package")
def test_the_gpu_section_reads_the_committed_run_and_the_floors_test():
    section = walkthrough.gpu_run_section(load_bundle(stored_entry("walkthrough")))
    assert section.table.startswith("DINO ViT-S ran") and "**it did not learn**" in section.table
    assert "from one initialisation" in section.table and section.table.count("Untested.") == 2
    (figure,) = section.figures
    assert len(figure.axes[0].get_lines()) >= 1
