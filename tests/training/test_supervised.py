"""The supervised control: the same backbone and loop as DINO, trained on the labels."""
import json
import math
import signal
import subprocess

import pytest
import torch
from training_runs import DATASET, TINY, child_env, run_command, same_metrics

from ib_tutorial.book.reproduce import reproduce
from ib_tutorial.training import loop
from ib_tutorial.training.run_config import RunSpec
from ib_tutorial.training.runs import RunDirectory

EPOCHS = 8


@pytest.fixture(scope="module")
def supervised_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("supervised") / "run"
    loop.train(DATASET, "ci", out=out, progress=False, objective="supervised", epochs=EPOCHS, warmup_epochs=1,
                   log_every=1, knn_every=EPOCHS, checkpoint_every=EPOCHS, **TINY)
    return RunDirectory(out)


def test_supervised_loss_falls_below_chance(supervised_run):
    records = supervised_run.read_metrics("train")
    per_epoch = [[r["loss"] for r in records if r["epoch"] == epoch] for epoch in range(EPOCHS)]
    first, last = (sum(losses) / len(losses) for losses in (per_epoch[0], per_epoch[-1]))
    chance = math.log(10)  # cross-entropy of a uniform guess over the world's 10 classes
    assert last < first - 0.3 and last < chance - 0.1, (first, last)


def test_supervised_run_records_its_own_metrics_and_saves_the_backbone(supervised_run):
    record = supervised_run.read_metrics("train")[-1]
    assert {"loss", "lr", "weight_decay", "train_accuracy", "images_per_s"} <= set(record)
    assert "teacher_entropy" not in record and 0 <= record["train_accuracy"] <= 1
    assert supervised_run.read_config().train.objective == "supervised"
    assert supervised_run.backbone_epochs() == [0, EPOCHS]
    assert [r["epoch"] for r in supervised_run.read_metrics("knn")] == [0, EPOCHS]
    checkpoint = torch.load(supervised_run.checkpoint_path, weights_only=True)
    assert "teacher" not in checkpoint and any(key.startswith("head.") for key in checkpoint["student"])


@pytest.mark.slow
def test_killed_supervised_run_resumes_exactly(tmp_path):
    settings = ["--epochs", "2", "--checkpoint-every", "1", "--knn-every", "1", "--objective", "supervised"]
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    subprocess.run(run_command(whole, *settings), env=child_env(), check=True, capture_output=True)
    steps_per_epoch = TINY["train_images"] // TINY["batch_size"]
    process = subprocess.run(run_command(broken, *settings, fault=True),
                             env=child_env(FAULT=f"step:{steps_per_epoch + 2}"), capture_output=True)
    assert process.returncode == -signal.SIGKILL, process.stderr[-2000:]
    subprocess.run(run_command(broken, *settings, "--resume"), env=child_env(), check=True, capture_output=True)
    same_metrics(RunDirectory(whole).read_metrics(), RunDirectory(broken).read_metrics(), rel=1e-5)


def test_unknown_objective_names_the_known_ones():
    with pytest.raises(ValueError, match="Unknown objective 'labels'; known: dino, supervised"):
        loop.train(DATASET, "ci", objective="labels")


def test_run_spec_splits_dataset_options_from_training_settings():
    spec = RunSpec.parse("synthetic-mix:texture_weight=0.5@objective=supervised,epochs=2")
    assert (spec.dataset, spec.options, spec.overrides) == (
        "synthetic-mix", {"texture_weight": 0.5}, {"objective": "supervised", "epochs": 2})
    assert (spec.dataset_spec, spec.folder, str(spec)) == (
        "synthetic-mix:texture_weight=0.5", "synthetic-mix_texture_weight=0.5@objective=supervised_epochs=2", spec.text)
    plain = RunSpec.parse("synthetic-objects")
    assert (plain.dataset, plain.options, plain.overrides) == ("synthetic-objects", {}, {})
    with pytest.raises(ValueError, match="Unknown training setting.*'learning_rate'"):
        RunSpec.parse("synthetic-objects@learning_rate=1")


def test_reproduce_trains_profiles_and_prunes_a_supervised_run_without_comparing_it(tmp_path):
    spec = "synthetic-objects@objective=supervised," + ",".join(f"{k}={v}" for k, v in TINY.items())
    out = reproduce("ci", datasets=[spec], out=tmp_path / "bundle", progress=False)
    entry = json.loads((out / "summary.json").read_text())["datasets"][spec]
    run = RunDirectory(out / entry["run"])
    assert run.read_config().train.objective == "supervised" and run.read_config().train.arch == "vit_tiny"
    assert entry["comparison"] == [] and entry["final_epoch"] == run.read_config().train.epochs
    assert list((run.path / "pruning").glob("*.json"))


def test_reproduce_without_all_measurements_writes_the_default_profiles_only(tmp_path):
    spec = "synthetic-objects@" + ",".join(f"{k}={v}" for k, v in TINY.items())
    out = reproduce("ci", datasets=[spec], out=tmp_path / "bundle", progress=False, all_measurements=False)
    run = out / json.loads((out / "summary.json").read_text())["datasets"][spec]["run"]
    assert sorted(p.name for p in (run / "profiles").iterdir()) == ["0.json", "3.json"]  # ci saves the first and last teachers
    assert not (run / "pruning").exists()
