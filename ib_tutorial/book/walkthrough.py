"""What the chapter "From runs to results" shows: one committed bundle walked through end to end,
every other bundle in one table, and the committed GPU run (DINO ViT-S at the ``paper`` recipe, cut
to the epochs a lent machine allowed) with what its files say of why it did not learn.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..command_line import command_line, reproduce_argv
from ..training.schedules import Phases
from .bundles import Bundle, BundleRun, ENTRIES, load_bundle, load_bundles, stored_entry
from .dataset_chapters import chapter_runs
from .dataset_runs import DatasetRun, FAMILIES
from .learned import knn_standard_error, learned_rule
from .plots import plot_knn_curves, run_caption
from .tables import ResultSection, markdown_table


@dataclass(frozen=True)
class GpuRunFacts:
    """What set a GPU run apart, read from its ``config.json`` and ``metrics.jsonl``: CLS k-NN
    top-1 (%) first and last with one standard error of the last, and the lowest and highest
    teacher entropy as a share of log K (1: a uniform teacher)."""

    epochs: int
    steps: int
    batch: int
    warmup_steps: int
    freeze_steps: int
    out_dim: int
    train_images: int
    knn_first: float
    knn_last: float
    knn_se: float
    learned: bool
    teacher_share: tuple[float, float]

    @property
    def outputs_per_image(self) -> float:
        """Head outputs K per training image."""
        return self.out_dim / self.train_images


def gpu_run_facts(run: BundleRun) -> GpuRunFacts:
    config, knn = run.config, run.knn
    phases = Phases.of(config.train, config.steps_per_epoch)
    shares = [row["teacher_entropy"] / math.log(config.train.out_dim) for row in run.train]
    return GpuRunFacts(
        epochs=knn[-1]["epoch"], steps=knn[-1]["step"], batch=config.train.batch_size,
        warmup_steps=phases.warmup_steps, freeze_steps=phases.freeze_steps, out_dim=config.train.out_dim,
        train_images=config.train_images_used, knn_first=knn[0]["top1"], knn_last=knn[-1]["top1"],
        knn_se=knn_standard_error(knn[-1]), learned=learned_rule(run).learned, teacher_share=(min(shares), max(shares)))


@dataclass(frozen=True)
class FloorsTest:
    """Two runs alike but for the warm-up and freeze floors: their CLS k-NN gains, their warm-ups
    (without, with), and the difference of their last accuracies (without minus with) with its
    standard error, in points."""

    gain_without: float
    gain_with: float
    steps: int
    warmup_steps: tuple[int, int]
    difference: float
    difference_se: float

    @property
    def within_noise(self) -> bool:
        """The gap is within two standard errors: the floors neither helped nor hurt measurably."""
        return abs(self.difference) < 2 * self.difference_se


def floors_test(without: BundleRun, with_floors: BundleRun) -> FloorsTest:
    """The floors test of two runs of one initialisation and one length (else ValueError)."""
    first, second = without.knn, with_floors.knn
    if first[-1]["step"] != second[-1]["step"] or first[0]["top1"] != second[0]["top1"]:
        raise ValueError("the floors test needs two runs of one length from one initialisation")
    phases = [Phases.of(run.config.train, run.config.steps_per_epoch).warmup_steps for run in (without, with_floors)]
    return FloorsTest(
        gain_without=first[-1]["top1"] - first[0]["top1"], gain_with=second[-1]["top1"] - second[0]["top1"],
        steps=first[-1]["step"], warmup_steps=(phases[0], phases[1]), difference=first[-1]["top1"] - second[-1]["top1"],
        difference_se=math.hypot(knn_standard_error(first[-1]), knn_standard_error(second[-1])))


def bundle_command(bundle: Bundle) -> str:
    """The ``ib-tutorial reproduce`` command that makes ``bundle`` and exports it where the book
    finds it."""
    return command_line(reproduce_argv(bundle.preset, list(bundle.runs), out=f"/tmp/{bundle.name}",
                                       export=f"results/{bundle.name}"))


def learned_markdown(bundle: Bundle) -> str:
    """A table of the runs of ``bundle``: whether each learned by the book's rule, and the
    numbers the rule reads beside their thresholds."""
    rows = []
    for spec, run in bundle.runs.items():
        rule = learned_rule(run)
        teacher = ("-" if rule.teacher_information is None else
                   f"{rule.teacher_information:.2f} ({rule.teacher_floor:.2f})")
        rows.append((f"`{spec}`", "learned" if rule.learned else "did not learn",
                     f"{rule.knn.learned:+.1f} ({rule.knn.threshold:.1f})", teacher))
    return markdown_table(["run", "by the book's rule", "CLS k-NN gain, points (threshold)",
                           "teacher information, nats (collapse under)"], rows)


def reading_chapters(bundles: Iterable[Bundle]) -> dict[str, list[str]]:
    """For each bundle, the chapters that read it: the Results chapters that show one of its
    runs, and the chapters the manifest names for it."""
    bundles = list(bundles)
    readers: dict[str, list[str]] = {bundle.name: [] for bundle in bundles}
    for key, family in FAMILIES.items():
        for entry in chapter_runs(family, bundles):
            readers[entry.bundle.name].append("results_" + key.replace("-", "_"))
    for entry in ENTRIES:
        bundle = Path(entry.folder).parts[0]
        if bundle in readers:
            readers[bundle] += entry.chapters
    return {name: list(dict.fromkeys(chapters)) for name, chapters in readers.items()}


def bundles_markdown(bundles: Iterable[str | Path | Bundle] | None = None, skip: Iterable[str] = ()) -> str:
    """Every committed bundle (default: all under ``results/``) but those in ``skip``, one row
    each: its preset, its runs, how many learned, and the chapters that read it."""
    loaded = [bundle for bundle in load_bundles(bundles) if bundle.name not in set(skip)]
    readers = reading_chapters(loaded)
    rows = []
    for bundle in loaded:
        datasets = ", ".join(dict.fromkeys(f"`{run.spec.dataset}`" for run in bundle.runs.values()))
        learned = sum(learned_rule(run).learned for run in bundle.runs.values())
        chapters = ", ".join(f"{{doc}}`{chapter}`" for chapter in readers[bundle.name]) or "-"
        rows.append((f"`{bundle.name}`", f"`{bundle.preset}`", f"{len(bundle.runs)}: {datasets}",
                     f"{learned} of {len(bundle.runs)}", chapters))
    return markdown_table(["bundle", "preset", "runs: datasets", "learned (the book's rule)", "read in"], rows)


def gpu_run_markdown(entry: DatasetRun, facts: GpuRunFacts, floors: FloorsTest) -> str:
    """What the committed GPU run did, and why it did not learn stated as what it is: open. The
    candidates are the ways it differs from runs that learned; only the floors were tested."""
    outcome = "it learned" if facts.learned else "it did not learn"
    floors_said = ("neither helped nor hurt measurably" if floors.within_noise else
                   f"{'helped' if floors.difference < 0 else 'hurt'} by more than two standard errors")
    low, high = facts.teacher_share
    return "\n".join([
        f"DINO ViT-S ran {facts.epochs} epochs of the `{entry.tier}` recipe ({facts.steps:,} steps of {facts.batch} "
        f"images); its CLS k-NN accuracy went from {facts.knn_first:.1f} % to {facts.knn_last:.1f} % (one standard "
        f"error {facts.knn_se:.1f} points): **{outcome}** by the book's rule. Why is not known: four features set the "
        "run apart, and no run has changed one of them alone.",
        "",
        f"1. **Short phases.** The recipe states the warm-up and the last layer's freeze in epochs, so {facts.epochs} "
        f"epochs cut them to {facts.warmup_steps} and {facts.freeze_steps} steps. The floors that lengthen them were "
        f"tested on a CPU ({{ref}}`lab-notes-dino`): two `laptop` runs of {floors.steps:,} steps from one initialisation, warm-up "
        f"{floors.warmup_steps[0]} against {floors.warmup_steps[1]} steps, gained {floors.gain_without:+.1f} points "
        f"without the floors and {floors.gain_with:+.1f} with them, a gap of {floors.difference:.1f} against one "
        f"standard error of {floors.difference_se:.1f}: the floors {floors_said} at that length.",
        f"2. **A head wider than the data.** K = {facts.out_dim:,} outputs for {facts.train_images:,} training "
        f"images, {facts.outputs_per_image:.1f} per image. Untested.",
        f"3. **Few steps.** {facts.steps:,} in all. Untested.",
        f"4. **A teacher near uniform throughout.** Its entropy stayed at {100 * low:.0f}-{100 * high:.0f} % of log K, "
        "so it told the student little about the image: a symptom as much as a cause; untested.",
    ])


def gpu_run_section(with_floors: Bundle) -> ResultSection:
    """The committed GPU run (manifest entry ``gpu-run``) and its k-NN curve; the floors test sets
    the manifest's ``floors-without`` run beside the Tiny ImageNet run of ``with_floors``."""
    gpu_bundle = load_bundle(stored_entry("gpu-run"))
    gpu = DatasetRun(gpu_bundle, next(iter(gpu_bundle.runs.values())))
    without = next(iter(load_bundle(stored_entry("floors-without")).runs.values()))
    floors = floors_test(without, with_floors.runs["tiny-imagenet"])
    figure = plot_knn_curves({"DINO ViT-S, paper recipe": gpu.run.knn}, run_caption(gpu))
    return ResultSection(gpu_run_markdown(gpu, gpu_run_facts(gpu.run), floors), (figure,))
