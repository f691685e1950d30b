"""The device plan: one command of at most eight minutes on one GPU turned into committed
bundles of DINO ViT-S/8 at 64 px, the Tiny ImageNet subset first.

A lent GPU machine has no network, receives at most 64 MiB (the checkout plus carried,
ignored folders), runs a command for at most 10 minutes and returns at most 8 files of
16 MiB; a lease has 15 minutes of device time in all, its start and give-back included.
So the plan is two steps:

    python benchmarks/gpu_plan.py pack    # here: the two subsets and the missing wheels into .device/
    bash benchmarks/gpu_check.sh          # on the GPU machine (carry .device): one command, at most COMMAND_S

The command checks its own plan first (:func:`check_plan`: the budget, the floors, the order
of the parts), then the GPU (bf16), then measures the step alone and the views made on the
GPU alone (:func:`measure_rates`: images/s, the step's MFU, ``augmentation_vs_step``), and
runs the parts of :data:`PARTS` in order, each as far as the time left allows:

1. ``tiny-imagenet``: DINO at the `paper` recipe (ViT-S/8, 64 px) on the Tiny ImageNet
   subset, batches of :data:`PLAN_BATCH`, views made on the GPU from images decoded once
   (``augmentation=batched``), the warm-up and freeze floors in steps untouched; as many
   epochs as the measured rate fits so that training takes at least :data:`TRAIN_SHARE` of
   the command, and never fewer than :data:`MIN_STEPS` steps; the initialisation and the
   last teacher profiled every way on the GPU (bootstraps included), the last pruned;
   exported. Always runs.
2. ``knob-ends``: the same recipe on the two ends of the texture knob (``synthetic-mix`` at
   ``texture_weight`` 0 and 1, the knob sweeps' world, generated on the machine at 64 px).
3. ``dtd``: the same recipe on the DTD subset.

A later part runs only if its :data:`MIN_STEPS` and its measuring fit in the time left.
Each part leaves under ``$OUT`` an archive, ``gpu-check-<n>-<part>.tar.gz``, complete on its
own: the bundle :data:`BUNDLE` of every run finished so far and the plan's record, under the
paths of the repository (``tar xzf`` the last one in a checkout puts everything where the
book finds it), so a command cut short still brings back the first. ``plan-<commit>.json``
beside them lists every step with its time and exit status, the rates, the epochs chosen,
``train_share`` (the command's seconds spent in training epochs), ``mfu`` and
``augmentation_vs_step``.

``--dry-run`` runs the same steps on this CPU with the `ci` tier shrunk to seconds (the
tests run it on small archives in the real layout), so the plan cannot rot unexercised.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_step import PEAKS  # noqa: E402
from bench_train import make_step  # noqa: E402
from common import interleaved_medians  # noqa: E402

from ib_tutorial.data import get_dataset  # noqa: E402
from ib_tutorial.data.spec import parse_spec  # noqa: E402
from ib_tutorial.presets import get_preset  # noqa: E402
from ib_tutorial.training.augment import BatchMultiCrop  # noqa: E402
from ib_tutorial.training.cost import epochs_within  # noqa: E402
from ib_tutorial.training.dino import DINOTraining  # noqa: E402
from ib_tutorial.training.run_config import RunConfig  # noqa: E402
from ib_tutorial.training.run_config import RunSpec  # noqa: E402
from ib_tutorial.training.runs import RunDirectory  # noqa: E402

PACKED = REPO / ".device"  # ignored by git; named in the device tool's `carry`
DATA_ARCHIVE = "real-data.tar.gz"
SUBSETS = ("tiny-imagenet-200", "dtd/images")
# What the GPU machine's Python lacks (it has PyTorch, timm, torchvision, numpy, scipy,
# matplotlib, tqdm, pillow, attrs and packaging): wheels for its Python 3.12, named one by
# one (pip would otherwise fetch another PyTorch as a dependency). The first of each line
# is what the plan imports (the views made on the GPU need kornia).
WHEELS = (("kornia==0.9.0", "kornia-rs==0.2.0"),)
DEVICE_PYTHON = "3.12"
DEVICE_CARRY = 64 * 2**20  # what a device command receives
# What the plan carries besides the wheels (7 MiB): the checkout and the packed data, so
# that the data a later part needs still fits beside what the checkout gains.
CARRY_LIMIT = 48 * 2**20
RETURNED_FILES, RETURNED_BYTES = 8, 16 * 2**20  # what comes back from $OUT: files, bytes each
BUNDLE = "gpu-vits8-subsets"
RESULTS = Path("results") / BUNDLE
BENCHMARKS = Path("benchmarks/results/gpu")


@dataclass(frozen=True)
class Part:
    """One part of the command: its runs (dataset specs before ``@``), trained and measured
    alike, and the view settings that give them the recipe's geometry."""

    name: str
    datasets: tuple[str, ...]
    view: tuple[tuple[str, int], ...] = ()


# The paper tier's Tiny ImageNet geometry: ViT-S/8 on 64 px global and 32 px local crops.
VIEW_64 = (("img_size", 64), ("patch_size", 8), ("local_crop_size", 32))
KNOB_WORLD = "object_scale=1.6,clutter=0,img_size=64"  # the knob sweeps' world, drawn at 64 px
PARTS = (
    Part("tiny-imagenet", ("tiny-imagenet",)),
    Part("knob-ends", (f"synthetic-mix:texture_weight=0,{KNOB_WORLD}", f"synthetic-mix:texture_weight=1,{KNOB_WORLD}"),
         VIEW_64),
    Part("dtd", ("dtd:folder=dtd",), VIEW_64),
)

MOST_EPOCHS = 100  # the paper recipe's schedule
# The loader sets the pace on the subsets (about 1,000 images/s, against 2,764 for the step),
# so halving DINO's batch doubles the steps a lease trains for the same images; the
# learning rate follows the batch by DINO's linear rule.
PLAN_BATCH = 128
# Fewer steps than this do not learn even with the warm-up's floor (the DINO chapter's
# recipe table): a shorter run is not worth the lease.
MIN_STEPS = 4000
TINY_IMAGENET_SUBSET = 10_000  # training images of the subset the first part trains on
KNN_POINTS = 5  # k-NN evaluations a run makes after its initialisation's (each reads every image)

# --- the budget of the command, in seconds ---
COMMAND_S = 480  # one command: with the machine's start, the transfers and the give-back, one lease of 15 minutes
COMMAND_LIMIT_S = 8 * 60
TRAIN_SHARE = 0.70  # the least share of the command the first part's training takes
SETUP_S = 15  # the CUDA check, the data unpacked, the imports
PROBE_S = 10  # the step and the views timed (measure_rates)
RUN_OVERHEAD_S = 40  # a run's own start (images decoded or drawn) and its k-NN evaluations
# Seconds to measure one saved teacher every way (bootstraps of 200 replicates on the GPU)
# and prune the last: an assumption, never yet timed on a GPU (on a GPU's host CPU the
# bootstraps took about 115 s a teacher, benchmarks/README.md); the plan records each step's time.
MEASURE_S = 30
SAVED_TEACHERS = 2  # the initialisation and the last
EXPORT_S = 10  # the bundle exported and archived
ARCHIVE_S = 10  # kept at the end for the last archive and the record
# The dry run: the `ci` tier shrunk to a few seconds of CPU per step.
DRY = dict(train_images=32, batch_size=8, img_size=16, patch_size=8, local_crop_size=8,
           knn_train_images=16, knn_eval_images=8, out_dim=64, hidden_dim=64, bottleneck_dim=16, arch="vit_tiny")
DRY_MOST_EPOCHS = 2


# --- here: pack ----------------------------------------------------------------------


def pack(source: Path, dest: Path, wheels: bool) -> int:
    """Copy the two subsets, unchanged, into one gzipped tar (the JPEGs do not shrink, but
    tar's per-file headers and padding, 12 MB for 11,000 small files, do), and download the
    wheels the GPU machine lacks; print what the device tool will carry."""
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
    wheel_bytes = folder_bytes(dest / "wheels") if (dest / "wheels").is_dir() else 0
    carried = folder_bytes(dest) - wheel_bytes + checkout_bytes()
    print(f"packed {dest}: {folder_bytes(dest) / 2**20:.1f} MiB; carried with the checkout {carried / 2**20:.1f} MiB "
          f"of the plan's {CARRY_LIMIT / 2**20:.0f} MiB, {(carried + wheel_bytes) / 2**20:.1f} MiB with the wheels "
          f"(a device command receives {DEVICE_CARRY / 2**20:.0f})")
    if carried > CARRY_LIMIT or carried + wheel_bytes > DEVICE_CARRY:
        sys.exit("too much to carry: store new results compact (python -m ib_tutorial.compact results), "
                 "or cut the subsets to what the parts use")
    return 0


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def checkout_bytes() -> int:
    """Bytes of the files the device tool copies: tracked, and untracked but not ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    return sum((REPO / name).stat().st_size for name in listed if name and (REPO / name).is_file())


# --- the plan's own checks -------------------------------------------------------------


def planned_budget() -> dict:
    """The command's seconds as planned: what the first part keeps for everything but its
    training, and the training that leaves."""
    kept = {"setup": SETUP_S, "rates": PROBE_S, "run_overhead": RUN_OVERHEAD_S,
            "measure": SAVED_TEACHERS * MEASURE_S, "export": EXPORT_S}
    training = COMMAND_S - sum(kept.values())
    return {"command_s": COMMAND_S, "kept_s": kept, "training_s": training,
            "train_share": round(training / COMMAND_S, 3),
            "least_images_per_s": round(MIN_STEPS * PLAN_BATCH / training)}


def check_plan() -> dict:
    """Assert the plan before it spends the GPU: one command within :data:`COMMAND_LIMIT_S`
    whose first part trains for at least :data:`TRAIN_SHARE` of it; the first part's schedule
    at the least rate that fits keeps :data:`MIN_STEPS` and the floors; the parts in their
    order of priority, each with the same recipe; what comes back within the transfer limits."""
    budget = planned_budget()
    assert COMMAND_S <= COMMAND_LIMIT_S, f"the command asks {COMMAND_S} s, over {COMMAND_LIMIT_S}"
    assert budget["train_share"] >= TRAIN_SHARE, f"planned training share {budget['train_share']} < {TRAIN_SHARE}"
    epochs = least_epochs(TINY_IMAGENET_SUBSET)
    floors = check_floors(epochs, TINY_IMAGENET_SUBSET)
    assert [part.name for part in PARTS] == ["tiny-imagenet", "knob-ends", "dtd"], "the parts' order of priority"
    assert all(dict(part.view) in ({}, dict(VIEW_64)) for part in PARTS), "every part at the recipe's geometry"
    assert len(PARTS) + 1 <= RETURNED_FILES, "an archive a part, and the record"
    print(f"plan: one command of {COMMAND_S} s; the first part trains {budget['training_s']} s "
          f"({budget['train_share']:.0%}), keeping {budget['kept_s']}; at least {MIN_STEPS} steps "
          f"({epochs} epochs of {TINY_IMAGENET_SUBSET:,} images), which need {budget['least_images_per_s']:,} images/s; "
          f"floors {floors}; parts in order: {', '.join(part.name for part in PARTS)}", flush=True)
    return {**budget, "floors": floors, "parts": [part.name for part in PARTS]}


def schedule(epochs: int, dry_run: bool) -> dict:
    """The settings of the plan's run of ``epochs``: the `paper` recipe with batches of
    :data:`PLAN_BATCH` (the dry run's own in its place), views made on the training device,
    its warm-up and freeze untouched (their floors in steps hold), k-NN :data:`KNN_POINTS`
    times, and a teacher saved at the initialisation and the end."""
    knn_every = max(1, epochs // KNN_POINTS)
    settings = {"epochs": epochs, "augmentation": "batched", "knn_every": knn_every, "checkpoint_every": epochs}
    return settings if dry_run else {**settings, "batch_size": PLAN_BATCH}


def least_epochs(images_per_epoch: int) -> int:
    """The fewest epochs that make :data:`MIN_STEPS` steps of :data:`PLAN_BATCH`."""
    return math.ceil(MIN_STEPS / (images_per_epoch // PLAN_BATCH))


def check_floors(epochs: int, images_per_epoch: int) -> dict:
    """Assert that the plan's run of ``epochs`` (at the `paper` tier, whatever tier the
    command runs) trains at least :data:`MIN_STEPS` steps with the tier's warm-up and
    freeze floors, so that the dry run checks the schedule the GPU would train; its steps."""
    from ib_tutorial.presets import FREEZE_ANCHOR_STEPS, WARMUP_ANCHOR_STEPS
    from ib_tutorial.training.schedules import Phases

    epochs = max(epochs, least_epochs(images_per_epoch))
    train = dataclasses.replace(get_preset("paper").train, **schedule(epochs, dry_run=False))
    steps_per_epoch = images_per_epoch // PLAN_BATCH
    phases = Phases.of(train, steps_per_epoch)
    if epochs * steps_per_epoch < MIN_STEPS or phases.warmup_steps < WARMUP_ANCHOR_STEPS \
            or phases.freeze_steps < FREEZE_ANCHOR_STEPS:
        raise StepFailed(f"the plan's schedule breaks a floor: {epochs * steps_per_epoch} steps, {phases}")
    return {"steps": epochs * steps_per_epoch, "warmup_steps": phases.warmup_steps, "freeze_steps": phases.freeze_steps}


# --- there: the command ---------------------------------------------------------------


class Plan:
    """The steps of the command, each a child process under a timeout, logged with its time
    and exit status in the record; what the command keeps goes into ``staging`` under the
    repository-relative paths the archives hold."""

    def __init__(self, out: Path, dry_run: bool, budget_s: float, work: Path, packed: Path):
        self.out, self.dry_run, self.work, self.packed = out, dry_run, work, packed
        self.start = time.monotonic()
        self.budget_s = budget_s
        self.deadline = self.start + budget_s - ARCHIVE_S
        self.staging = self.work / "staging"
        shutil.rmtree(self.staging, ignore_errors=True)
        (self.staging / BENCHMARKS).mkdir(parents=True)
        stamp = packed / "COMMIT"  # the commit `pack` ran at: the one the record's runs were made by
        commit = stamp.read_text().strip() if stamp.exists() else None
        self.name = f"plan-{commit[:7] if commit else 'unknown'}.json"
        self.record: dict = {"dry_run": dry_run, "budget_s": budget_s, "steps": [], "packed_commit": commit,
                             "parts": {}, "datasets": [], "mfu": None, "augmentation_vs_step": None}
        self.env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                    "IB_TUTORIAL_DATA": str(self.work / "data")}

    def elapsed(self) -> float:
        return time.monotonic() - self.start

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
              f"({self.elapsed():.0f} s into the command)", flush=True)
        if returncode != 0 and required:
            raise StepFailed(name)
        return returncode == 0

    def write_record(self) -> str:
        """The record so far, with the command's shares, into the staging folder and ``out``."""
        self.record["seconds"] = round(self.elapsed(), 1)
        trained = sum(part.get("train_s", 0.0) for part in self.record["parts"].values())
        self.record["train_share"] = round(trained / self.record["seconds"], 3)
        text = json.dumps(self.record, indent=1) + "\n"
        (self.staging / BENCHMARKS / self.name).write_text(text)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / self.name).write_text(text)
        return text

    def archive(self, number: int, part: str) -> Path:
        """``gpu-check-<number>-<part>.tar.gz`` of the staging folder (the bundle of the runs
        finished so far and the record), within what a device command may return."""
        self.write_record()
        archive = self.out / f"gpu-check-{number}-{part}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            for path in sorted(self.staging.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=path.relative_to(self.staging).as_posix())
        size = archive.stat().st_size
        self.record["parts"].setdefault(part, {})["archive_mib"] = round(size / 2**20, 2)
        print(f"wrote {archive} ({size / 2**20:.1f} MiB) after {self.elapsed():.0f} s", flush=True)
        if size > RETURNED_BYTES:
            raise StepFailed(f"{archive.name} is {size / 2**20:.1f} MiB, over the {RETURNED_BYTES / 2**20:.0f} MiB a file may return")
        return archive


class StepFailed(RuntimeError):
    pass


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "ib_tutorial", *args]


def unpack(plan: Plan) -> None:
    """The subsets into the work folder's data root, once; the wheels, if an import fails."""
    data, packed = plan.work / "data", plan.packed
    if not (data / SUBSETS[0]).is_dir():
        data.mkdir(parents=True, exist_ok=True)
        with tarfile.open(packed / DATA_ARCHIVE) as archive:
            archive.extractall(data, filter="data")
    missing = [group for group in WHEELS if importlib.util.find_spec(group[0].split("==")[0]) is None]
    if missing:
        wheels = [wheel for group in missing for wheel in group]
        plan.step("install " + " ".join(wheels), [sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                                                  "--find-links", str(packed / "wheels"), *wheels], 60)
        importlib.invalidate_caches()


def dataset_spec(base: str, dry_run: bool, view: dict, settings: dict) -> str:
    """``base`` (``NAME[:options]``) with the part's view and the training settings after ``@``."""
    settings = {**view, **DRY, **settings} if dry_run else {**view, **settings}
    return base + "@" + ",".join(f"{key}={value}" for key, value in settings.items())


def rate_config(dry_run: bool) -> RunConfig:
    """The configuration the rates are measured at: the first part's run (every part shares
    its geometry)."""
    tier = get_preset("ci" if dry_run else "paper")
    return RunConfig.resolve("tiny-imagenet", tier, {**(DRY if dry_run else {}), **schedule(DRY_MOST_EPOCHS, dry_run)})


def measure_rates(config: RunConfig, repeats: int) -> dict:
    """The training step alone (random views of the run's shapes, the loop's own DINO step)
    and the batched views alone (:class:`~ib_tutorial.training.augment.BatchMultiCrop`
    on stored uint8 images on the device), timed in turn: images/s of each, the step's
    model-FLOP utilisation where the GPU's peak is known (:data:`bench_step.PEAKS`), and
    ``augmentation_vs_step``, the seconds a batch's views take over those of its step (under
    1: the views are made faster than the step uses them, so on their own stream they hide
    behind it)."""
    device, batch = torch.device(config.device), config.train.batch_size
    if device.type == "cuda" and config.precision != "bf16":
        raise StepFailed(f"rates: expected bf16 autocast on the GPU, got {config.precision}")
    views = BatchMultiCrop(config.view, config.train.local_crops_number, config.seed)
    side = config.view.img_size
    images = torch.randint(0, 256, (batch, 3, side, side), dtype=torch.uint8, device=device)
    sizes, indices = torch.full((batch, 2), float(side)), torch.arange(batch)

    def augment():
        views(images, sizes, indices, epoch=0)
        if device.type == "cuda":
            torch.cuda.synchronize()

    seconds = interleaved_medians({"step": make_step(config, device), "augmentation": augment}, repeats=repeats, warmup=2)
    peak = PEAKS.get(torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    flops = DINOTraining.image_flops(config.view, config.train)
    step_rate = batch / seconds["step"]
    return {"batch": batch, "precision": config.precision, "step_images_per_s": round(step_rate, 1),
            "augmentation_images_per_s": round(batch / seconds["augmentation"], 1),
            "augmentation_vs_step": round(seconds["augmentation"] / seconds["step"], 3),
            "image_gflop": round(flops / 1e9, 3), "peak_flops": peak,
            "step_mfu": round(step_rate * flops / peak, 4) if peak else None,
            # The views on their own stream compete with the step for the GPU: sized as if
            # they did not overlap at all, a schedule cannot outrun its command.
            "schedule_images_per_s": round(batch / (seconds["step"] + seconds["augmentation"]), 1)}


def reserve_s(part: Part) -> float:
    """Seconds a part keeps besides its training: each run's start and k-NN, its teachers
    measured, the export and archive."""
    return len(part.datasets) * (RUN_OVERHEAD_S + SAVED_TEACHERS * MEASURE_S) + EXPORT_S


def train_images(base: str, plan: Plan) -> int:
    """Images a run of ``base`` trains on an epoch (the dry run's few)."""
    if plan.dry_run:
        return DRY["train_images"]
    name, options = parse_spec(base)
    return len(get_dataset(name, "train", root=plan.work / "data", **options))


def size_part(plan: Plan, part: Part, first: bool, rate: float) -> int | None:
    """The epochs of each of ``part``'s runs, sized to the time left at ``rate``; None when a
    later part cannot train :data:`MIN_STEPS` and be measured in it. The first part always
    runs, with at least :data:`MIN_STEPS` steps."""
    images = max(train_images(base, plan) for base in part.datasets)
    most = DRY_MOST_EPOCHS if plan.dry_run else MOST_EPOCHS
    per_run_s = (plan.left() - reserve_s(part)) / len(part.datasets)
    least = 1 if plan.dry_run else least_epochs(images)
    fit = epochs_within(max(per_run_s, 1.0), rate, images, most)
    if plan.dry_run:
        least_s = 0.0  # the dry run's runs take seconds: every part runs, so that each is exercised
    else:
        least_s = least * (images // PLAN_BATCH) * PLAN_BATCH / rate
    if not first and per_run_s < least_s:
        plan.record["parts"][part.name] = {"skipped": f"{per_run_s:.0f} s a run left, {least_s:.0f} s needed "
                                                      f"for {MIN_STEPS} steps"}
        print(f"{part.name}: skipped, {plan.record['parts'][part.name]['skipped']}", flush=True)
        return None
    epochs = max(fit, least)
    if first:
        check_floors(epochs, TINY_IMAGENET_SUBSET if plan.dry_run else images)
    plan.record["parts"][part.name] = {"epochs": epochs, "images_per_epoch": images,
                                       "planned_train_s": round(len(part.datasets) * epochs * images / rate, 1)}
    print(f"{part.name}: {rate:.0f} images/s measured, {images:,} images an epoch: {fit} epochs fit, "
          f"{epochs} trained a run", flush=True)
    return epochs


def run_part(plan: Plan, number: int, part: Part, rate: float, done: list[str]) -> None:
    """Train, measure and export ``part`` (the finished runs of earlier parts kept in the
    bundle), then archive it."""
    epochs = size_part(plan, part, first=number == 1, rate=rate)
    if epochs is None:
        return
    specs = [dataset_spec(base, plan.dry_run, dict(part.view), schedule(epochs, plan.dry_run)) for base in part.datasets]
    out = plan.work / "reproduce"
    tier = "ci" if plan.dry_run else "paper"
    # --export copies what is finished; the dry run's results are never committed, so the
    # check that they were measured by committed code is waived there.
    plan.step(f"part {number} ({part.name}): reproduce " + " ".join(specs), cli(
        "reproduce", "--preset", tier, "--out", str(out), "--no-progress", "--datasets", *done, *specs,
        "--export", str(plan.staging / RESULTS), *(["--allow-dirty"] if plan.dry_run else [])), plan.left() - EXPORT_S)
    done.extend(specs)
    plan.record["datasets"] = list(done)
    measured = epoch_rates([out / RunSpec.of(spec).folder for spec in specs])
    plan.record["parts"][part.name].update(measured)
    print(f"{part.name}: whole epochs {measured['epoch_images_per_s']} images/s over {measured['train_s']} s of training "
          f"(the step alone: {plan.record['rates']['step_images_per_s']})", flush=True)
    plan.archive(number, part.name)


def epoch_rates(runs: list[Path]) -> dict:
    """What the runs' whole epochs took (training steps and the views made for them, without
    k-NN, checkpoints or profiles): their seconds, what ``train_share`` counts, and images/s."""
    seconds = images = 0.0
    for run in runs:
        folder = RunDirectory(run)
        epochs = folder.read_metrics("epoch")
        seconds += sum(record["epoch_s"] for record in epochs)
        images += len(epochs) * folder.read_config().train_images_used
    return {"train_s": round(seconds, 1), "epoch_images_per_s": round(images / seconds, 1) if seconds else None}


def run_plan(plan: Plan) -> None:
    plan.record["plan"] = check_plan()
    unpack(plan)
    config = rate_config(plan.dry_run)
    if not plan.dry_run:
        if not torch.cuda.is_available():
            raise StepFailed("CUDA check: no CUDA GPU visible")
        plan.record["device"] = {"torch": torch.__version__, "name": torch.cuda.get_device_name(),
                                 "bf16": torch.cuda.is_bf16_supported()}
        print(f"CUDA check: {plan.record['device']}", flush=True)
    began = time.monotonic()
    rates = measure_rates(config, repeats=2 if plan.dry_run else 20)
    plan.record["rates"] = {**rates, "seconds": round(time.monotonic() - began, 1)}
    plan.record["augmentation_vs_step"] = rates["augmentation_vs_step"]
    print(f"rates: {plan.record['rates']}", flush=True)
    if config.device == "cuda":
        torch.cuda.empty_cache()  # the runs are child processes: leave them the GPU
    done: list[str] = []
    for number, part in enumerate(PARTS, start=1):
        run_part(plan, number, part, rates["schedule_images_per_s"], done)
        if number == 1 and rates["peak_flops"]:  # whole epochs of the first run against the GPU's peak (none for a CPU)
            trained = plan.record["parts"][part.name]["epoch_images_per_s"]
            plan.record["mfu"] = round(trained * rates["image_gflop"] * 1e9 / rates["peak_flops"], 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="here: the subsets and wheels into .device/")
    packing.add_argument("--source", type=Path, default=REPO.parent / "shared/data/real")
    packing.add_argument("--dest", type=Path, default=PACKED)
    packing.add_argument("--no-wheels", action="store_true", help="do not download the wheels the device lacks")
    running = commands.add_parser("run", help="on the GPU machine: the whole plan, one command")
    running.add_argument("--dry-run", action="store_true", help="the same steps on this CPU, in seconds")
    running.add_argument("--packed", type=Path, default=PACKED)
    running.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", REPO / BENCHMARKS)))
    running.add_argument("--budget", type=float, default=COMMAND_S, help="seconds the command may take")
    running.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ib-tutorial-gpu-plan",
                         help="data, runs and staging")
    args = parser.parse_args(argv)
    if args.command == "pack":
        return pack(args.source, args.dest, wheels=not args.no_wheels)
    if not (args.packed / DATA_ARCHIVE).exists():
        sys.exit(f"{args.packed / DATA_ARCHIVE} is missing: run `python benchmarks/gpu_plan.py pack` first "
                 "and carry .device")
    plan = Plan(args.out, args.dry_run, args.budget, args.work, args.packed)
    failed = None
    try:
        run_plan(plan)
    except (StepFailed, AssertionError) as error:
        failed = str(error)
        plan.record["failed"] = failed
    plan.write_record()
    print(f"done after {plan.elapsed():.0f} s; train_share {plan.record['train_share']}, "
          f"mfu {plan.record.get('mfu')}, augmentation_vs_step {plan.record.get('augmentation_vs_step')}", flush=True)
    if failed:
        print(f"step failed: {failed}; what was done is in the archives", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
