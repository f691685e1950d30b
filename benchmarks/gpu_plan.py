"""The device plan: fifteen minutes of one GPU turned into a committed bundle of DINO
ViT-S (the `paper` recipe) on the Tiny ImageNet and DTD subsets.

A lent GPU machine has no network, receives at most 64 MiB (the checkout plus carried,
ignored folders), runs a command for at most 10 minutes and returns at most 8 files of
16 MiB. So the plan is three steps:

    python benchmarks/gpu_plan.py pack    # here: the two subsets and the missing wheels into .device/
    bash benchmarks/gpu_check.sh 1        # on the GPU machine (carry .device), at most 8 minutes
    bash benchmarks/gpu_check.sh 2        # right after, on the same machine, at most 8 minutes

1. CUDA check; a pilot epoch of the Tiny ImageNet subset at the `paper` recipe with
   batches of :data:`PLAN_BATCH` (bf16, a finite loss and a loadable checkpoint asserted;
   its images/s measured with the real loader); then DINO on the subset for as many epochs
   (at most the recipe's 100) as the measured rate fits before the deadline together with
   measuring every teacher the run saves (:func:`ib_tutorial.training.cost.epochs_within`,
   :data:`MEASURE_S` each), and never fewer than :data:`MIN_STEPS` steps; the warm-up and the
   freeze are the tier's, with their floors in steps (:mod:`ib_tutorial.training.phases`),
   never cut; profiled at every saved epoch with every variant, pruned, and exported.
2. The DTD subset the same way; the overhead of profiling, the step's share of the GPU's
   peak, the step one change at a time (bench_step.py) and the `paper` configuration's
   throughput per dataset (bench_train.py), as far as the time left allows; the bundle of
   both runs exported again.

Each command leaves under ``$OUT`` one archive, ``gpu-check-<n>.tar.gz``, whose members
are paths of the repository (``results/gpu-paper-subsets/...``,
``benchmarks/results/gpu/...``): ``tar xzf gpu-check-2.tar.gz`` in a checkout puts
everything where the book finds it. Each command's archive is complete on its own, so a
machine lost between the two costs only the second half. ``plan-<n>.json`` beside it
lists every step with its time and exit status, and the rates and epochs chosen.

``--dry-run`` runs the same steps on this CPU with the `ci` tier shrunk to seconds (the
tests run it on small archives in the real layout), so the plan cannot rot unexercised.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import math
import statistics
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ib_tutorial.data.spec import parse_spec  # noqa: E402
from ib_tutorial.presets import get_preset  # noqa: E402
from ib_tutorial.training.cost import epochs_within  # noqa: E402
from ib_tutorial.training.run_spec import RunSpec  # noqa: E402
from ib_tutorial.training.runs import RunDirectory  # noqa: E402

PACKED = REPO / ".device"  # ignored by git; named in the device tool's `carry`
DATA_ARCHIVE = "real-data.tar.gz"
SUBSETS = ("tiny-imagenet-200", "dtd/images")
# What the GPU machine's Python lacks (it has PyTorch, timm, torchvision, numpy, scipy,
# matplotlib, tqdm, pillow, attrs and packaging): wheels for its Python 3.12, named one by
# one (pip would otherwise fetch another PyTorch as a dependency). The first of each line
# is what the plan imports.
WHEELS = (("kornia==0.9.0", "kornia-rs==0.2.0"),)
DEVICE_PYTHON = "3.12"
CARRY_LIMIT = 64 * 2**20
BUNDLE = "gpu-paper-subsets"
RESULTS = Path("results") / BUNDLE
BENCHMARKS = Path("benchmarks/results/gpu")
PARTS = {1: "tiny-imagenet", 2: "dtd:folder=dtd"}
MOST_EPOCHS = 100  # the paper recipe's schedule
# The loader sets the pace on the subsets (about 1,000 images/s, against 2,764 for the step),
# so halving DINO's batch doubles the steps a lease trains for the same images; the
# learning rate follows the batch by DINO's linear rule.
PLAN_BATCH = 128
# Fewer steps than this do not learn even with the warm-up's floor (the DINO chapter's
# recipe table): a shorter run is not worth the lease.
MIN_STEPS = 4000
TINY_IMAGENET_SUBSET = 10_000  # training images of the subset part 1 trains on
COMMAND_S = 480  # each command's own limit (the device allows 600; a rerun must still fit)
ARCHIVE_S = 20  # kept for writing the archive
# Seconds to measure one saved teacher every way (bootstraps of 200 replicates included) and
# prune the last, on an H200: three teachers of ViT-S on 1,000 images took about 340 s, mostly
# the bootstraps' float64 eigendecompositions on the CPU (benchmarks/README.md).
MEASURE_S = 115
# The dry run: the `ci` tier shrunk to a few seconds of CPU per step.
DRY = dict(train_images=32, batch_size=8, img_size=16, patch_size=8, local_crop_size=8,
           knn_train_images=16, knn_eval_images=8, out_dim=64, hidden_dim=64, bottleneck_dim=16, arch="vit_tiny",
           checkpoint_every=1)  # every epoch saved and profiled, as the plan does on the GPU
DRY_MOST_EPOCHS = 2


# --- here: pack ----------------------------------------------------------------------


def pack(source: Path, dest: Path, wheels: bool) -> int:
    """Copy the two subsets, unchanged, into one gzipped tar (the JPEGs do not shrink, but
    tar's per-file headers and padding, 12 MB for 11,000 small files, do), and download the wheels the GPU machine lacks; print what the device tool will carry."""
    missing = [name for name in SUBSETS if not (source / name).is_dir()]
    if missing:
        sys.exit(f"{source} lacks {', '.join(missing)}: pass --source, a data root holding the Tiny ImageNet and "
                 "DTD subsets (see ../shared/data/README.md).")
    dest.mkdir(parents=True, exist_ok=True)
    partial = dest / (DATA_ARCHIVE + ".partial")
    with tarfile.open(partial, "w:gz") as archive:
        for name in SUBSETS:
            archive.add(source / name, arcname=name)
    partial.replace(dest / DATA_ARCHIVE)
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(dest / "wheels"),
                        "--only-binary=:all:", "--python-version", DEVICE_PYTHON,
                        "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "--no-deps",
                        *[wheel for group in WHEELS for wheel in group]],
                       check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    (dest / "COMMIT").write_text(commit + ("+dirty" if dirty else "") + "\n")
    carried = folder_bytes(dest) + checkout_bytes()
    print(f"packed {dest}: {folder_bytes(dest) / 2**20:.1f} MiB; with the checkout {carried / 2**20:.1f} MiB "
          f"of the {CARRY_LIMIT / 2**20:.0f} MiB a device command receives")
    if carried > CARRY_LIMIT:
        sys.exit("too much to carry: leave out the wheels (--no-wheels) or re-encode the subsets")
    return 0


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def checkout_bytes() -> int:
    """Bytes of the files the device tool copies: tracked, and untracked but not ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    return sum((REPO / name).stat().st_size for name in listed if name and (REPO / name).is_file())


# --- there: one command of the plan ---------------------------------------------------


class Plan:
    """The steps of one command, each a child process under a timeout, logged with its time
    and exit status in ``plan-<part>.json``; what the command keeps goes into ``staging``
    under the repository-relative paths the archive will hold."""

    def __init__(self, part: int, out: Path, dry_run: bool, budget_s: float, work: Path):
        self.part, self.out, self.dry_run, self.work = part, out, dry_run, work
        self.start = time.monotonic()
        self.deadline = self.start + budget_s - ARCHIVE_S
        self.staging = self.work / f"staging-{part}"
        shutil.rmtree(self.staging, ignore_errors=True)
        (self.staging / BENCHMARKS).mkdir(parents=True)
        self.record: dict = {"part": part, "dry_run": dry_run, "steps": [], "packed_commit": packed_commit()}
        self.env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                    "IB_TUTORIAL_DATA": str(self.work / "data")}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def step(self, name: str, argv: list[str], timeout: float, required: bool = True) -> bool:
        began = time.monotonic()
        timeout = max(1.0, min(timeout, self.left()))
        print(f"== {name} (at most {timeout:.0f} s)", flush=True)
        try:
            returncode = subprocess.run(argv, cwd=REPO, env=self.env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            returncode = "timeout"
        seconds = time.monotonic() - began
        self.record["steps"].append({"name": name, "argv": argv, "seconds": round(seconds, 1), "returncode": returncode})
        print(f"== {name}: {'ok' if returncode == 0 else f'failed ({returncode})'} after {seconds:.0f} s "
              f"({time.monotonic() - self.start:.0f} s into the command)", flush=True)
        if returncode != 0 and required:
            raise StepFailed(name)
        return returncode == 0

    def finish(self) -> Path:
        """Write plan-<part>.json and the archive of the staging folder under ``out``."""
        self.record["seconds"] = round(time.monotonic() - self.start, 1)
        # The share of this command's seconds spent training (the runs' epochs that it trained).
        trained = self.record.get("train_seconds", {}).get(PARTS[self.part])
        if trained is not None:
            self.record["train_share"] = round(trained / self.record["seconds"], 3)
        text = json.dumps(self.record, indent=1) + "\n"
        (self.staging / BENCHMARKS / f"plan-{self.part}.json").write_text(text)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"plan-{self.part}.json").write_text(text)
        archive = self.out / f"gpu-check-{self.part}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            for path in sorted(self.staging.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=path.relative_to(self.staging).as_posix())
        print(f"wrote {archive} ({archive.stat().st_size / 2**20:.1f} MiB) after {self.record['seconds']:.0f} s")
        return archive


class StepFailed(RuntimeError):
    pass


def packed_commit() -> str:
    path = PACKED / "COMMIT"
    return path.read_text().strip() if path.exists() else "unknown (no .device/COMMIT)"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ib_tutorial", *args]


def unpack(plan: Plan, packed: Path) -> None:
    """The subsets into the work folder's data root, once; the wheels, if an import fails."""
    data = plan.work / "data"
    if not (data / SUBSETS[0]).is_dir():
        data.mkdir(parents=True, exist_ok=True)
        with tarfile.open(packed / DATA_ARCHIVE) as archive:
            archive.extractall(data, filter="data")
    missing = [group for group in WHEELS if importlib.util.find_spec(group[0].split("==")[0]) is None]
    if missing:
        wheels = [wheel for group in missing for wheel in group]
        plan.step("install " + " ".join(wheels), [sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                                                  "--find-links", str(packed / "wheels"), *wheels], 60)


def dataset_spec(base: str, dry_run: bool, **settings) -> str:
    """``base`` (``NAME[:options]``) with training settings after ``@``."""
    if dry_run:
        settings = {**DRY, **settings}
    return base + ("@" + ",".join(f"{key}={value}" for key, value in settings.items()) if settings else "")


def pilot(plan: Plan, base: str) -> float:
    """One epoch of ``base`` at the plan's tier through the real loader: checked (bf16 on a
    GPU, a finite loss, a checkpoint that loads) and timed (median images/s of its steps)."""
    name, options = parse_spec(base)
    run = plan.work / f"pilot-{name}"
    shutil.rmtree(run, ignore_errors=True)
    tier = "ci" if plan.dry_run else "paper"
    settings = {**DRY, "epochs": 1} if plan.dry_run else {"epochs": 1, "batch_size": PLAN_BATCH, "log_every": 4}
    plan.step(f"pilot epoch of {base}", cli(
        "train", "--dataset", name, *[f"--dataset-option={key}={value}" for key, value in options.items()],
        "--preset", tier, "--out", str(run), "--no-progress",
        *[f"--{key.replace('_', '-')}={value}" for key, value in settings.items()]), 150)
    measured = check_pilot(run, on_gpu=not plan.dry_run)
    print(f"pilot ok: {measured}", flush=True)
    plan.record.setdefault("pilots", {})[base] = measured
    shutil.copy2(run / "metrics.jsonl", plan.staging / BENCHMARKS / f"pilot-{name}-metrics.jsonl")
    return measured["images_per_s"]


def check_pilot(folder: Path, on_gpu: bool) -> dict:
    """Assert what the pilot must show (bf16 autocast on a GPU, a finite loss, a backbone
    that loads) and return its rates. The schedule is sized by the epoch's own rate (its
    images over its wall time, the loader's start and waits included): the steps' median
    rate, also returned, counts only the GPU's work on batches the loader had ready, and on
    an H200 it was 2.4 times what whole epochs sustained."""
    run = RunDirectory(folder)
    config, steps, epochs = run.read_config(), run.read_metrics("train"), run.read_metrics("epoch")
    if on_gpu and config.precision != "bf16":
        raise StepFailed(f"pilot: expected bf16 autocast, got {config.precision}")
    if not steps or not all(math.isfinite(r["loss"]) for r in steps):
        raise StepFailed("pilot: no steps logged, or a non-finite loss")
    if not epochs:
        raise StepFailed("pilot: no epoch recorded")
    run.load_backbone(device="cuda" if on_gpu else "cpu")
    return {"images_per_s": config.train_images_used / epochs[-1]["epoch_s"],
            "step_images_per_s": statistics.median(r["images_per_s"] for r in steps[1:] or steps), "steps": len(steps),
            "precision": config.precision, "loss": [steps[0]["loss"], steps[-1]["loss"]],
            "images_per_epoch": config.train_images_used}


def train_and_export(plan: Plan, bases: list[str], rate: float, newest: str) -> None:
    """Size ``newest`` to the time left, then reproduce every base (finished runs are
    skipped) and export the bundle into the staging folder."""
    tier = "ci" if plan.dry_run else "paper"
    images = plan.record["pilots"][newest]["images_per_epoch"]
    most = DRY_MOST_EPOCHS if plan.dry_run else MOST_EPOCHS
    # The dry run's teachers measure in about a second each: its cap, not its clock, sets its epochs.
    measure_s, checkpoint_every = (0, DRY["checkpoint_every"]) if plan.dry_run else \
        (MEASURE_S, get_preset("paper").train.checkpoint_every)
    fit = epochs_within(plan.left(), rate, images, most, per_saved_s=measure_s, checkpoint_every=checkpoint_every)
    epochs = fit
    if newest == PARTS[1]:  # the Tiny ImageNet run trains at least MIN_STEPS; the dry run checks the GPU's schedule
        epochs = fit if plan.dry_run else max(fit, least_epochs(images))
        check_floors(epochs, TINY_IMAGENET_SUBSET if plan.dry_run else images)
    plan.record.setdefault("epochs", {})[newest] = epochs
    print(f"{newest}: {rate:.0f} images/s measured, {images:,} images an epoch: {fit} epochs fit, "
          f"{epochs} trained", flush=True)
    chosen = plan.record["epochs"]
    specs = [dataset_spec(base, plan.dry_run, **schedule(chosen[base], plan.dry_run)) for base in bases]
    plan.record["datasets"] = specs
    out = plan.work / "reproduce"
    # --export copies what is finished; the dry run's results are never committed, so the
    # check that they were measured by committed code is waived there.
    plan.step("reproduce " + " ".join(specs), cli(
        "reproduce", "--preset", tier, "--out", str(out), "--no-progress", "--datasets", *specs,
        "--export", str(plan.staging / RESULTS), *(["--allow-dirty"] if plan.dry_run else [])), plan.left())
    newest_run = out / RunSpec.of(specs[bases.index(newest)]).folder
    plan.record.setdefault("train_seconds", {})[newest] = training_seconds(newest_run)


def training_seconds(run: Path) -> float:
    """Seconds a run spent in its epochs (training steps and the loader, without k-NN,
    checkpoints or profiles): what the plan's ``train_share`` counts."""
    records = map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
    return round(sum(record["epoch_s"] for record in records if record["kind"] == "epoch"), 1)


def schedule(epochs: int, dry_run: bool) -> dict:
    """The settings of the plan's run of ``epochs``: the `paper` recipe with batches of
    :data:`PLAN_BATCH`, its warm-up and freeze untouched (their floors in steps hold)."""
    return {"epochs": epochs} if dry_run else {"epochs": epochs, "batch_size": PLAN_BATCH}


def least_epochs(images_per_epoch: int) -> int:
    """The fewest epochs that make :data:`MIN_STEPS` steps of :data:`PLAN_BATCH`."""
    return math.ceil(MIN_STEPS / (images_per_epoch // PLAN_BATCH))


def check_floors(epochs: int, images_per_epoch: int) -> None:
    """Assert that the plan's run of ``epochs`` (at the `paper` tier, whatever tier the
    command runs) trains at least :data:`MIN_STEPS` steps with the tier's warm-up and
    freeze floors, so that the dry run checks the schedule the GPU would train."""
    from ib_tutorial.presets import FREEZE_ANCHOR_STEPS, WARMUP_ANCHOR_STEPS
    from ib_tutorial.training.schedules import Phases

    epochs = max(epochs, least_epochs(images_per_epoch))
    train = dataclasses.replace(get_preset("paper").train, **schedule(epochs, dry_run=False))
    steps_per_epoch = images_per_epoch // PLAN_BATCH
    phases = Phases.of(train, steps_per_epoch)
    if epochs * steps_per_epoch < MIN_STEPS or phases.warmup_steps < WARMUP_ANCHOR_STEPS \
            or phases.freeze_steps < FREEZE_ANCHOR_STEPS:
        raise StepFailed(f"the plan's schedule breaks a floor: {epochs * steps_per_epoch} steps, {phases}")


def first(plan: Plan, packed: Path) -> None:
    unpack(plan, packed)
    if not plan.dry_run:
        if not torch.cuda.is_available():
            raise StepFailed("CUDA check: no CUDA GPU visible")
        plan.record["device"] = {"torch": torch.__version__, "name": torch.cuda.get_device_name(),
                                 "bf16": torch.cuda.is_bf16_supported()}
        print(f"CUDA check: {plan.record['device']}", flush=True)
    rate = pilot(plan, PARTS[1])
    train_and_export(plan, [PARTS[1]], rate, PARTS[1])


def second(plan: Plan, packed: Path) -> None:
    unpack(plan, packed)
    previous = json.loads((plan.work / "plan-1.json").read_text()) if (plan.work / "plan-1.json").exists() else {}
    plan.record["pilots"] = previous.get("pilots", {})
    plan.record["epochs"] = previous.get("epochs", {})
    rate = pilot(plan, PARTS[2])
    # The first part's run is kept only while its run folder is still on this machine.
    bases = [PARTS[1], PARTS[2]] if PARTS[1] in plan.record["epochs"] and (plan.work / "reproduce").is_dir() else [PARTS[2]]
    train_and_export(plan, bases, rate, PARTS[2])
    device = ["--device", "cpu", "--batch", "2", "--repeats", "1", "--img-size", "32", "--patch-size", "8"] \
        if plan.dry_run else ["--device", "cuda", "--batch", "64"]
    plan.step("profiling overhead", [sys.executable, "benchmarks/bench_probe.py", *device,
                                     "--out", str(plan.staging / BENCHMARKS / "bench_probe.json")], 45, required=False)
    if not plan.dry_run:
        plan.step("share of the GPU's peak", [sys.executable, "benchmarks/bench_utilisation.py", "--presets", "quick",
                                              "--out", str(plan.staging / BENCHMARKS / "bench_utilisation.json")],
                  45, required=False)
    plan.step("the step, one change at a time", [
        sys.executable, "benchmarks/bench_step.py",
        *(["--tiny", "--preset", "ci", "--dataset", "synthetic-objects"] if plan.dry_run else []),
        "--out", str(plan.staging / BENCHMARKS / "bench_step.json")], 90, required=False)
    # Last, since two H200s measured the same rates within 5 % (benchmarks/README.md): the
    # time is better spent on the runs.
    plan.step("throughput of the paper configuration", [
        sys.executable, "benchmarks/bench_train.py", "--preset", "paper", *(["--tiny"] if plan.dry_run else ["--repeats", "3"]),
        "--out", str(plan.staging / BENCHMARKS / "bench_train_paper.json")], 100, required=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="here: the subsets and wheels into .device/")
    packing.add_argument("--source", type=Path, default=REPO.parent / "shared/data/real")
    packing.add_argument("--dest", type=Path, default=PACKED)
    packing.add_argument("--no-wheels", action="store_true", help="do not download the wheels the device lacks")
    for number in PARTS:
        part = commands.add_parser(str(number), help=f"on the GPU machine: part {number} of the plan")
        part.add_argument("--dry-run", action="store_true", help="the same steps on this CPU, in seconds")
        part.add_argument("--packed", type=Path, default=PACKED)
        part.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", REPO / BENCHMARKS)))
        part.add_argument("--budget", type=float, default=COMMAND_S, help="seconds the command may take")
        part.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ib-tutorial-gpu-plan",
                          help="data, runs and staging, kept between the two commands")
    args = parser.parse_args(argv)
    if args.command == "pack":
        return pack(args.source, args.dest, wheels=not args.no_wheels)
    part = int(args.command)
    if not (args.packed / DATA_ARCHIVE).exists():
        sys.exit(f"{args.packed / DATA_ARCHIVE} is missing: run `python benchmarks/gpu_plan.py pack` first "
                 "and carry .device")
    plan = Plan(part, args.out, args.dry_run, args.budget, args.work)
    failed = None
    try:
        (first if part == 1 else second)(plan, args.packed)
    except StepFailed as error:
        failed = str(error)
        plan.record["failed"] = failed
    plan.finish()
    shutil.copy2(plan.out / f"plan-{part}.json", plan.work / f"plan-{part}.json")
    if failed:
        print(f"step failed: {failed}; what was done is in the archive", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
