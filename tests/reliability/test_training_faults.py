"""Faults injected into real training processes: kills at seeded points, stop signals,
broken checkpoints, two runs on one folder, a full disk. Every run is the tiny ``ci``
configuration of ``training_runs`` (3 epochs of 6 steps, a checkpoint and a k-NN
evaluation after each epoch)."""
import errno
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from training_runs import DATASET, TINY, child_env, run_command, same_metrics

from ib_tutorial import files
from ib_tutorial.files import DiskFullError
from ib_tutorial.training import dino, loop
from ib_tutorial.training.runs import CheckpointError, RunDirectory, RunLockedError
from ib_tutorial.training.loop import TrainingStopped

SETTINGS = ["--epochs", "3", "--checkpoint-every", "1", "--knn-every", "1"]
STEPS = 3 * TINY["train_images"] // TINY["batch_size"]  # 18 optimisation steps
# How many events of each kind an uninterrupted run has (training_runs.FAULT_DRIVER):
# 18 steps; 4 evaluations (epochs 0-3) of 2 feature extractions; 3 checkpoints, of which
# 2 replace an earlier one.
EVENTS = {"step": STEPS, "knn": 8, "write": 3, "rename": 2}


def seeded_faults(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct faults ``KIND:N``, drawn with a fixed seed, every kind at least once."""
    everything = [f"{kind}:{n}" for kind, total in EVENTS.items() for n in range(1, total + 1)]
    drawn = random.Random(seed).sample(everything, count)
    assert {fault.split(":")[0] for fault in drawn} == set(EVENTS)
    return drawn


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "run"
    subprocess.run(run_command(out, *SETTINGS), env=child_env(), check=True, capture_output=True)
    yield RunDirectory(out)
    shutil.rmtree(out, ignore_errors=True)


def kill_and_resume(fault: str, folder, reference: list[dict]) -> str:
    """Kill a run at ``fault``, resume it, and check it against the uninterrupted run's
    ``reference`` metrics; the run folder is removed afterwards (each holds checkpoints).
    Returns what went wrong, or "" when it resumed correctly."""
    out = folder / fault.replace(":", "-")
    try:
        killed = subprocess.run(run_command(out, *SETTINGS, fault=True), env=child_env(FAULT=fault), capture_output=True)
        if killed.returncode != -signal.SIGKILL:
            return f"not killed (exit {killed.returncode}): {killed.stderr.decode()[-1500:]}"
        resumed = subprocess.run(run_command(out, *SETTINGS, "--resume"), env=child_env(), capture_output=True)
        if resumed.returncode != 0:
            return f"resume failed: {resumed.stderr.decode()[-1500:]}"
        run = RunDirectory(out)
        records = run.read_metrics()
        same_metrics(reference, records, rel=1e-5)
        steps = [r["step"] for r in records if r["kind"] == "train"]
        if steps != list(range(1, STEPS + 1)):
            return f"steps logged {steps}"
        leftovers = [p for p in run.path.rglob("*") if p.name.endswith(".tmp") or p.name == ".checkpoint-next.pt"]
        if leftovers:
            return f"unfinished files left: {leftovers}"
        for path in [run.checkpoint_path, run.previous_checkpoint_path, *run.backbones.glob("*.pt")]:
            torch.load(path, weights_only=True)  # every file under its final name is whole
        json.loads(run.config_path.read_text())
        return ""
    except AssertionError as error:
        return f"metrics differ: {error}"
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.slow
def test_twenty_kills_at_seeded_points_all_resume_to_the_uninterrupted_result(uninterrupted, tmp_path):
    """SIGKILL mid-epoch, mid-evaluation, mid-checkpoint-write and between a checkpoint's
    renames; each run is resumed once and must end exactly where the uninterrupted one did,
    with no step logged twice or lost and no file half-written under its final name."""
    faults = seeded_faults(20)
    reference = uninterrupted.read_metrics()
    with ThreadPoolExecutor(max_workers=2) as pool:  # two child processes at a time, one thread each
        problems = dict(zip(faults, pool.map(lambda fault: kill_and_resume(fault, tmp_path, reference), faults)))
    assert not {fault: problem for fault, problem in problems.items() if problem}
    assert sum(not problem for problem in problems.values()) == 20


@pytest.mark.slow
def test_sigterm_stops_mid_epoch_with_a_checkpoint_and_the_command_that_resumes(uninterrupted, tmp_path):
    out = tmp_path / "run"
    stopped = subprocess.run(run_command(out, *SETTINGS, fault=True), env=child_env(FAULT="term:8"),
                             capture_output=True, text=True)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-2000:]
    assert "SIGTERM received" in stopped.stderr and "Traceback" not in stopped.stderr
    checkpoint = torch.load(RunDirectory(out).checkpoint_path, weights_only=True)
    assert (checkpoint["epoch"], checkpoint["batch"], checkpoint["step"]) == (1, 2, 8)  # mid-epoch: 2 of 6 batches
    resume_as_printed(stopped.stderr, out, uninterrupted.read_metrics())


@pytest.mark.slow
def test_sigterm_to_the_process_group_spares_the_loader_workers_and_the_run_resumes(uninterrupted, tmp_path):
    """``timeout``, Slurm and Kubernetes signal the whole group: the DataLoader workers get
    SIGTERM too, and must leave the stop to the main process."""
    out = tmp_path / "run"
    run = subprocess.Popen(run_command(out, *SETTINGS, "--num-workers", "2"), env=child_env(), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_until_stepping(RunDirectory(out), run)
        os.killpg(run.pid, signal.SIGTERM)  # the run leads its own group: group id = its pid
        _, stderr = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "killed by signal" not in stderr and "Traceback" not in stderr, stderr[-2000:]
    assert "SIGTERM received" in stderr
    assert torch.load(RunDirectory(out).checkpoint_path, weights_only=True)["step"] >= 1
    resume_as_printed(stderr, out, uninterrupted.read_metrics())


def wait_until_stepping(run: RunDirectory, process: subprocess.Popen, timeout: float = 120) -> None:
    """Return once ``process`` has logged its first optimisation step (its loader's workers
    are then running), failing if it ends or takes longer than ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not run.read_metrics("train"):
        assert process.poll() is None, f"the run ended before its first step: {process.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, f"no step logged within {timeout} s"
        time.sleep(0.1)


def resume_as_printed(stderr: str, out, reference: list[dict]) -> None:
    """Run the command a stopped run printed last and check that the run then ends as the
    uninterrupted one (``reference``, its metrics) did."""
    command = shlex.split(stderr.strip().splitlines()[-1])
    assert command[:2] == ["ib-tutorial", "train"] and command[-1] == "--resume"
    resumed = subprocess.run([sys.executable, "-m", "ib_tutorial", *command[1:], "--no-progress"], env=child_env(),
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    same_metrics(reference, RunDirectory(out).read_metrics(), rel=1e-5)


def test_ctrl_c_in_a_notebook_stops_with_a_checkpoint_and_says_how_to_resume(tmp_path, monkeypatch):
    update = dino.DINOTraining.update

    def interrupted_at_step_3(self, loss, epoch, step):
        update(self, loss, epoch, step)
        if step == 2:  # the third step (steps count from 0 here)
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(dino.DINOTraining, "update", interrupted_at_step_3)
    # A notebook's kernel handles SIGINT with Python's default handler; a test run started in
    # the background may begin with SIGINT ignored instead.
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(TrainingStopped, match=r"SIGINT received(.|\n)*--resume") as stopped:
            loop.train(DATASET, "ci", out=tmp_path / "run", progress=False, epochs=2, **TINY)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the notebook's own handler is back
    finally:
        signal.signal(signal.SIGINT, outer)
    assert stopped.value.signal_number == signal.SIGINT
    assert torch.load(RunDirectory(tmp_path / "run").checkpoint_path, weights_only=True)["step"] == 3


@pytest.fixture
def two_checkpoints(tmp_path):
    """A finished 2-epoch run: its latest checkpoint is epoch 2, the previous one epoch 1."""
    out = tmp_path / "run"
    loop.train(DATASET, "ci", out=out, progress=False, epochs=2, checkpoint_every=1, **TINY)
    return RunDirectory(out)


@pytest.mark.parametrize("damage", ["truncated", "empty", "code"])
def test_a_broken_checkpoint_names_itself_and_the_previous_good_one(two_checkpoints, damage):
    run = two_checkpoints
    latest = run.checkpoint_path
    if damage == "truncated":
        latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    elif damage == "empty":
        latest.write_bytes(b"")
    else:  # a pickle that would run code on loading: weights_only refuses it
        torch.save({"epoch": 2, "payload": NotATensor()}, latest)
    with pytest.raises(CheckpointError, match=r"checkpoint\.pt cannot be read.*checkpoint-previous\.pt \(epoch 1\)"):
        loop.train(DATASET, "ci", out=run.path, resume=True, progress=False, epochs=2, checkpoint_every=1, **TINY)
    latest.rename(latest.with_name("checkpoint.pt.broken"))  # what the message says to do
    loop.train(DATASET, "ci", out=run.path, resume=True, progress=False, epochs=2, checkpoint_every=1, **TINY)
    assert torch.load(run.checkpoint_path, weights_only=True)["epoch"] == 2


class NotATensor:
    pass


def test_a_second_run_into_the_same_folder_is_refused(tmp_path):
    run = RunDirectory(tmp_path / "run")
    with run.lock():
        with pytest.raises(RunLockedError, match=r"in use by another training process \(pid \d+"):
            loop.train(DATASET, "ci", out=run.path, progress=False, **TINY)
    assert not run.exists()  # the refused run wrote nothing


def test_a_killed_run_leaves_no_lock_behind(tmp_path):
    run = RunDirectory(tmp_path / "run")
    holder = "import os, signal, sys\nfrom ib_tutorial.training.runs import RunDirectory\n" \
             "with RunDirectory(sys.argv[1]).lock():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    killed = subprocess.run([sys.executable, "-c", holder, str(run.path)], env=child_env())
    assert killed.returncode == -signal.SIGKILL and run.lock_path.exists()
    with run.lock():  # the OS released it with the process
        pass


def full_disk_after(monkeypatch, writes: int) -> None:
    """Every atomic write after the first ``writes`` fails as a full disk does (at fsync)."""
    fsync, count = files.os.fsync, {"n": 0}

    def fsync_or_full(fd):
        count["n"] += 1
        if count["n"] > writes:
            raise OSError(errno.ENOSPC, "No space left on device")
        fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync_or_full)


def test_a_full_disk_during_a_checkpoint_keeps_the_previous_one(tmp_path, monkeypatch):
    run = RunDirectory(tmp_path / "run")
    loop.train(DATASET, "ci", out=run.path, progress=False, epochs=1, **TINY)
    before = run.checkpoint_path.read_bytes()
    full_disk_after(monkeypatch, 0)
    state = torch.load(run.checkpoint_path, weights_only=True)
    with pytest.raises(DiskFullError, match=r"to write the checkpoint .*checkpoint\.pt; the checkpoints on disk are unchanged"):
        run.save_checkpoint({**state, "epoch": 9})
    assert run.checkpoint_path.read_bytes() == before
    assert not list(run.path.glob(".*"))  # no temporary or staged file left


def test_a_full_disk_during_a_profile_or_an_export_leaves_the_files_as_they_were(tmp_path, monkeypatch):
    from ib_tutorial.files import stored_results
    from ib_tutorial.book.reproduce import export_bundle

    bundle = stored_results("laptop-real")
    if not bundle.exists():
        pytest.skip(f"no committed bundle at {bundle}")
    dest = tmp_path / "exported"
    export_bundle(bundle, dest)
    before = {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    with monkeypatch.context() as patched:
        patched.setattr("shutil.copy2", full_copy)  # the disk fills up part-way through the copy
        with pytest.raises(DiskFullError, match="No space left"):
            export_bundle(bundle, dest)
    assert {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exported"]  # no half-made bundle beside it
    profile = next(dest.glob("*/profiles/0.json"))
    full_disk_after(monkeypatch, 0)
    with pytest.raises(DiskFullError, match="0.json"):
        files.write_json_atomic(profile, {"replaced": True})
    assert profile.read_bytes() == before[profile.relative_to(dest)]


def full_copy(source, target, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", str(target))
