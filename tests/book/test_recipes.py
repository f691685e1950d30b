"""Recipe rows read from run directories written by hand with known values."""
import dataclasses
import json
import math

import pytest

from ib_tutorial.presets import get_preset
from ib_tutorial.book.recipes import preset_recipe, read_recipe, read_recipes, recipe_settings
from ib_tutorial.files import stored_results
from ib_tutorial.training.run_config import RunConfig


def write_run(folder, lr, knn, entropy=4.0, out_dim=64):
    folder.mkdir(parents=True)
    config = RunConfig.resolve("dtd", get_preset("ci"), dict(lr=lr, out_dim=out_dim, log_every=5, threads=1, arch="vit_tiny"),
                               {"folder": "dtd"})
    config = dataclasses.replace(config, steps_per_epoch=4)  # as a run records it once its data is loaded
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    records = [{"kind": "knn", "epoch": e, "top1": top1, "top1_mean": top1 + 1, "wall_s": 60.0 * e} for e, top1 in knn]
    records += [{"kind": "train", "epoch": 0, "step": s, "teacher_entropy": entropy, "teacher_information": 0.5,
                 "images_per_s": float(s)} for s in range(1, 11)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return config


def test_a_recipe_lists_only_what_differs_from_the_reference(tmp_path):
    base_config = write_run(tmp_path / "base", lr=1e-3, knn=[(0, 20.0), (2, 25.0)])
    reference = recipe_settings(base_config.train, base_config.view)
    write_run(tmp_path / "faster", lr=4e-3, knn=[(0, 20.0), (1, 18.0), (2, 30.0)], entropy=2.0)
    base, faster = read_recipes(tmp_path, reference)
    assert base.changes == {} and faster.changes == {"lr": 4e-3} and faster.dataset == "dtd:folder=dtd"
    assert "log_every" not in reference and "threads" not in reference  # bookkeeping is not a recipe
    assert faster.epochs == [0, 1, 2] and faster.knn_cls == [20.0, 18.0, 30.0] and faster.knn_mean == [21.0, 19.0, 31.0]
    assert faster.gain == pytest.approx(10.0)
    assert faster.teacher_entropy == pytest.approx(2.0 / math.log(64))
    assert faster.wall_minutes == pytest.approx(2.0) and faster.images_per_s == 6.0
    # ci's warm-up and freeze: 1 epoch each, of 4 steps (64 images of 16), no floors.
    assert faster.phases.warmup_steps == faster.phases.freeze_steps == 4


def test_a_recipe_read_at_a_step_stops_there(tmp_path):
    config = write_run(tmp_path / "run", lr=1e-3, knn=[(0, 20.0), (1, 22.0), (2, 25.0)])
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    for record in records:  # the evaluations at steps 0, 4 and 8; steps 1-10 logged
        if record["kind"] == "knn":
            record["step"] = record["epoch"] * 4
    (tmp_path / "run" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    early = read_recipe(tmp_path / "run", recipe_settings(config.train, config.view), until_step=5)
    assert early.epochs == [0, 1] and early.knn_cls == [20.0, 22.0] and early.images_per_s == 3.0  # steps 1-5
    assert read_recipe(tmp_path / "run", {}, until_step=100).epochs == [0, 1, 2]


def test_a_run_without_evaluations_is_refused_by_name(tmp_path):
    write_run(tmp_path / "empty", lr=1e-3, knn=[])
    with pytest.raises(ValueError, match="empty has no k-NN evaluation"):
        read_recipe(tmp_path / "empty", {})


def test_the_laptop_preset_is_the_reference_of_its_own_runs(tmp_path):
    reference = preset_recipe(get_preset("laptop"), "tiny-imagenet")
    assert reference["arch"] == "vit_tiny" and reference["img_size"] == 32 and "knn_every" not in reference
    assert "warmup_epochs" not in reference and "freeze_min_steps" not in reference  # read as the phases' steps
    assert preset_recipe(get_preset("ci"), "tiny-imagenet")["batch_size"] == 16  # each preset's own settings


def test_the_committed_recipe_runs_read_back_against_the_laptop_tier():

    folder = stored_results("laptop-recipes")
    if not folder.exists():
        pytest.skip(f"no committed recipe runs at {folder}")
    recipes = read_recipes(folder, preset_recipe(get_preset("laptop"), "tiny-imagenet"))
    assert recipes and all(r.epochs[0] == 0 and len(r.knn_cls) == len(r.epochs) >= 2 for r in recipes)


def test_the_committed_real_runs_read_as_recipes_without_the_supervised_control():
    folder = stored_results("laptop-real")
    if not folder.exists():
        pytest.skip(f"no committed bundle at {folder}")
    names = [r.name for r in read_recipes(folder, preset_recipe(get_preset("laptop"), "tiny-imagenet"))]
    assert "tiny-imagenet" in names and not any("supervised" in name for name in names)
