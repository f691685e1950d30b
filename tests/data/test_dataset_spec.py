"""Dataset specs: NAME[:KEY=VALUE,...] on the command line."""
import pytest

from ib_tutorial.cli import build_parser
from ib_tutorial.data.spec import MAX_FOLDER_NAME, parse_option, parse_spec, spec_folder
from ib_tutorial.training.run_config import RunSpec


def test_values_are_python_literals_or_text():
    assert parse_option("texture_weight=0.25") == ("texture_weight", 0.25)
    assert parse_option("size_policy=keep") == ("size_policy", "keep")
    assert parse_option("download=True") == ("download", True)


@pytest.mark.parametrize("text", ["texture_weight", "=0.5"])
def test_option_without_key_or_value_is_refused(text):
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        parse_option(text)


def test_spec_splits_name_and_options():
    assert parse_spec("synthetic-objects") == ("synthetic-objects", {})
    assert parse_spec("synthetic-mix:texture_weight=0.5,num_classes=20") == (
        "synthetic-mix", {"texture_weight": 0.5, "num_classes": 20})


def test_pairs_keep_their_comma():
    spec = RunSpec.parse("synthetic-mix:texture_weight=0,object_scale=1.6@global_crop_scale=(0.9,1.0),lr=0.0005")
    assert spec.options == {"texture_weight": 0, "object_scale": 1.6}
    assert spec.overrides == {"global_crop_scale": (0.9, 1.0), "lr": 0.0005}
    assert spec.folder == "synthetic-mix_texture_weight=0_object_scale=1.6@global_crop_scale=(0.9_1.0)_lr=0.0005"


def test_unknown_dataset_or_option_names_the_known_ones():
    with pytest.raises(ValueError, match="Unknown dataset 'cifar10'.*cifar100"):
        parse_spec("cifar10")
    with pytest.raises(ValueError, match="does not take option.*weight.*texture_weight"):
        parse_spec("synthetic-mix:weight=0.5")


def test_folder_names_are_portable():
    assert spec_folder("synthetic-mix:texture_weight=0.5,seed=1") == "synthetic-mix_texture_weight=0.5_seed=1"
    assert spec_folder("cifar100") == "cifar100"


def test_a_long_specs_folder_fits_a_file_name_and_stays_its_own(tmp_path):
    settings = "objective=dino,epochs=16,batch_size=32,out_dim=1024,momentum_teacher=0.996,local_crops_number=2," \
        "local_crop_size=24,local_crop_scale=(0.2,0.5),hue_jitter=0.5,knn_every=2,checkpoint_every=2,threads=1"
    specs = [f"synthetic-mix:texture_weight=1,object_scale=1.6,clutter=0@{settings},seed={seed}" for seed in (1, 2)]
    folders = [spec_folder(spec) for spec in specs]
    assert all(len(folder) == MAX_FOLDER_NAME for folder in folders) and folders[0] != folders[1]
    assert folders[0].startswith("synthetic-mix_texture_weight=1_object_scale=1.6_clutter=0@objective=dino")
    assert spec_folder(specs[0]) == folders[0]  # the same spec finds its folder again
    (tmp_path / folders[0]).mkdir()  # a name the file system takes


def test_reproduce_command_takes_specs_and_refuses_bad_ones(capsys):
    args = build_parser().parse_args(["reproduce", "--datasets", "synthetic-objects", "synthetic-mix:texture_weight=0.5"])
    assert [spec.text for spec in args.datasets] == ["synthetic-objects", "synthetic-mix:texture_weight=0.5"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["reproduce", "--datasets", "synthetic-mix:weight=0.5"])
    assert "does not take option" in capsys.readouterr().err
