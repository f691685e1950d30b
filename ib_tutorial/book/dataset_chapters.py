"""What a dataset chapter of the Results part shows: the data on disk, its sizes at every tier,
the paper's row, each committed run (:mod:`~ib_tutorial.book.dataset_runs`) as one section
(:func:`run_section`), and the commands that make the runs not there yet; the chapters compute
nothing themselves.
"""
from __future__ import annotations

import dataclasses
import json
import math
import textwrap
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ..command_line import command_line, reproduce_argv
from ..data import DATASETS, dataset_on_disk, held_out_split
from ..files import DATA_ENV_VAR, data_root, display_path, in_repository, repository_root, stored_benchmark
from ..measure.bootstrap import Interval
from ..measure.shape import DIRECTIONS, near_lowest
from ..models import ARCHITECTURES, MODEL_NAMES
from ..presets import PRESETS, Preset, get_preset
from ..training.cost import estimate_run_time
from ..training.run_config import RunSpec
from ..training.runs import RunDirectory
from .bundles import Bundle, load_bundles, middle_eed
from .claims import REGIONS, interval_text, profile_shape, region_change
from .dataset_runs import FAMILIES, GPU_TIERS, DatasetRun, Family, dataset_runs
from .learned import GAIN, Learned, knn_standard_error, learned_rule
from .paper import ABOUT_TOLERANCE, MIDDLE, PAPER_DATASETS, REPORTED, Setting, compare_profile, late_label
from .plots import add_caption, plot_knn_curves, plot_run_epochs, run_caption
from .records import code_version
from .tables import (ResultSection, bundle_markdown, comparison_markdown, duration_text, estimate_markdown,
                     markdown_table)

REPOSITORY = "https://github.com/ib-tutorial/ib-tutorial"


#: Settings that change a run's schedule, not its recipe: the length of training, of its
#: warm-ups and of the head's freeze, and how often it is evaluated and saved.
SCHEDULE_SETTINGS = frozenset({"epochs", "warmup_epochs", "warmup_min_steps", "warmup_teacher_temp_epochs",
                               "freeze_last_layer", "freeze_min_steps", "knn_every", "checkpoint_every", "log_every"})


def shown_in_chapter(entry: DatasetRun) -> bool:
    """Whether a dataset chapter shows the run: a plain DINO run, or a GPU tier's DINO run that
    changes only its schedule (a ``paper`` run cut to the epochs a machine's time allowed).
    The others are named (:func:`other_runs_markdown`) and shown where their question is."""
    return entry.plain or (entry.on_gpu and entry.run.config.objective.compared_with_paper
                           and set(entry.overrides) <= SCHEDULE_SETTINGS)


def chapter_runs(family: Family, bundles: Iterable[str | Path | Bundle] | None = None) -> list[DatasetRun]:
    """The committed runs a chapter of ``family`` shows, dataset by dataset, CPU tiers first."""
    datasets = dict.fromkeys(spec.dataset for spec in family.specs)
    return [entry for dataset in datasets for entry in dataset_runs(dataset, bundles, plain=False)
            if shown_in_chapter(entry)]


def summary_run(runs: Iterable[DatasetRun]) -> DatasetRun | None:
    """The ``laptop`` run a chapter's summary reads: the one at the tier's settings today, else the first."""
    laptop = [entry for entry in runs if entry.tier == "laptop"]
    return next((entry for entry in laptop if entry.current), laptop[0] if laptop else None)


def other_runs_markdown(dataset: str, bundles: Iterable[str | Path | Bundle] | None = None) -> str:
    """One sentence naming the committed runs of ``dataset`` that its chapter does not show."""
    others = [entry for entry in dataset_runs(dataset, bundles, plain=False) if not shown_in_chapter(entry)]
    if not others:
        return f"No other runs of {dataset} (other objectives or settings) are committed."
    names = ", ".join(f"`{entry.spec}` ({entry.bundle.name})" for entry in others)
    return (f"The committed bundles also hold {len(others)} other run(s) of {dataset}, not shown here: {names}. "
            "The chapter \"Networks that learned\" shows the supervised runs trained longest, and \"Beyond the "
            "paper\" compares each run with the DINO run of its bundle.")


def missing_runs_markdown(family: Family, runs: list[DatasetRun]) -> str:
    """For each tier with no committed run at its own settings: what is shown instead, and the command."""
    if not in_repository():
        return (f"**This installation of `ib_tutorial` is not a checkout of the repository**, so it holds none of the "
                f"bundles committed under `results/`, and this chapter shows no run. To read them: `git clone "
                f"{REPOSITORY}`, then `pip install -e ib-tutorial` (the Colab set-up cell does both).")
    laptop, quick = run_commands(family)[:2]
    lines = []
    for tiers, command, on_gpu in (("laptop", laptop, False), ("GPU (quick or paper)", quick, True)):
        spec = command.argv[command.argv.index("--datasets") + 1]
        tier_runs = [entry for entry in runs if entry.on_gpu == on_gpu and entry.spec.dataset_spec == spec]
        if any(entry.current for entry in tier_runs):
            continue
        if not tier_runs:
            lines.append(f"- **No {tiers} run of `{spec}` is committed under `results/`**, so this chapter shows none "
                         f"and nothing stands in for it. This command makes it: `{command.line}` (see *Run it "
                         "yourself*).")
            continue
        shown = ("The run shown below differs from its tier as it stands today" if len(tier_runs) == 1 else
                 f"The {len(tier_runs)} runs shown below differ from their tiers as they stand today")
        lines.append(f"- **No {tiers} run of `{spec}` at its tier's own settings is committed under `results/`.** "
                     f"{shown}: {'; '.join(map(tier_difference, tier_runs))}. This command makes a run at the "
                     f"`{command.tier}` tier's settings: `{command.line}` (see *Run it yourself*).")
    return "\n".join(lines) or "Every tier of this chapter has a committed run."


def tier_difference(entry: DatasetRun) -> str:
    """How a run differs from its tier today: ``"`tiny-imagenet` (laptop-real, preset laptop)
    trained 6 of the `laptop` tier's 48 epochs, warmup_min_steps 0 (the tier: 800)"``."""
    changes = dict(entry.tier_changes)
    epochs = changes.pop("epochs", None)
    said = [f"trained {epochs[0]} of the `{entry.tier}` tier's {epochs[1]} epochs"] if epochs else []
    said += [f"{key} {mine} (the tier: {theirs})" for key, (mine, theirs) in changes.items()]
    return f"`{entry.spec}` ({entry.bundle.name}, preset {entry.tier}) " + ", ".join(said)


def run_markdown(entry: DatasetRun) -> str:
    """The run's settings in one line, then its row of the bundle table."""
    config, run = entry.run.config, entry.run
    knn = run.knn[-1]
    classes = f", {100 / entry.chance:.0f} classes" if entry.chance else ""
    images = f"{config.train_images_used:,}" if config.train_images_used else "all the"
    settings = (f"**{entry.label}**: {MODEL_NAMES.get(config.model['embed_dim'], config.model['arch'])} "
                f"(D = {config.model['embed_dim']}), {config.view.img_size} px / patch {config.view.patch_size}, "
                f"{config.train.epochs} epochs of {images} images{classes}; k-NN on "
                f"{knn['n_train']:,} train and {knn['n_eval']:,} {config.held_out_split} images; profiles on "
                f"{run.profiles[-1].provenance.n_images} {config.held_out_split} images. "
                + trained_on(config))
    return settings + "\n\n" + bundle_markdown(dataclasses.replace(entry.bundle, runs={entry.spec.text: run}))


def trained_on(config) -> str:
    """Which classes and files a run trained on, as its ``config.json`` records them."""
    data = config.train_data
    if data is None:
        return "Its training files were not recorded (the run predates that record)."
    named = f"the subset `{data.named}`" if data.named else f"{len(data.classes)} classes"
    files = f", files digest `{data.train_files_sha256[:12]}`" if data.train_files_sha256 else ""
    if data.subset is None and data.named is not None:
        files += f", that of `{data.named}`'s training files: the run was given the subset's folder, not its name"
    return f"Trained on {named} ({data.train_files:,} training images{files})."


def knn_markdown(entry: DatasetRun) -> str:
    """The run's k-NN accuracy from the initialisation to the end, its standard error, and the rule."""
    knn = entry.run.knn
    rule = learned_rule(entry.run)
    first, last = knn[0], knn[-1]
    best = max(knn, key=lambda r: r["top1"])
    chance = f"; guessing gives {entry.chance:.1f} %" if entry.chance else ""
    mean = (f" On the mean patch token: {first['top1_mean']:.1f} % -> {last['top1_mean']:.1f} %."
            if "top1_mean" in first and "top1_mean" in last else "")
    return (f"**{entry.label}**: k-NN top-1 on the CLS token: {first['top1']:.1f} % at the random initialisation, {last['top1']:.1f} % "
            f"after epoch {last['epoch']} ({last['top1'] - first['top1']:+.1f} points; best {best['top1']:.1f} % at "
            f"epoch {best['epoch']}){chance}. One standard error of an accuracy on these {last['n_eval']:,} images "
            f"is about {knn_standard_error(last):.1f} points, so the change "
            f"{'reaches' if rule.knn.learned_beyond_noise else 'falls short of'} two of them (and {GAIN:g} point), the "
            f"rule for having learned.{_teacher_text(rule)}{mean}")


def _teacher_text(rule: Learned) -> str:
    """The rule's teacher condition in words, for DINO."""
    if rule.teacher_information is None:
        return ""
    return (f" Its teacher carried {rule.teacher_information:.2f} nats about the image over the last tenth of training, "
            f"{'at or above' if rule.teacher_kept else 'under'} the collapse threshold of {rule.teacher_floor:.2f} "
            f"nats, so by the book's rule the run {'learned' if rule.learned else 'did not learn'}.")


def baseline_markdown(entry: DatasetRun) -> str:
    """The raw pixel patches' N_eff beside block 0's output before and after training: a
    reference, not a bound (the patch embedding bounds only the rank of block 0's input)."""
    summary, config = entry.run.summary, entry.run.config
    n_eff, dim = summary["raw_patch_n_eff"], summary["raw_patch_dim"]
    first, last = entry.run.profiles[0].profile, entry.run.profiles[-1].profile
    positions = (config.view.img_size // config.view.patch_size) ** 2 + 1
    width = last.dim
    bound = (f"a rank of at most {dim} content directions plus {positions} positions, at least the width "
             f"D = {width}, so here the rank bound is no bound at all" if dim >= width else
             f"a rank of at most {dim} content directions plus {positions} positions, below the width D = {width}")
    return (f"**{entry.label}**: raw pixel patches ({config.view.patch_size} x {config.view.patch_size} x 3 = {dim} values at "
            f"{config.view.img_size} px): N_eff = {n_eff:.1f} of {dim}. The linear patch embedding gives block 0's "
            f"input {bound}. Block 0's output (after its attention and MLP) has N_eff = {first.n_eff[0]:.1f} "
            f"at the random initialisation and {last.n_eff[0]:.1f} after epoch {entry.run.profiles[-1].epoch} "
            f"({last.n_eff[0] / n_eff:.1f} times the raw patches'), of D = {width} "
            f"({first.eed_percent[0]:.1f} % -> {last.eed_percent[0]:.1f} %).")


def shape_markdown(entry: DatasetRun) -> str:
    """Per saved epoch: the lowest and highest blocks, the middle blocks' mean, and the minimum's place."""
    blocks = f"L{MIDDLE[0]}-L{MIDDLE[-1]}"
    rows = []
    for record in entry.run.profiles:
        eed = record.profile.eed_percent
        low, high = int(np.argmin(eed)), int(np.argmax(eed))
        close = near_lowest(record.profile.n_eff, DIRECTIONS)
        near = f"; {', '.join(f'L{block}' for block in close)} within {DIRECTIONS:g} direction" if close else ""
        rows.append((record.epoch, f"L{low} ({eed[low]:.1f} %{near})", f"L{high} ({eed[high]:.1f} %)",
                     f"{eed[high] - eed[low]:.1f}", f"{middle_eed(record):.1f} %", "yes" if low in MIDDLE else "no"))
    return markdown_table(["epoch", "lowest block", "highest block", "spread (points)", f"middle {blocks} mean",
                           f"minimum in {blocks}?"], rows)


def run_section(entry: DatasetRun) -> ResultSection:
    """One run as a dataset chapter shows it, with its settings, k-NN, baseline and shapes to fold."""
    run, rule = entry.run, learned_rule(entry.run)
    first, last = run.profiles[0].profile, run.profiles[-1].profile
    low, high = int(np.argmin(last.eed_percent)), int(np.argmax(last.eed_percent))
    chance = f" Guessing gives {entry.chance:.1f} %." if entry.chance else ""
    line = (f"**{entry.label}** {'learned' if rule.learned else 'did not learn'} by the book's rule: "
            f"{rule.reason()}.{chance} Block 0's N_eff went from {first.n_eff[0]:.1f} to {last.n_eff[0]:.1f} "
            f"(raw patches: {run.summary['raw_patch_n_eff']:.1f}); after epoch {run.profiles[-1].epoch} the profile is "
            f"lowest at L{low} ({last.eed_percent[low]:.1f} %) and highest at L{high} ({last.eed_percent[high]:.1f} %) "
            f"of D = {last.dim}.")
    caption = run_caption(entry)
    figures = (plot_knn_curves({entry.label: run.knn}, caption, chance={entry.label: entry.chance} if entry.chance else None),
               plot_run_epochs(run.profiles, caption, title=f"{entry.spec.dataset}, {entry.bundle.name}",
                               reported=entry.reported))
    details = "\n\n".join([run_markdown(entry), knn_markdown(entry), baseline_markdown(entry), shape_markdown(entry)])
    return ResultSection(line + "\n\n" + comparison_table(entry), figures, details=details)


def comparison_table(entry: DatasetRun) -> str:
    """The run's comparison with the paper, recomputed from its last profile so that it reads the
    paper's values as :data:`~ib_tutorial.book.paper.REPORTED` holds them now (``summary.json``
    says which runs are compared); one line where there is none."""
    rows = (compare_profile(entry.spec.dataset, entry.run.profiles[-1].profile.eed_percent, Setting.of(entry.run.config))
            if entry.run.summary["comparison"] else [])
    if not rows:
        return f"`{entry.spec}` is not a DINO run with the paper's objective, so it is not compared."
    if entry.spec.dataset not in REPORTED:
        return f"The paper did not study {entry.spec.dataset}, so there are no values to set this run against."
    return comparison_markdown(rows)


def run_summary(entry: DatasetRun | None) -> dict[str, float | str]:
    """The numbers a dataset chapter's closing points glue, of one run (NaN, "none" or "n/a"
    where the run, or its profiles' bootstrap, is not there)."""
    numbers: dict[str, float | str] = dict.fromkeys(
        ["knn_first", "knn_last", "chance", "classes", "se", "n_eval", "changed_images", "gain", "threshold", "width",
         "size", "epochs", "middle_first", "middle_last", "raw", "b0_first", "b0_last", "low", "high", "lowest_block",
         "highest_block", "spread", "spread_directions"], math.nan)
    numbers.update(run="none", learning="not measured", near_lowest="not measured",
                   **{f"{region}_change": "n/a" for region in REGIONS})
    if entry is None:
        return numbers
    run, config = entry.run, entry.run.config
    first, last, knn = run.profiles[0], run.profiles[-1], run.knn
    rule = learned_rule(run)
    eed = last.profile.eed_percent
    numbers.update(
        run=entry.label, knn_first=knn[0]["top1"], knn_last=knn[-1]["top1"], se=knn_standard_error(knn[-1]),
        n_eval=knn[-1]["n_eval"], changed_images=abs(knn[-1]["top1"] - knn[0]["top1"]) * knn[-1]["n_eval"] / 100,
        gain=rule.knn.learned, threshold=rule.knn.threshold, width=config.model["embed_dim"], size=config.view.img_size,
        epochs=knn[-1]["epoch"], middle_first=middle_eed(first), middle_last=middle_eed(last),
        raw=run.summary["raw_patch_n_eff"], b0_first=first.profile.n_eff[0], b0_last=last.profile.n_eff[0],
        low=min(eed), high=max(eed), lowest_block=eed.index(min(eed)), highest_block=eed.index(max(eed)),
        spread=max(eed) - min(eed), spread_directions=max(last.profile.n_eff) - min(last.profile.n_eff),
        learning="learned by the book's rule" if rule.learned else "did not learn by the book's rule",
        near_lowest=", ".join(f"L{block}" for block in near_lowest(last.profile.n_eff)) or "no other block")
    if entry.chance:
        numbers.update(chance=entry.chance, classes=100 / entry.chance)
    for region, change in (region_changes(entry) or {}).items():
        numbers[f"{region}_change"] = f"{change.estimate:+.1f} {interval_text(change, signed=True)}"
    return numbers


def region_changes(entry: DatasetRun) -> dict[str, Interval] | None:
    """Each region's EED change in training with its paired interval; None without bootstraps."""
    start, end = profile_shape(entry.run.profiles[0]), profile_shape(entry.run.profiles[-1])
    if start.bootstrap is None or end.bootstrap is None:
        return None
    return {region: region_change(start, end, region) for region in REGIONS}


def _on_disk(spec: RunSpec, split: str, root) -> tuple[object | None, str]:
    """:func:`~ib_tutorial.data.dataset_on_disk`, without a subset's warning: the chapter names the classes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return dataset_on_disk(spec.dataset, split, root, **spec.options)


def shared_samples() -> Path:
    """``../shared/data/real`` beside the repository: real images (a Tiny ImageNet and a DTD
    subset) where the project's machines keep them."""
    return repository_root().parent / "shared" / "data" / "real"


def images_root(spec: str | RunSpec, root=None) -> Path | None:
    """The data root when it holds ``spec``'s images, else :func:`shared_samples` if they do, else None."""
    spec = RunSpec.of(spec)
    for candidate in (data_root(root), shared_samples()):
        if candidate.is_dir() and _on_disk(spec, "train", candidate)[0] is not None:
            return candidate
    return None


def _where_text(root: Path) -> str:
    return "../shared/data/real (beside the repository)" if root == shared_samples() else display_path(root)


def dataset_overview(spec: str | RunSpec, root=None, preset: str | Preset | None = None) -> tuple[str, plt.Figure | None]:
    """A dataset chapter's data section: sizes, what is on disk where found, and a gallery (or None)."""
    where = images_root(spec, root)
    status = data_status_markdown(spec, root if where is None else where)
    figure = None if where is None else gallery(spec, root=where, preset=preset)
    return sizes_markdown(spec) + "\n\n" + status, figure


def data_status_markdown(spec: str | RunSpec, root=None) -> str:
    """What of ``spec`` is on disk under ``root``, or where it goes and how to get it."""
    spec, root = RunSpec.of(spec), data_root(root)
    name, options = spec.dataset, spec.options
    shown = _where_text(root)
    train, _ = _on_disk(spec, "train", root)
    if train is None:
        fetch = (f"a folder of `images/<class>/` there is read as `{spec}`" if "folder" in options else
                 f"`get_dataset('{name}', 'train', download=True)` (or `--download` on any `ib-tutorial` command) "
                 "fetches it")
        return f"`{spec}` is not on disk under `{shown}` (`{DATA_ENV_VAR}` moves the data root); {fetch}."
    split = held_out_split(name, options)
    held, _ = _on_disk(spec, split, root)
    classes = list(train.classes)
    listed = ", ".join(classes[:12]) + (f" and {len(classes) - 12} more" if len(classes) > 12 else "")
    return (f"**`{spec}` on disk** under `{shown}`: {len(classes)} classes, {len(train):,} train and "
            f"{len(held):,} {split} images. Classes: {listed}.")


def gallery(spec: str | RunSpec, root=None, classes: int = 8, per_class: int = 3, preset: str | Preset | None = None) -> plt.Figure | None:
    """``per_class`` train images of ``classes`` classes spread over the class list, as stored
    under the data root, a column a class; None when the data is not on disk."""
    spec = RunSpec.of(spec)
    dataset, _ = _on_disk(spec, "train", root)
    if dataset is None:
        return None
    preset = preset if isinstance(preset, Preset) else get_preset(preset)
    name = spec.dataset
    targets = np.asarray(dataset.targets)
    labels = sorted({int(round(x)) for x in np.linspace(0, len(dataset.classes) - 1, min(classes, len(dataset.classes)))})
    fig, axes = plt.subplots(per_class, len(labels), figsize=(1.3 * len(labels), 1.3 * per_class + 1.2),
                             layout="constrained", squeeze=False)
    sizes = set()
    for column, label in enumerate(labels):
        picks = np.flatnonzero(targets == label)[:per_class]
        for row in range(per_class):
            ax = axes[row, column]
            ax.set(xticks=[], yticks=[])
            if row < len(picks):
                image = dataset[int(picks[row])][0]
                sizes.add(image.size)
                ax.imshow(image)
        axes[0, column].set_title(textwrap.fill(str(dataset.classes[label]), 12), fontsize=8)
    sides = sorted(side for size in sizes for side in size)
    stored = f"{sides[0]} x {sides[0]} px" if sides[0] == sides[-1] else f"{sides[0]}-{sides[-1]} px a side"
    view = preset.view(name)
    add_caption(fig, f"images as stored under {_where_text(data_root(root))} ({stored}); preset {preset.name} "
                     f"trains {name} at {view.img_size} px, patch {view.patch_size}, "
                     f"{MODEL_NAMES.get(_width(preset), 'ViT')} (D = {_width(preset)}); code {code_version()[:10]}",
                what=f"{spec}: {per_class} train images from each of {len(labels)} of its {len(dataset.classes)} "
                     "classes on disk.")
    return fig


#: The real datasets the book trains or names: the Results part's (CPU spec first), then the rest.
REAL_SPECS = tuple(dict.fromkeys([spec.text for family in FAMILIES.values() for spec in family.specs]
                                 + [name for name in DATASETS if not name.startswith("synthetic")]))


def datasets_markdown() -> str:
    """A Markdown table of every dataset ``get_dataset`` knows: name, kind, splits, what it is."""
    return markdown_table(["name", "kind", "splits", "what it is"],
                          [(f"`{name}`", info.kind, ", ".join(info.splits), info.description) for name, info in DATASETS.items()])


def real_images(root=None, columns: int = 8) -> tuple[plt.Figure | None, str]:
    """A row of train images for each real dataset on disk (or None), and how to get the others."""
    found = {}  # dataset name -> (spec, dataset, where): the first of its specs on disk
    for spec in map(RunSpec.of, REAL_SPECS):
        where = images_root(spec, root)
        if spec.dataset not in found and where is not None:
            found[spec.dataset] = (spec, _on_disk(spec, "train", where)[0], where)
    missing = list(dict.fromkeys(RunSpec.of(text).dataset for text in REAL_SPECS if RunSpec.of(text).dataset not in found))
    text = ("" if not missing else "Not on disk here: " + ", ".join(f"`{name}`" for name in missing) +
            "; `get_dataset(name, 'train', download=True)` fetches each into the data root.")
    if not found:
        return None, text
    fig, axes = plt.subplots(len(found), columns, figsize=(1.25 * columns, 1.55 * len(found)), layout="constrained",
                             squeeze=False)
    sources = set()
    for row, (spec, dataset, where) in zip(axes, found.values()):
        targets = np.asarray(dataset.targets)
        labels = sorted({int(round(x)) for x in np.linspace(0, len(dataset.classes) - 1, min(columns, len(dataset.classes)))})
        for ax, label in zip(row, labels):
            ax.imshow(dataset[int(np.flatnonzero(targets == label)[0])][0])
            ax.set_title(textwrap.shorten(str(dataset.classes[label]).split(",")[0], 14), fontsize=7)
        for ax in row:
            ax.set(xticks=[], yticks=[])
            ax.set_visible(bool(ax.images))
        row[0].set_ylabel(str(spec), fontsize=8)
        sources.add(_where_text(where))
    add_caption(fig, f"the first train image of up to {columns} classes of each, as stored under {', '.join(sorted(sources))}",
                what="Real images of the datasets on disk, one row each, one class a column.")
    return fig, text


def _width(preset: Preset) -> int:
    return ARCHITECTURES[preset.train.arch]["embed_dim"]


def sizes_markdown(spec: str | RunSpec) -> str:
    """The dataset's facts from the registry and, per tier, the model and geometry it trains at."""
    spec = RunSpec.of(spec)
    name, options = spec.dataset, spec.options
    info = DATASETS[name]
    # With options (e.g. a DTD folder) the split is not the published one the registry counts.
    split_images = None if options else info.train_images
    rows = []
    for preset in PRESETS.values():
        view, train = preset.view(name), preset.train
        per_epoch = f"{train.train_images:,}" if train.train_images else (f"{split_images:,} (the split)" if split_images else "the split")
        rows.append((f"`{preset.name}`", "CPU" if preset.device == "cpu" else "GPU",
                     f"{MODEL_NAMES.get(_width(preset), train.arch)} (D = {_width(preset)})", view.img_size,
                     view.patch_size, (view.img_size // view.patch_size) ** 2 + 1,
                     f"{train.local_crops_number} x {view.local_crop_size} px", f"{train.epochs} x {per_epoch}"))
    header = ["preset", "device", "model", "input px", "patch px", "tokens per global crop", "local crops",
              "epochs x images per epoch"]
    return (f"`{spec}`: {info.kind}; {info.description}; held out: `{held_out_split(name, options)}`.\n\n"
            + markdown_table(header, rows))


def paper_row_markdown(dataset: str) -> str:
    """The paper's reported EED% for ``dataset``, or a line saying that it did not study it."""
    if dataset not in REPORTED:
        return (f"The paper did not study `{dataset}`; its datasets are "
                + ", ".join(f"`{name}`" for name in PAPER_DATASETS) + ".")
    return paper_table_markdown([dataset])


def paper_table_markdown(datasets) -> str:
    """The paper's reported EED% for each of ``datasets``, a row each, and what the numbers are."""

    def span(reported, key, blocks, values):
        if values is None:
            return "-"
        where = late_label(reported) if key == "late" else f"L{blocks[0]}-L{blocks[-1]}"
        return f"{values[0]:.1f}-{values[1]:.1f} % ({where}; {reported.band_note(key, values)})"

    rows = []
    for dataset in datasets:
        reported = REPORTED[dataset]
        rows.append((f"`{dataset}`", span(reported, "early", reported.early_blocks, reported.early_eed),
                     span(reported, "minimum", reported.middle_blocks, reported.minimum_eed),
                     span(reported, "late", reported.late_blocks, reported.late_eed),
                     "-" if reported.flat_above is None else f"above {reported.flat_above:.0f} % at every block"))
    return markdown_table(["dataset", "early", "minimum", "late", "flat"], rows) + (
        "\n\nThe paper gives these for a converged (100-epoch) DINO ViT-S, D = 384, and states no input or patch "
        f"size; a dash is a value it does not state as a number. Where it states one value (\"about x\"), the band "
        f"is ours: x ± {ABOUT_TOLERANCE:g} points.")


@dataclass(frozen=True)
class RunCommand:
    """One ``ib-tutorial`` command of *Run it yourself*: its preset, the machine it is meant for,
    its arguments after ``ib-tutorial`` and what to know before running it."""

    tier: str
    where: str
    argv: tuple[str, ...]
    note: str

    @property
    def line(self) -> str:
        return command_line(self.argv)


def _reproduce_argv(spec: RunSpec, tier: str, out: str | None = None, export: bool = False) -> tuple[str, ...]:
    """A chapter's ``reproduce`` of one run; a dataset read from a folder is not downloaded."""
    return reproduce_argv(tier, [spec], out=out, download="folder" not in spec.options,
                          export=f"results/{tier}-{spec.dataset}" if export else None)


def run_commands(family: Family) -> list[RunCommand]:
    """The commands that make each tier's run of ``family``: ``laptop`` on a CPU, ``quick`` and
    ``paper`` on a GPU (exported under ``results/``), and ``quick`` in Colab, its run folder on
    Google Drive so that a new session resumes it."""
    cpu, gpu = family.cpu_spec, family.gpu_spec
    name = gpu.dataset
    folder_note = (f" `{cpu}` reads `images/<class>/` under the data root without downloading; "
                   f"`--datasets {cpu.dataset} --download` fetches the official dataset instead."
                   if "folder" in cpu.options else
                   " `--download` fetches the dataset into the data root when it is not there; a data root that "
                   "holds a subset in the same layout (as for the committed `laptop` runs) trains on that subset.")
    return [
        RunCommand("laptop", "a laptop CPU", _reproduce_argv(cpu, "laptop"),
                   f"{get_preset('laptop').description}.{folder_note}"),
        RunCommand("quick", "one GPU", _reproduce_argv(gpu, "quick", export=True),
                   f"{get_preset('quick').description}; from the repository's root, so that `--export` writes the "
                   f"bundle where this chapter looks for it (`results/quick-{name}`); commit that folder."),
        RunCommand("paper", "one GPU", _reproduce_argv(gpu, "paper", export=True),
                   f"{get_preset('paper').description}; 100 epochs, ten times `quick`."),
        RunCommand("quick", "Colab's free GPU",
                   _reproduce_argv(gpu, "quick", out=f"/content/drive/MyDrive/ib-tutorial/quick-{name}", export=True),
                   "the cell below mounts Google Drive, installs the package and runs `quick` with its run folder "
                   "on Drive; after a disconnection, run the cell again and it resumes from the checkpoint there."),
    ]


#: The GPU benchmark record under ``benchmarks/results/``: ``benchmarks/bench_train.py --preset
#: paper``, run on a lent GPU by the device plan (``benchmarks/gpu_plan.py``).
GPU_BENCHMARK = "gpu/bench_train_paper.json"
#: The folder under ``benchmarks/results/`` of the device plans' records (``plan-<part>.json``).
GPU_PLANS = "gpu"


@dataclass(frozen=True)
class GpuEpochs:
    """The whole epochs of one committed GPU run as ``metrics.jsonl`` timed them: how many, the
    images of each, their training time summed (evaluations apart), and the GPU where a device
    plan's record names the run and its commit."""

    run: DatasetRun
    epochs: int
    images: int
    seconds: float
    device: str | None

    @property
    def images_per_s(self) -> float:
        return self.epochs * self.images / self.seconds


def gpu_epochs(bundles: Iterable[str | Path | Bundle] | None = None) -> list[GpuEpochs]:
    """The timed epochs of every committed run of a GPU tier."""
    plans = [json.loads(path.read_text()) for path in sorted(stored_benchmark(GPU_PLANS).glob("plan-*.json"))]
    timed = []
    for bundle in load_bundles(bundles):
        if bundle.preset not in GPU_TIERS:
            continue
        for run in bundle.runs.values():
            epochs = RunDirectory(bundle.path / run.summary["run"]).read_metrics("epoch")
            if not epochs or not run.config.train_images_used:
                continue
            commit = run.profiles[-1].provenance.code_version
            device = next((plan["device"]["name"] for plan in plans if "device" in plan
                           and plan.get("packed_commit") == commit and run.spec.text in plan.get("datasets", [])), None)
            timed.append(GpuEpochs(DatasetRun(bundle, run), len(epochs), run.config.train_images_used,
                                   sum(record["epoch_s"] for record in epochs), device))
    return timed


def gpu_timing_markdown(dataset: str, bundles: Iterable[str | Path | Bundle] | None = None) -> str:
    """What a GPU measured: the ``paper`` training step on ``dataset`` and one loader worker's
    augmentation (:data:`GPU_BENCHMARK`), then whole epochs of the GPU runs (of ``dataset`` if any)."""
    path = stored_benchmark(GPU_BENCHMARK)
    if not path.exists():
        return "No GPU benchmark record is next to this package, so no GPU measurement is given here."
    record = json.loads(path.read_text())
    source = f"`benchmarks/results/{GPU_BENCHMARK}`"
    step = record["results"].get(dataset)
    text = f"**Measured on one {record['machine'].get('cuda') or 'GPU'}, not on Colab.** "
    if step is None:
        text += (f"The `{record['preset']}` configuration's training step was timed on "
                 f"{', '.join(record['results'])} ({source}), not on {dataset}.")
    else:
        text += (f"There the `{record['preset']}` configuration's training step on {dataset} (batch {step['batch']}, "
                 f"{step['precision']}, random tensors in place of augmented views) ran at "
                 f"{step['images_per_s']:,.0f} images/s, and one loader worker made "
                 f"{step['augmentation_images_per_s_per_worker']:,.0f} images/s of its multi-crop views ({source}).")
    timed = gpu_epochs(bundles)
    if not timed:
        return text + " No whole epoch was timed on a GPU: no GPU run is committed."
    own = [t for t in timed if t.run.spec.dataset == dataset]
    if own:
        slower = step is not None and all(t.images_per_s < step["images_per_s"] for t in own)
        lead = f"Whole epochs, augmentation included, {'went slower' if slower else 'were timed too'}: "
    else:
        lead = f"No whole epoch of {dataset} was timed on a GPU. Those of the committed GPU runs, augmentation included: "
    return text + " " + lead + "; ".join(
        f"the {t.epochs} epochs of `{t.run.spec}` ({t.run.bundle.name}, {t.images:,} images each"
        f"{', on one ' + t.device if t.device else ''}) took {t.seconds:.0f} s of training, "
        f"{t.images_per_s:,.0f} images/s" for t in own or timed) + "."


def run_commands_markdown(family: Family) -> str:
    """*Run it yourself*: each command with its note, Colab's set-up cell, the estimated time of
    ``quick`` and ``paper`` (:mod:`ib_tutorial.training.cost`), and what a GPU measured."""
    commands = run_commands(family)
    name = family.gpu_spec.dataset
    parts = []
    for command in commands[:-1]:
        parts.append(f"**On {command.where} (`{command.tier}`)**: {command.note}\n\n```bash\n{command.line}\n```")
    colab = commands[-1]
    parts.append(
        f"**In Colab** (Runtime > Change runtime type > GPU): {colab.note}\n\n```ipython3\n"
        f"from google.colab import drive\ndrive.mount('/content/drive')\n"
        f"!git clone -q {REPOSITORY} && pip install -q -e ib-tutorial\n%cd ib-tutorial\n"
        f"!{colab.line}\n```\n\nThen download `results/quick-{name}` (a few hundred kB) and commit it.")
    quick, paper = estimate_run_time(name, "quick"), estimate_run_time(name, "paper")
    if quick is None:
        parts.append("No benchmark records are next to this package, so no time is estimated here.")
    else:
        low, high = paper.seconds
        parts.append(estimate_markdown(quick) + f"\n\nOn the same estimate `paper` takes {duration_text(low)} to "
                     f"{duration_text(high)}. A free Colab session can end without notice after some hours; the same "
                     "command, run again, resumes from the checkpoint on Drive.")
    parts.append(gpu_timing_markdown(name))
    return "\n\n".join(parts)
