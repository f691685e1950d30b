"""A bundle's runs labelled by what sets each apart, what they share said once; its
comparison table read against the paper's values as they are now."""
import dataclasses
import json

from profile_records import CONFIG

from ib_tutorial.book.tables import markdown_table, run_labels, write_comparison_table
from ib_tutorial.training.run_config import RunConfig
from ib_tutorial.training.run_config import RunSpec
from ib_tutorial.training.runs import RunDirectory


def labels(*texts):
    return run_labels([RunSpec.parse(text) for text in texts])


def test_a_sweep_is_labelled_by_its_knob_and_shares_the_rest():
    settings = "objective=supervised,epochs=24,global_crop_scale=(0.9,1.0),lr=0.0005"
    found, shared = labels(*(f"synthetic-mix:texture_weight={w},object_scale=1.6@{settings}" for w in (0, 0.05, 1)))
    assert found == ["`texture_weight=0`", "`texture_weight=0.05`", "`texture_weight=1`"]
    assert shared == ("`synthetic-mix`, `object_scale=1.6`, settings `objective=supervised, epochs=24, "
                      "global_crop_scale=(0.9,1.0), lr=0.0005`")


def test_datasets_and_settings_that_differ_stay_in_the_label():
    found, shared = labels("tiny-imagenet", "dtd:folder=dtd", "tiny-imagenet@objective=supervised,seed=1")
    assert found == ["`tiny-imagenet`", "`dtd:folder=dtd`", "`tiny-imagenet@objective=supervised,seed=1`"]
    assert shared == ""


def test_one_run_keeps_its_dataset_and_says_its_settings_once():
    found, shared = labels("tiny-imagenet@objective=supervised,epochs=15")
    assert found == ["`tiny-imagenet`"]
    assert shared == "`tiny-imagenet`, settings `objective=supervised, epochs=15`"


def write_run(folder, arch, img_size, patch_size):
    """A run folder whose ``config.json`` records ``arch`` at ``img_size`` / ``patch_size``."""
    config = RunConfig.from_dict(json.loads(CONFIG.read_text()))
    config = dataclasses.replace(config, model={**config.model, "arch": arch},
                                 view=dataclasses.replace(config.view, img_size=img_size, patch_size=patch_size))
    folder.mkdir()
    RunDirectory(folder).write_config(config)
    return folder.name


def test_the_comparison_table_recomputes_its_rows_from_the_final_profiles(tmp_path):
    stale = {"dataset": "tiny-imagenet@seed=1", "statistic": "late EED% (mean of L9-L11)", "ours": 9.6, "ours_text": "9.6 %",
             "paper_text": "85.0-92.5 %", "verdict": "below", "deviation": "-75.4 points below the range"}
    eed = [59.0, 59.0, 31.0, 30.5, 31.5, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 92.0]
    summary = {"preset": "laptop", "datasets": {
        "tiny-imagenet@seed=1": {"final_eed_percent": eed, "comparison": [stale],
                                 "run": write_run(tmp_path / "paper", "vit_small", 64, 8)},
        "tiny-imagenet@objective=supervised": {"final_eed_percent": eed, "comparison": [],
                                               "run": write_run(tmp_path / "supervised", "vit_small", 64, 8)}}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    table = write_comparison_table(tmp_path).read_text()
    assert "85.0-92.5" not in table and "objective=supervised" not in table  # the stale band; a run not compared
    assert "| tiny-imagenet@seed=1 | late EED% (highest of L9-L11) | 92.0 % | 91.5-93.5 %" in table
    assert "| tiny-imagenet@seed=1 | minimum EED% | 30.5 % at L3 |" in table


def test_a_run_unlike_the_papers_gets_its_values_as_a_reference_without_a_deviation(tmp_path):
    eed = [5.0] * 12
    summary = {"preset": "laptop", "datasets": {
        "tiny-imagenet": {"final_eed_percent": eed, "comparison": [{}], "run": write_run(tmp_path / "ti", "vit_tiny", 32, 8)}}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    table = write_comparison_table(tmp_path).read_text()
    assert "Not like for like: ViT-Ti (D = 192) at 32 px, patch 8 against the paper's ViT-S (D = 384) at 64 px" in table
    assert "deviation" not in table.split("Not like for like")[1].replace("no deviation", "") and "points below" not in table
    assert "| tiny-imagenet | minimum EED% | 5.0 % at L0 | 29.5-31.5 %" in table


def test_a_markdown_table_is_its_header_its_rule_and_one_line_a_row():
    assert markdown_table(["a", "b"], [(1, "x"), (2.5, "")]) == "| a | b |\n| --- | --- |\n| 1 | x |\n| 2.5 |  |"
