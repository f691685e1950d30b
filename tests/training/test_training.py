"""The DINO training loop end to end on a synthetic world: learning, files, resume, DDP, NaN.

Runs use the ``ci`` preset; the resume, DDP and NaN tests shrink it further (16-pixel
crops, a few dozen images) so that each stays within seconds of CPU time.
"""
import json
import math
import shutil
import signal
import subprocess
import sys
import warnings

import pytest
import torch
from training_runs import DATASET, TINY, child_env, run_command, same_metrics

import ib_tutorial
from ib_tutorial.cli import build_parser
from ib_tutorial.presets import get_preset
from ib_tutorial.seeding import epoch_indices
from ib_tutorial.training import dino, loop
from ib_tutorial.training.run_config import RunConfig
from ib_tutorial.training.runs import RunDirectory


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ci") / "run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop.train(DATASET, "ci", out=out, progress=False)
    yield RunDirectory(out), [w for w in caught if issubclass(w.category, loop.CollapseWarning)]
    shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow
def test_ci_preset_loss_decreases_without_collapse(ci_run):
    run, collapse_warnings = ci_run
    records = run.read_metrics("train")
    third = len(records) // 3

    def early_and_late(key):
        values = [r[key] for r in records]
        return sum(values[:third]) / third, sum(values[-third:]) / third

    loss_early, loss_late = early_and_late("loss")
    kl_early, kl_late = early_and_late("kl")
    assert loss_late < loss_early - 0.3  # nats
    assert kl_late < kl_early  # the student learns to predict the teacher across views
    out_dim = get_preset("ci").train.out_dim
    assert all(dino.collapse_message(r["teacher_entropy"], r["teacher_information"], out_dim) is None for r in records)
    assert not collapse_warnings


def test_run_directory_holds_config_metrics_and_checkpoints(ci_run):
    run, _ = ci_run
    settings = get_preset("ci").train
    config = run.read_config()
    assert isinstance(config, RunConfig) and config == RunConfig.from_dict(json.loads(run.config_path.read_text()))
    assert config.train.lr == settings.lr and config.view == get_preset("ci").view(DATASET)
    assert config.steps_per_epoch * settings.epochs == run.read_metrics("train")[-1]["step"]
    knn = run.read_metrics("knn")
    assert [r["epoch"] for r in knn] == [0, *range(settings.knn_every, settings.epochs + 1, settings.knn_every)]
    assert all(1 <= r["n_eff"] <= 384 and 1 <= r["n_eff_mean"] <= 384 for r in knn)
    epochs = run.read_metrics("epoch")
    assert [r["epoch"] for r in epochs] == list(range(1, settings.epochs + 1))
    assert all(r["epoch_s"] > 0 for r in epochs) and knn[-1]["wall_s"] >= epochs[-1]["wall_s"]
    checkpoint = torch.load(run.checkpoint_path, weights_only=True)
    assert {"student", "teacher", "optimizer", "scaler", "loss", "schedules", "rng", "epoch", "step"} <= set(checkpoint)
    assert checkpoint["epoch"] == settings.epochs
    assert run.backbone_epochs()[0] == 0 and run.backbone_epochs()[-1] == settings.epochs
    assert not any(p.name.endswith(".tmp") for p in run.path.rglob("*"))
    trained, initial = run.load_backbone(), run.load_backbone(0)
    assert not torch.equal(trained.blocks[0].attn.qkv.weight, initial.blocks[0].attn.qkv.weight)
    # Every tensor is the saved one, none left unloaded (built on the meta device, then assigned).
    saved = torch.load(run.backbone_path(settings.epochs), weights_only=True)
    assert all(torch.equal(value, saved[name]) for name, value in trained.state_dict().items())
    assert not any(t.is_meta for t in [*trained.parameters(), *trained.buffers()])
    assert trained(torch.zeros(1, 3, config.view.img_size, config.view.img_size)).isfinite().all()


def test_existing_runs_are_not_overwritten_or_resumed_with_other_settings(ci_run):
    run, _ = ci_run
    with pytest.raises(FileExistsError, match="--resume"):
        loop.train(DATASET, "ci", out=run.path, progress=False)
    with pytest.raises(ValueError, match="train.lr"):
        loop.train(DATASET, "ci", out=run.path, resume=True, progress=False, lr=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("augmentation", ["loader", "batched"])
def test_resumed_run_equals_uninterrupted_run(tmp_path, augmentation):
    """Kill a real training process after its first checkpoint, resume it, compare with a
    run never stopped; with the views made in the loader and on the training device."""
    settings = ["--epochs", "3", "--checkpoint-every", "1", "--knn-every", "1", "--augmentation", augmentation]
    whole = tmp_path / "whole"
    subprocess.run(run_command(whole, *settings), env=child_env(), check=True, capture_output=True)

    broken = tmp_path / "broken"
    steps_per_epoch = TINY["train_images"] // TINY["batch_size"]  # killed one step after the first checkpoint
    process = subprocess.run(run_command(broken, *settings, fault=True),
                             env=child_env(FAULT=f"step:{steps_per_epoch + 1}"), capture_output=True)
    assert process.returncode == -signal.SIGKILL, process.stderr[-2000:]
    assert torch.load(broken / "checkpoint.pt", weights_only=True)["epoch"] == 1

    subprocess.run(run_command(broken, *settings, "--resume"), env=child_env(), check=True, capture_output=True)
    same_metrics(RunDirectory(whole).read_metrics(), RunDirectory(broken).read_metrics(), rel=1e-5)


# Two processes share a global batch of 8: 4 images each, 6 steps an epoch.
DDP_SETTINGS = ["--epochs", "2", "--drop-path-rate", "0", "--checkpoint-every", "1"]  # a checkpoint to restart from


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """An uninterrupted run of two gloo processes under torchrun."""
    out = tmp_path_factory.mktemp("ddp") / "double"
    result = subprocess.run(run_command(out, *DDP_SETTINGS, nproc=2), env=child_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return RunDirectory(out)


@pytest.mark.slow
def test_two_gloo_processes_follow_the_single_process_trajectory(two_processes, tmp_path):
    """Same global batch of 8: one process with 8 images per step against two with 4 each.
    Stochastic depth is off (its random masks cannot be split the same way); the tolerance,
    1e-4 relative, covers the different order of floating-point sums."""
    single = tmp_path / "single"
    subprocess.run(run_command(single, *DDP_SETTINGS), env=child_env(), check=True, capture_output=True)
    assert two_processes.read_config().world_size == 2
    one, two = RunDirectory(single).read_metrics(), two_processes.read_metrics()
    assert len(one) == len(two) > 4
    same_metrics(one, two, rel=1e-4)


@pytest.mark.slow
def test_a_worker_killed_under_torchrun_restarts_resumes_to_the_uninterrupted_result(two_processes, tmp_path):
    """torchrun --max-restarts=1: rank 1 is killed after its second step of epoch 2; torchrun
    restarts both processes, which continue from the checkpoint of epoch 1 (no --resume
    needed) and end where the uninterrupted job ends."""
    steps_per_epoch = TINY["train_images"] // TINY["batch_size"]
    out = tmp_path / "restarted"
    result = subprocess.run(run_command(out, *DDP_SETTINGS, nproc=2, fault=True, max_restarts=1),
                            env=child_env(FAULT=f"step:{steps_per_epoch + 2}", FAULT_RANK="1"),
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resuming" in result.stdout + result.stderr and "at epoch 1" in result.stdout + result.stderr
    assert torch.load(out / "checkpoint.pt", weights_only=True)["epoch"] == 2
    same_metrics(two_processes.read_metrics(), RunDirectory(out).read_metrics(), rel=1e-5)


def test_nan_loss_stops_the_run_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    real_forward = dino.DINOLoss.forward
    calls = {"count": 0}
    steps_per_epoch = TINY["train_images"] // TINY["batch_size"]

    def poisoned(self, *args, **kwargs):
        calls["count"] += 1
        result = real_forward(self, *args, **kwargs)
        if calls["count"] == steps_per_epoch + 2:  # second step of the second epoch
            result.loss = result.loss * float("nan")
        return result

    monkeypatch.setattr(dino.DINOLoss, "forward", poisoned)
    out = tmp_path / "run"
    with pytest.raises(loop.NonFiniteLossError, match=r"nan at epoch 1, step 8.*epoch 1, step 6"):
        loop.train(DATASET, "ci", out=out, progress=False, epochs=3, checkpoint_every=1, **TINY)
    run = RunDirectory(out)
    checkpoint = torch.load(run.checkpoint_path, weights_only=True)
    assert (checkpoint["epoch"], checkpoint["step"]) == (1, steps_per_epoch)
    assert all(math.isfinite(r["loss"]) for r in run.read_metrics("train"))
    assert not any(p.name.endswith(".tmp") for p in run.path.rglob("*"))


def test_collapse_message_names_both_limits():
    log_k = math.log(100)
    assert "uniform" in dino.collapse_message(0.99 * log_k, 0.5 * log_k, 100)
    assert "one-hot" in dino.collapse_message(0.01 * log_k, 0.5 * log_k, 100)
    assert "nearly the same distribution" in dino.collapse_message(0.9 * log_k, 0.01 * log_k, 100)
    assert dino.collapse_message(0.5 * log_k, 0.3 * log_k, 100) is None


def test_command_line_overrides_parse_to_settings():
    args = build_parser().parse_args([
        "train", "--dataset", DATASET, "--lr", "1e-3", "--global-crop-scale", "0.3,1", "--train-images", "none",
        "--norm-last-layer", "false", "--dataset-option", "texture_weight=0.25",
    ])
    assert (args.lr, args.global_crop_scale, args.train_images, args.norm_last_layer) == (1e-3, (0.3, 1.0), None, False)
    assert args.dataset_option == [("texture_weight", 0.25)] and not hasattr(args, "epochs")  # unset: the preset's


def test_unknown_override_names_the_known_ones():
    with pytest.raises(ValueError, match="Unknown training setting.*learning_rate.*Known: .*lr"):
        loop.train(DATASET, "ci", learning_rate=1.0)


def test_every_submodule_imports_and_the_public_functions_still_work():
    assert ib_tutorial.train is loop.train
    # Importing every submodule must not hide the function behind a module of its name.
    import importlib
    import pkgutil

    for module in pkgutil.walk_packages(ib_tutorial.__path__, "ib_tutorial."):
        if module.name != "ib_tutorial.__main__":  # running it runs the command line
            importlib.import_module(module.name)
    assert callable(ib_tutorial.train) and ib_tutorial.train is loop.train
    features = torch.randn(64, 8, dtype=torch.float64)
    assert 1 < ib_tutorial.effective_encoding_dimension(features) <= 8
    assert ib_tutorial.get_preset("ci").name == "ci"
    with pytest.raises(ValueError, match="Unknown training setting"):
        ib_tutorial.train(DATASET, "ci", not_a_setting=1)
    probe = "import sys, ib_tutorial; print('ib_tutorial.training.loop' in sys.modules)"
    fresh = subprocess.run([sys.executable, "-c", probe], env=child_env(), capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "False"


def test_an_epoch_is_a_subset_of_a_large_split_and_repeats_a_small_one():
    assert epoch_indices(10, None, seed=0) == list(range(10))
    subset = epoch_indices(10, 4, seed=0)
    assert len(set(subset)) == 4 and subset == epoch_indices(10, 4, seed=0)
    repeated = epoch_indices(4, 10, seed=0)
    assert len(repeated) == 10 and repeated[:8] == [0, 1, 2, 3] * 2 and len(set(repeated[8:])) == 2
