"""A bundle's runs labelled by what sets each apart, what they share said once."""
from ib_tutorial.report.tables import run_labels
from ib_tutorial.training.run_spec import RunSpec


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
