"""The device plan (benchmarks/gpu_plan.py), packed from a data root in the real layout
and run end to end with --dry-run on this CPU: the same steps and files as on a GPU."""
import dataclasses
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from archive_builders import real_subsets_root

from ib_tutorial.presets import get_preset
from ib_tutorial.reproduction.bundles import load_bundle
from ib_tutorial.reproduction.run_profiles import VARIANTS, variant_label

REPO = Path(__file__).resolve().parents[2]
PLAN = [sys.executable, str(REPO / "benchmarks" / "gpu_plan.py")]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def plan(*args, **kwargs):
    return subprocess.run([*PLAN, *map(str, args)], capture_output=True, text=True, env=ENV, **kwargs)


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    root = real_subsets_root(folder / "root")
    packing = plan("pack", "--source", root, "--dest", folder / "packed", "--no-wheels", check=True)
    assert "MiB of the 64 MiB a device command receives" in packing.stdout
    return folder


@pytest.fixture(scope="module")
def parts(packed):
    """Both parts, one after the other on one work folder, as on the GPU machine."""
    out = packed / "out"
    for part in (1, 2):
        done = plan(part, "--dry-run", "--packed", packed / "packed", "--out", out, "--work", packed / "work")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def unpacked(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def test_pack_keeps_the_subsets_whole_in_one_archive(packed):
    with tarfile.open(packed / "packed" / "real-data.tar.gz") as tar:
        names = tar.getnames()
    source = sorted(p.relative_to(packed / "root").as_posix() for p in (packed / "root").rglob("*.*")
                    if "tiny-imagenet-200" in p.parts or "images" in p.parts)
    assert source and set(source) <= set(names)
    assert not any(name.startswith("dtd/labels") for name in names)  # only what the plan trains on
    assert (packed / "packed" / "COMMIT").read_text().strip()


@pytest.mark.slow
def test_each_part_logs_every_step_and_sizes_its_schedule_from_the_measured_rate(parts):
    for part, datasets in ((1, 1), (2, 2)):
        record = json.loads((parts / f"plan-{part}.json").read_text())
        assert record["dry_run"] and "failed" not in record
        assert record["steps"] and all(step["returncode"] == 0 for step in record["steps"])
        assert all(pilot["images_per_s"] > 0 for pilot in record["pilots"].values())
        assert set(record["epochs"].values()) == {2}  # the dry run's cap: seconds of training fit either way
        assert len(record["datasets"]) == datasets
        assert 0 < record["train_share"] < 1  # the share of the command's seconds its new run trained


@pytest.mark.slow  # both parts run end to end: minutes
def test_the_second_archive_is_the_bundle_of_both_runs_with_every_saved_epoch_profiled(parts, tmp_path):
    checkout = unpacked(parts / "gpu-check-2.tar.gz", tmp_path)
    bundle = load_bundle(checkout / "results" / "gpu-paper-subsets")
    assert sorted(name.split("@")[0] for name in bundle.runs) == ["dtd:folder=dtd", "tiny-imagenet"]
    for run in bundle.runs.values():
        assert [r.epoch for r in run.profiles] == [0, 1, 2]
        assert set(run.variants) == {variant_label(tokens, center) for tokens, center in VARIANTS}
        assert all([r.epoch for r in records] == [0, 1, 2] for records in run.variants.values()) and run.pruning
    assert (checkout / "benchmarks/results/gpu/plan-2.json").exists()
    assert (checkout / "benchmarks/results/gpu/bench_probe.json").exists()
    assert (checkout / "benchmarks/results/gpu/bench_step.json").exists()
    measured = json.loads((checkout / "benchmarks/results/gpu/bench_train_paper.json").read_text())
    assert measured["results"]  # the throughput comes last, in the time the runs leave


@pytest.mark.slow  # both parts run end to end: minutes
def test_the_first_archive_holds_its_run_alone(parts, tmp_path):
    checkout = unpacked(parts / "gpu-check-1.tar.gz", tmp_path)
    bundle = load_bundle(checkout / "results" / "gpu-paper-subsets")
    assert [name.split("@")[0] for name in bundle.runs] == ["tiny-imagenet"]
    assert not (checkout / "benchmarks/results/gpu/bench_train_paper.json").exists()  # part 2 measures it


def test_a_part_without_the_packed_data_names_the_command_that_packs_it(tmp_path):
    refused = plan(1, "--dry-run", "--packed", tmp_path, "--out", tmp_path / "out", "--work", tmp_path / "work")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "gpu_plan.py pack" in refused.stderr and not (tmp_path / "out").exists()


def test_the_plans_schedule_keeps_the_floors(monkeypatch):
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gpu_plan
    from ib_tutorial.training.schedules import Phases

    # The 10,000 images of the Tiny ImageNet subset make 78 steps of 128 an epoch.
    assert gpu_plan.least_epochs(10_000) == 52  # 4,056 steps
    settings = gpu_plan.schedule(52, dry_run=False)
    assert settings == {"epochs": 52, "batch_size": 128}  # no warm-up cut to the deadline
    train = dataclasses.replace(get_preset("paper").train, **settings)
    assert Phases.of(train, 78) == Phases(warmup_steps=800, freeze_steps=400)
    gpu_plan.check_floors(3, 10_000)  # too few epochs fit: the plan trains the floor's 52
    # A schedule that cut the warm-up's floor (780 steps: 10 epochs of 78) is refused.
    monkeypatch.setattr(gpu_plan, "schedule", lambda epochs, dry_run: {"epochs": epochs, "batch_size": 128,
                                                                       "warmup_min_steps": 0})
    with pytest.raises(gpu_plan.StepFailed, match="floor"):
        gpu_plan.check_floors(52, 10_000)
