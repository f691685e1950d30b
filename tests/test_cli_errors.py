"""Every ``ib-tutorial`` command refuses a bad input with a message that names the argument
or file and the fix: a non-zero exit (argparse's refusals 2, the package's 1), no
traceback, and the folders it was given left as they were (no ``run.lock``, no empty
run folder). Every case fails before anything trains."""
from __future__ import annotations

import errno
import os
import pathlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from ib_tutorial import cli

MODEL = "vit_small_patch16_224.dino"
TRAIN = ("train", "--dataset", "synthetic-objects", "--preset", "ci", "--no-progress")
PROFILE_PRETRAINED = ("profile-pretrained", MODEL, "--dataset", "synthetic-objects", "--out", "{fresh}/converged")
NO_GPU = not torch.cuda.is_available()


@dataclass(frozen=True)
class Case:
    """One bad input: the arguments (``{name}`` stands for a path of :func:`make_places`),
    the exit code, and what the message must name."""

    id: str
    argv: tuple[str, ...]
    code: int
    names: tuple[str, ...]


CASES = [
    Case("presets, unknown flag", ("presets", "--bogus"), 2, ("--bogus",)),
    Case("train, dataset typo", ("train", "--dataset", "cifar10"), 2, ("--dataset", "Unknown dataset 'cifar10'")),
    Case("train, preset typo", (*TRAIN, "--preset", "lapto"), 2, ("--preset", "Known presets")),
    Case("train, negative epochs", (*TRAIN, "--epochs", "-1"), 1, ("--epochs -1", "at least 1")),
    Case("train, zero epochs", (*TRAIN, "--epochs", "0", "--warmup-epochs", "0"), 1, ("--epochs 0",)),
    Case("train, warm-up longer than training", (*TRAIN, "--preset", "quick", "--epochs", "1"), 1,
         ("--warmup-epochs 2", "preset quick's", "--epochs 1")),
    Case("train, zero batch", (*TRAIN, "--batch-size", "0"), 1, ("--batch-size 0",)),
    Case("train, epochs not a number", (*TRAIN, "--epochs", "many"), 2, ("--epochs",)),
    Case("train, patch size", (*TRAIN, "--patch-size", "5"), 1, ("--patch-size 5", "--img-size")),
    Case("train, hue beyond half a turn", (*TRAIN, "--hue-jitter", "0.5", "--color-strength", "2"), 1,
         ("--hue-jitter 0.5", "--color-strength 2", "[0, 0.5]")),
    Case("train, inversion not a probability", (*TRAIN, "--invert", "1.5"), 1, ("--invert 1.5", "[0, 1]")),
    Case("train, grayscale not a probability", (*TRAIN, "--grayscale", "-0.1"), 1, ("--grayscale -0.1", "[0, 1]")),
    Case("train, tone curve not a probability", (*TRAIN, "--tone-curve", "2"), 1, ("--tone-curve 2", "[0, 1]")),
    Case("train, unknown objective", (*TRAIN, "--objective", "labels"), 1, ("--objective <name>", "dino")),
    Case("train, precision on the CPU", (*TRAIN, "--precision", "bf16"), 1, ("--precision bf16", "--precision fp32")),
    Case("train, dataset option without a value", (*TRAIN, "--dataset-option", "texture_weight"), 2,
         ("--dataset-option",)),
    Case("train, unknown dataset option", (*TRAIN, "--dataset-option", "colour=1"), 1, ("colour",)),
    Case("train, --out under a file", (*TRAIN, "--out", "{file}/run"), 1, ("--out", "Not a directory")),
    Case("train, --out in a read-only folder", (*TRAIN, "--out", "{read_only}/run"), 1,
         ("--out", "Permission denied", "you may write to")),
    Case("train, --out holds a run", (*TRAIN, "--out", "{run}"), 1, ("--resume", "--out")),
    Case("train, --root without the data", ("train", "--dataset", "tiny-imagenet", "--preset", "ci", "--root",
                                             "{missing}", "--out", "{fresh}/run"), 1,
         ("--root <folder", "--download", "{missing}")),
    Case("datasets, --root missing", ("datasets", "--root", "{missing}"), 1, ("--root", "{missing}")),
    Case("subset, unknown subset", ("subset", "check", "tin2"), 2, ("tin2",)),
    Case("subset, nothing to check", ("subset", "check", "tin20", "--root", "{missing}"), 1, ("{missing}",)),
    Case("infoplane, preset typo", ("infoplane", "--preset", "lapto"), 2, ("--preset",)),
    Case("infoplane, unknown activation", ("infoplane", "--activation", "sigmoid"), 2, ("--activation",)),
    Case("profile, no such run", ("profile", "{missing}"), 1, ("{missing}", "ib-tutorial train")),
    Case("profile, a file for a run", ("profile", "{file}"), 1, ("{file}", "not a training run")),
    Case("profile, unknown tokens", ("profile", "{run}", "--tokens", "some"), 2, ("--tokens",)),
    Case("measure, no such run", ("measure", "{missing}"), 1, ("{missing}", "ib-tutorial train")),
    Case("measure, images not a number", ("measure", "{run}", "--images", "many"), 2, ("--images",)),
    Case("measure, no images", ("measure", "{run}", "--images", "0"), 1, ("--images 0", "at least 1")),
    Case("prune, no such run", ("prune", "{missing}"), 1, ("{missing}",)),
    Case("prune, unknown pool", ("prune", "{run}", "--pool", "max"), 2, ("--pool",)),
    Case("factors, no such run", ("factors", "{missing}"), 1, ("{missing}",)),
    Case("factors, epochs not numbers", ("factors", "{run}", "--epochs", "last"), 2, ("--epochs",)),
    Case("reproduce, dataset typo", ("reproduce", "--datasets", "cifar10"), 2, ("--datasets", "cifar10")),
    Case("reproduce, preset typo", ("reproduce", "--preset", "lapto"), 2, ("--preset",)),
    Case("reproduce, zero epochs in a spec", ("reproduce", "--preset", "ci", "--datasets", "synthetic-objects@epochs=0",
                                              "--out", "{fresh}/results"), 1, ("epochs 0",)),
    Case("reproduce, weights of no listed model", ("reproduce", "--weights", f"{MODEL}={{file}}"), 1,
         ("--weights", "--pretrained")),
    Case("reproduce, --root without the data", ("reproduce", "--preset", "ci", "--datasets", "tiny-imagenet",
                                                 "--root", "{missing}", "--out", "{fresh}/results"), 1,
         ("--root <folder", "--download")),
    Case("reproduce, --out in a read-only folder", ("reproduce", "--preset", "ci", "--datasets", "synthetic-objects",
                                                    "--out", "{read_only}/results"), 1, ("--out", "Permission denied")),
    Case("profile-pretrained, no weights file", (*PROFILE_PRETRAINED, "--weights", "{missing}.pt"), 1,
         ("{missing}.pt",)),
    Case("profile-pretrained, weights not a state dict", (*PROFILE_PRETRAINED, "--weights", "{file}"), 1,
         ("{file}", "not a state dict", "model.state_dict()")),
    Case("profile-pretrained, weights of another network", (*PROFILE_PRETRAINED, "--weights", "{other_network}"), 1,
         ("{other_network}", "Missing key(s)", "Unexpected key(s)", '"fc.weight"')),
    Case("profile-pretrained, weights for two models", ("profile-pretrained", MODEL, MODEL, "--dataset",
                                                        "synthetic-objects", "--weights", "{file}"), 1, ("--weights",)),
    Case("profile-pretrained, unknown model", ("profile-pretrained", "vit_smal", "--dataset", "synthetic-objects"), 1,
         ("vit_smal",)),
    Case("profile-pretrained, dataset typo", ("profile-pretrained", MODEL, "--dataset", "cifar10"), 2, ("--dataset",)),
]
if NO_GPU:
    CASES.append(Case("train, --device cuda without a GPU", (*TRAIN, "--device", "cuda"), 1,
                      ("--device cuda", "--device cpu", "--preset laptop")))


def make_places(folder: Path) -> dict[str, str]:
    """The paths the cases name: a file, a folder that does not exist, a read-only folder,
    a run folder (its config.json only), a fresh folder, and a state dict of a network that
    is not a ViT."""
    places = {name: folder / name for name in ("file", "missing", "read_only", "run", "fresh")}
    places["file"].write_text("not a checkpoint\n")
    places["read_only"].mkdir()
    places["read_only"].chmod(0o555)
    places["run"].mkdir()
    (places["run"] / "config.json").write_text("{}\n")
    places["fresh"].mkdir()
    places["other_network"] = folder / "resnet.pt"
    torch.save({"conv1.weight": torch.zeros(4, 3, 3, 3), "fc.weight": torch.zeros(2, 4)}, places["other_network"])
    return {name: str(path) for name, path in places.items()}


def read_only_even_for_root(monkeypatch, folder: str) -> None:
    """The superuser may write into a read-only folder: refuse it there as the system
    refuses everyone else, with PermissionError."""
    if os.geteuid() != 0:
        return
    make = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if not self.exists() and self.absolute().is_relative_to(folder):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return make(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)


def run_in_process(argv: list[str], capsys) -> tuple[int, str]:
    """``ib-tutorial ARGV`` in this process: its exit code and what it wrote to stderr
    (a SystemExit message, which the interpreter would print, included)."""
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    code, stderr = exited.value.code, capsys.readouterr().err
    return (1, stderr + code) if isinstance(code, str) else (code, stderr)


def tree(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture
def places(tmp_path, monkeypatch):
    monkeypatch.setenv("IB_TUTORIAL_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("IB_TUTORIAL_PRESET", raising=False)
    made = make_places(tmp_path)
    read_only_even_for_root(monkeypatch, made["read_only"])
    yield made
    Path(made["read_only"]).chmod(0o755)  # so that the folder can be removed


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_bad_input_is_refused_with_a_message_that_names_it(case, places, tmp_path, capsys):
    before = tree(tmp_path)
    code, message = run_in_process([word.format(**places) for word in case.argv], capsys)
    assert code == case.code, message
    assert "Traceback" not in message
    for name in case.names:
        assert name.format(**places) in message, message
    assert tree(tmp_path) == before  # nothing left behind, nothing removed


def test_there_is_a_bad_input_for_every_command():
    commands = set(cli.build_parser()._subparsers._group_actions[0].choices)
    assert {case.argv[0] for case in CASES} == commands and len(CASES) >= 25


@pytest.mark.skipif(not NO_GPU, reason="a GPU is visible")
def test_a_gpu_tier_on_a_machine_without_one_warns_and_names_the_cpu_tiers(places, capsys):
    code, message = run_in_process(["train", "--dataset", "tiny-imagenet", "--preset", "quick", "--root",
                                    places["missing"], "--out", f"{places['fresh']}/run"], capsys)
    assert code == 1 and "Traceback" not in message
    assert "warning: Preset 'quick' is made for a GPU" in message and "--preset laptop" in message


def test_a_libraries_value_error_keeps_its_traceback(places, monkeypatch):
    """Only the package's own ValueErrors are a user's mistake; one from deep in a library
    is a bug, shown with its traceback."""
    monkeypatch.setattr(cli, "profile_run", lambda *args, **kwargs: int("twelve"))
    with pytest.raises(ValueError, match="twelve"):
        cli.main(["profile", places["run"]])


def test_ctrl_c_outside_training_ends_with_a_message_and_exit_code_130(places, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "measure_run", interrupted)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["measure", places["run"]])
    assert stopped.value.code == 130
    assert "stopped (Ctrl-C)" in capsys.readouterr().err


@pytest.mark.slow
def test_the_installed_command_exits_with_the_message_alone(places, tmp_path):
    """The console script: exit codes 1 and 2, one message each, no traceback."""
    command = shutil.which("ib-tutorial", path=str(Path(sys.executable).parent))
    if command is None:
        pytest.skip("the ib-tutorial script is not installed beside this Python")
    env = {**os.environ, "IB_TUTORIAL_DATA": str(tmp_path / "data"), "OMP_NUM_THREADS": "1"}
    out = f"{places['fresh']}/run"
    for argv, code, named in (((*TRAIN, "--epochs", "-1", "--out", out), 1, "error: --epochs -1"),
                              (("infoplane", "--preset", "lapto"), 2, "argument --preset")):
        done = subprocess.run([command, *argv], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == code and named in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not Path(out).exists()


def test_an_optional_setting_can_be_set_to_none_and_an_unset_one_is_left_to_the_preset(monkeypatch):
    seen = {}
    monkeypatch.setattr(cli, "train", lambda *args, **kwargs: seen.update(kwargs) or Path("run"))
    cli.main(["train", "--dataset", "synthetic-objects", "--train-images", "none", "--epochs", "2"])
    assert seen["train_images"] is None and seen["epochs"] == 2
    assert "lr" not in seen and "threads" not in seen
