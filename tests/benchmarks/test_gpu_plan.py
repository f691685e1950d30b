"""The device plan (benchmarks/gpu_plan.py): what it carries, the checks it makes of itself,
and the one command run end to end with --dry-run on this CPU on small archives in the real
layout: the same steps and files as on a GPU."""
import dataclasses
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from archive_builders import real_subsets_root
from shared_data import REAL, needs

from ib_tutorial.presets import get_preset
from ib_tutorial.book.bundles import load_bundle
from ib_tutorial.book.run_profiles import VARIANTS, variant_label

REPO = Path(__file__).resolve().parents[2]
PLAN = [sys.executable, str(REPO / "benchmarks" / "gpu_plan.py")]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_plan  # noqa: E402

ORDER = ["tiny-imagenet", "knob-ends", "dtd"]


def plan(*args, **kwargs):
    return subprocess.run([*PLAN, *map(str, args)], capture_output=True, text=True, env=ENV, **kwargs)


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    root = real_subsets_root(folder / "root")
    packing = plan("pack", "--source", root, "--dest", folder / "packed", "--no-wheels", check=True)
    assert "MiB of the plan's 48 MiB" in packing.stdout and "(a device command receives 64)" in packing.stdout
    return folder


@pytest.fixture(scope="module")
def command(packed):
    """The one command, as `bash benchmarks/gpu_check.sh --dry-run` runs it."""
    out = packed / "out"
    done = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu_check.sh"), "--dry-run", "--packed", packed / "packed",
                           "--out", out, "--work", packed / "work"], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [record] = out.glob("plan-*.json")
    return out, json.loads(record.read_text()), done.stdout


def unpacked(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


@needs(REAL)
def test_the_checkout_and_the_packed_subsets_fit_what_the_plan_carries(tmp_path):
    """48 MiB: the checkout (tracked and untracked-not-ignored files, results/ stored compact)
    and the two subsets, so that the data a later part needs still fits in the 64 a command receives."""
    packing = plan("pack", "--source", REAL, "--dest", tmp_path, "--no-wheels")
    carried = gpu_plan.folder_bytes(tmp_path) + gpu_plan.checkout_bytes()
    assert packing.returncode == 0 and carried <= gpu_plan.CARRY_LIMIT == 48 * 2**20, packing.stdout + packing.stderr
    assert f"carried with the checkout {carried / 2**20:.1f} MiB" in packing.stdout


def test_pack_keeps_the_subsets_whole_in_one_archive(packed):
    with tarfile.open(packed / "packed" / "real-data.tar.gz") as tar:
        names = tar.getnames()
    source = sorted(p.relative_to(packed / "root").as_posix() for p in (packed / "root").rglob("*.*")
                    if "tiny-imagenet-200" in p.parts or "images" in p.parts)
    assert source and set(source) <= set(names)
    assert not any(name.startswith("dtd/labels") for name in names)  # only what the plan trains on
    assert (packed / "packed" / "COMMIT").read_text().strip()


def test_the_plan_checks_its_budget_floors_and_order_before_it_spends_the_gpu():
    checked = gpu_plan.check_plan()
    assert checked["command_s"] == 480 <= 8 * 60  # one command; the lease's start, transfers and give-back beside it
    assert checked["train_share"] >= 0.70 and checked["training_s"] + sum(checked["kept_s"].values()) == 480
    assert checked["floors"] == {"steps": 4056, "warmup_steps": 800, "freeze_steps": 400}
    assert checked["parts"] == ORDER


def test_the_plans_schedule_keeps_the_floors(monkeypatch):
    from ib_tutorial.training.schedules import Phases

    # The 10,000 images of the Tiny ImageNet subset make 78 steps of 128 an epoch.
    assert gpu_plan.least_epochs(10_000) == 52  # 4,056 steps
    settings = gpu_plan.schedule(52, dry_run=False)
    # No warm-up cut to the deadline; views made on the GPU; k-NN 5 times; the last teacher saved.
    assert settings == {"epochs": 52, "augmentation": "batched", "knn_every": 10, "checkpoint_every": 52, "batch_size": 128}
    train = dataclasses.replace(get_preset("paper").train, **settings)
    assert Phases.of(train, 78) == Phases(warmup_steps=800, freeze_steps=400)
    gpu_plan.check_floors(3, 10_000)  # too few epochs fit: the plan trains the floor's 52
    # A schedule that cut the warm-up's floor (780 steps: 10 epochs of 78) is refused.
    monkeypatch.setattr(gpu_plan, "schedule", lambda epochs, dry_run: {"epochs": epochs, "batch_size": 128,
                                                                       "warmup_min_steps": 0})
    with pytest.raises(gpu_plan.StepFailed, match="floor"):
        gpu_plan.check_floors(52, 10_000)
    # And a budget whose first part trains under 70 % of the command is refused.
    monkeypatch.setattr(gpu_plan, "MEASURE_S", 60)
    with pytest.raises(AssertionError, match="training share"):
        gpu_plan.check_plan()


def test_a_later_part_runs_only_when_its_floor_fits_and_the_first_always_runs(tmp_path):
    (tmp_path / "packed").mkdir()
    plan_ = gpu_plan.Plan(tmp_path / "out", dry_run=False, budget_s=300, work=tmp_path / "work", packed=tmp_path / "packed")
    knob = gpu_plan.PARTS[1]  # 10,000 images drawn on the machine: nothing to unpack
    assert gpu_plan.size_part(plan_, knob, first=False, rate=2000.0) is None  # 4,000 steps of two runs do not fit
    assert "needed for 4000 steps" in plan_.record["parts"]["knob-ends"]["skipped"]
    assert gpu_plan.size_part(plan_, knob, first=True, rate=2000.0) == 52  # the first trains its floor regardless
    roomy = gpu_plan.Plan(tmp_path / "out", dry_run=False, budget_s=3600, work=tmp_path / "work", packed=tmp_path / "packed")
    assert 52 < gpu_plan.size_part(roomy, knob, first=False, rate=2000.0) <= gpu_plan.MOST_EPOCHS


@pytest.mark.slow  # every part end to end: minutes
def test_the_command_runs_the_parts_in_order_and_records_its_shares(command):
    out, record, stdout = command
    assert "plan: one command of 480 s" in stdout and "parts in order: tiny-imagenet, knob-ends, dtd" in stdout
    assert record["dry_run"] and "failed" not in record and record["plan"]["train_share"] >= 0.70
    assert list(record["parts"]) == ORDER and all(part["epochs"] == 2 for part in record["parts"].values())
    assert [step["name"].split(" (")[0] for step in record["steps"]] == ["part 1", "part 2", "part 3"]
    assert all(step["returncode"] == 0 for step in record["steps"])
    assert len(record["datasets"]) == 4 and record["datasets"][0].startswith("tiny-imagenet@")
    rates = record["rates"]
    assert rates["step_images_per_s"] > 0 and rates["augmentation_images_per_s"] > 0 and rates["step_mfu"] is None
    assert record["augmentation_vs_step"] == rates["augmentation_vs_step"] > 0
    assert record["mfu"] is None  # no peak is known for a CPU
    trained = sum(part["train_s"] for part in record["parts"].values())
    assert record["train_share"] == pytest.approx(trained / record["seconds"], abs=1e-3) and 0 < record["train_share"] < 1
    assert all(part["epoch_images_per_s"] > 0 for part in record["parts"].values())
    returned = sorted(path.name for path in out.iterdir())
    assert returned == [f"gpu-check-{n}-{name}.tar.gz" for n, name in enumerate(ORDER, start=1)] + [record_name(record)]
    assert len(returned) <= gpu_plan.RETURNED_FILES


def record_name(record):
    return f"plan-{record['packed_commit'][:7]}.json"


@pytest.mark.slow  # every part end to end: minutes
def test_each_archive_is_complete_on_its_own(command, tmp_path):
    out, record, _ = command
    for number, name in enumerate(ORDER, start=1):
        checkout = unpacked(out / f"gpu-check-{number}-{name}.tar.gz", tmp_path / name)
        bundle = load_bundle(checkout / "results" / "gpu-vits8-subsets")
        assert list(bundle.runs) == record["datasets"][:[1, 3, 4][number - 1]]  # the runs finished so far
        assert json.loads((checkout / "benchmarks/results/gpu" / record_name(record)).read_text())["parts"]
    for run in bundle.runs.values():  # the last: every run profiled at its initialisation and its end, every way
        assert [r.epoch for r in run.profiles] == [0, 2] and run.pruning
        assert set(run.variants) == {variant_label(tokens, center) for tokens, center in VARIANTS}
        assert run.config.train.augmentation == "batched"


def test_a_command_without_the_packed_data_names_the_command_that_packs_it(tmp_path):
    refused = plan("run", "--dry-run", "--packed", tmp_path, "--out", tmp_path / "out", "--work", tmp_path / "work")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "gpu_plan.py pack" in refused.stderr and not (tmp_path / "out").exists()
