"""Tiny training runs in child processes, and faults injected into them, for the tests of
the training loop and of its reliability."""
import os
import sys
from pathlib import Path

import pytest

DATASET = "synthetic-objects"
REPO = Path(__file__).resolve().parents[1]
# Deterministic metrics; throughput is not.
COMPARED = ("epoch", "step", "loss", "lr", "weight_decay", "teacher_temp", "momentum", "center_norm",
            "teacher_entropy", "student_entropy", "kl", "teacher_usage", "teacher_information",
            "train_accuracy", "top1", "top5", "top1_mean", "top5_mean")
# The ci preset shrunk to ViT-Tiny, 16-pixel crops and a few dozen images: seconds of CPU
# and tens of megabytes of checkpoints per run.
TINY = dict(
    arch="vit_tiny", train_images=48, batch_size=8, img_size=16, patch_size=8, local_crop_size=8,
    knn_train_images=24, knn_eval_images=12, out_dim=64, hidden_dim=64, bottleneck_dim=16,
)
TINY_ARGS = [arg for name, value in TINY.items() for arg in (f"--{name.replace('_', '-')}", str(value))]

# Runs the command line with one fault, FAULT="KIND:N", injected at the N-th event of its kind:
#   step    SIGKILL right after the N-th optimisation step (mid-epoch)
#   knn     SIGKILL as the N-th k-NN feature extraction starts (mid-evaluation)
#   write   SIGKILL half-way through writing the N-th checkpoint
#   rename  SIGKILL between the two renames of a checkpoint, the N-th time the latest one
#           becomes the previous one
#   term    SIGTERM right after the N-th optimisation step (a request to stop)
# Under torchrun, only the process of rank FAULT_RANK (default 0) is faulted, and only
# before torchrun restarts the job.
FAULT_DRIVER = """
import io, os, signal, sys
import torch
from ib_tutorial import cli, files
from ib_tutorial.measure import knn
from ib_tutorial.training import dino, runs, supervised_step

kind, when = os.environ["FAULT"].split(":")
if (os.environ.get("RANK", "0") != os.environ.get("FAULT_RANK", "0")
        or os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0"):
    kind = None
seen = {"count": 0}

def due():
    seen["count"] += 1
    return seen["count"] == int(when)

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if kind in ("step", "term"):
    def after(update):
        def after_update(self, *args):
            update(self, *args)
            if due():
                die() if kind == "step" else os.kill(os.getpid(), signal.SIGTERM)
        return after_update
    for objective in (dino.DINOTraining, supervised_step.SupervisedTraining):
        objective.update = after(objective.update)
elif kind == "knn":
    extract = knn.extract_features
    def extract_or_die(*args, **kwargs):
        if due():
            die()
        return extract(*args, **kwargs)
    knn.extract_features = extract_or_die
elif kind == "write":
    save = runs.RunDirectory.save_checkpoint
    def half_then_die(self, state):
        if not due():
            return save(self, state)
        data = io.BytesIO()
        torch.save(state, data)
        def write(file):
            file.write(data.getvalue()[: len(data.getvalue()) // 2])
            file.flush()
            die()
        files.atomic_write(self.path / ".checkpoint-next.pt", write)
    runs.RunDirectory.save_checkpoint = half_then_die
elif kind == "rename":
    replace = os.replace
    def replace_then_die(source, target):
        replace(source, target)
        if str(target).endswith("checkpoint-previous.pt") and due():
            die()
    os.replace = replace_then_die
cli.main(sys.argv[1:])
"""


def run_command(out: Path, *extra: str, nproc: int = 0, fault: bool = False, max_restarts: int = 0) -> list[str]:
    """The command line of a tiny run into ``out``; with ``fault``, under :data:`FAULT_DRIVER`;
    with ``nproc``, ``nproc`` gloo processes under ``torchrun --max-restarts=max_restarts``."""
    if nproc:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                    f"--max-restarts={max_restarts}"]
        if fault:  # torchrun runs a script file, not -c
            driver = out.parent / "fault_driver.py"
            driver.write_text(FAULT_DRIVER)
            launcher.append(str(driver))
        else:
            launcher += ["-m", "ib_tutorial"]
    elif fault:
        launcher = [sys.executable, "-c", FAULT_DRIVER]
    else:
        launcher = [sys.executable, "-m", "ib_tutorial"]
    return [*launcher, "train", "--dataset", DATASET, "--preset", "ci", "--out", str(out), "--no-progress",
            *TINY_ARGS, *extra]


def child_env(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **extra}


def same_metrics(first: list[dict], second: list[dict], rel: float) -> None:
    assert [r["kind"] for r in first] == [r["kind"] for r in second]
    for a, b in zip(first, second):
        for key in COMPARED:
            if key in a:
                assert b[key] == pytest.approx(a[key], rel=rel, abs=rel), (key, a, b)
