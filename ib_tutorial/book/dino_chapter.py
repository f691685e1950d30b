"""What the DINO chapter renders: the views of a few images, the two forces of the loss on a
toy teacher, the schedules, a live run's curves, and what DINO needs to learn."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import torch

from ..models import ARCHITECTURES, MODEL_NAMES
from ..presets import PRESETS, Preset
from ..training import augment, dino
from ..training.schedules import Schedules
from .lab_notes import ComputeCurve, NoteRow, PublishedPoint, Value, line_styles, rows_spread, student_tokens
from .plots import add_caption


def plot_views(images, view, seed: int, preset: str, count: int = 3, local_crops: int = 4) -> plt.Figure:
    """The first ``count`` images beside their two global and ``local_crops`` local views at epoch 0."""
    crops = augment.MultiCropDataset(images, augment.MultiCropAugmentation(view, local_crops_number=local_crops), seed=seed)
    mean, std = (torch.tensor(v)[:, None, None] for v in (augment.IMAGENET_MEAN, augment.IMAGENET_STD))
    titles = ["image", "global 1", "global 2"] + [f"local {i + 1}" for i in range(local_crops)]
    fig, axes = plt.subplots(count, len(titles), figsize=(9, 1.4 * count), layout="constrained", squeeze=False)
    for row in range(count):
        original, label = images[row]
        axes[row, 0].imshow(original)
        axes[row, 0].set_ylabel(images.classes[label], fontsize="small")
        for column, crop in enumerate(crops[row][0], start=1):
            axes[row, column].imshow((crop * std + mean).clamp(0, 1).permute(1, 2, 0))
    for ax, title in zip(axes[0], titles):
        ax.set_title(title, fontsize="small")
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Each image becomes two global views and several smaller local ones.", fontsize="medium")
    add_caption(fig, f"preset {preset}: {view.img_size} px global, {view.local_crop_size} px local; seed {seed}, epoch 0; "
                     "de-normalised for display")
    return fig


def centring_sharpening(temperatures: Sequence[float] = (0.02, 0.04, 0.1, 1.0), k: int = 256,
                        images: int = 512) -> list[tuple[bool, float, float, float]]:
    """A toy teacher, logits a large part shared by all ``images`` plus a small part of each one's
    own: rows of (centred, temperature, mean entropy per image, entropy of the mean), in nats."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(1, k, generator=generator) * 0.3 + torch.randn(images, k, generator=generator) * 0.1
    rows = []
    for centred in (False, True):
        shifted = logits - logits.mean(0, keepdim=True) if centred else logits
        for temperature in temperatures:
            probs = torch.softmax(shifted / temperature, dim=-1)
            rows.append((centred, temperature, dino.entropy(probs).item(), dino.entropy(probs.mean(0, keepdim=True)).item()))
    return rows


def centring_table(temperatures: Sequence[float] = (0.02, 0.04, 0.1, 1.0), k: int = 256) -> str:
    """:func:`centring_sharpening` as a Markdown table, a row per teacher and temperature."""
    lines = [f"| teacher | temperature | H(P) per image (nats) | H(mean P) (nats; log K = {math.log(k):.2f}) |",
             "| --- | ---: | ---: | ---: |"]
    lines += [f"| {'centred' if centred else 'not centred'} | {temperature:g} | {per_image:.2f} | {of_mean:.2f} |"
              for centred, temperature, per_image, of_mean in centring_sharpening(temperatures, k)]
    return "\n".join(lines)


def run_provenance(config, preset: str) -> str:
    """The provenance line of a run's figures, from its ``config.json``."""
    return (f"preset {preset}: {config.dataset}, {config.train_images_used} training images, "
            f"{config.train.epochs} epochs x {config.steps_per_epoch} steps of batch {config.train.batch_size}, "
            f"{config.view.img_size} px / patch {config.view.patch_size}, K = {config.train.out_dim}, "
            f"{config.precision} on {config.device}")


def profile_change(before, after) -> str:
    """How far training moved the EED profile, at the block it moved most and on average."""
    change = [b - a for a, b in zip(before.eed_percent, after.eed_percent)]
    moved = max(range(len(change)), key=lambda block: abs(change[block]))
    return (f"Training moved the profile by at most {abs(change[moved]):.2f} EED points, at block L{moved} "
            f"({before.eed_percent[moved]:.2f} % -> {after.eed_percent[moved]:.2f} %); averaged over the blocks, by "
            f"{sum(change) / len(change):+.2f} points.")


def plot_schedules(preset: Preset, train_images: int = 50_000) -> plt.Figure:
    """Every schedule of ``preset`` on ``train_images`` images (CIFAR-100's training set by default)."""
    train = preset.train
    per_epoch = train_images // train.batch_size
    schedules = Schedules.of(train, per_epoch)
    epoch = torch.arange(len(schedules.lr)) / per_epoch
    fig, axes = plt.subplots(2, 2, figsize=(9, 5), layout="constrained")
    for ax, values, label in zip(axes.flat, (schedules.lr, schedules.weight_decay, schedules.momentum),
                                 ("learning rate", "weight decay", "teacher momentum m")):
        ax.plot(epoch, values)
        ax.set_ylabel(label)
    temperature = torch.arange(len(schedules.teacher_temp))
    axes[1, 1].step(temperature, schedules.teacher_temp, where="post")
    axes[1, 1].set_ylabel("teacher temperature")
    for ax in axes.flat:
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
    fig.suptitle("Every schedule of a DINO run is fixed before its first step.", fontsize="medium")
    add_caption(fig, f"Schedules.of for the {preset.name} preset: batch {train.batch_size}, "
                     f"{per_epoch} steps an epoch ({train_images:,} images); no training run")
    return fig


def plot_live_run(steps: Sequence[dict], knn: Sequence[dict], out_dim: int, chance: float, provenance: str) -> plt.Figure:
    """A run's loss and its two parts, the entropies between the two collapses, and its k-NN accuracy."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), layout="constrained")
    step = [r["step"] for r in steps]
    for key, label in (("loss", "loss = H(P_t) + KL"), ("teacher_entropy", "teacher entropy H(P_t)"), ("kl", "KL(P_t || P_s)")):
        axes[0].plot(step, [r[key] for r in steps], label=label)
    for key, label in (("teacher_entropy", "teacher"), ("student_entropy", "student"),
                       ("teacher_usage", "teacher batch mean H(mean P_t)")):
        axes[1].plot(step, [r[key] for r in steps], label=label)
    axes[1].axhline(math.log(out_dim), color="0.4", linestyle="--", label="log K (uniform)")
    axes[1].axhline(0, color="0.4", linestyle=":", label="0 (one-hot)")
    epochs = [r["epoch"] for r in knn]
    axes[2].plot(epochs, [r["top1"] for r in knn], marker="o", label="CLS token")
    axes[2].plot(epochs, [r["top1_mean"] for r in knn], marker="s", linestyle="--", label="mean patch token")
    axes[2].axhline(chance, color="0.4", linestyle=":", label="chance")
    axes[2].set_ylim(0, max(3 * chance, max(max(r["top1"], r["top1_mean"]) for r in knn) + 10))
    for ax, ylabel, xlabel in zip(axes, ("nats", "entropy (nats)", "k-NN top-1 (%)"),
                                  ("training step", "training step", "epoch (0 = random initialisation)")):
        ax.set(ylabel=ylabel, xlabel=xlabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle("The loss, the teacher's entropy between the two collapses, and the k-NN accuracy of a live run.",
                 fontsize="medium")
    add_caption(fig, provenance)
    return fig


def plot_compute(curves: Sequence[ComputeCurve], published: Sequence[PublishedPoint], provenance: str) -> plt.Figure:
    """k-NN gain against images seen times student tokens per image: each committed run a line (a
    filled end where it learned by the book's rule), each published point a star (gain over chance)."""
    fig, ax = plt.subplots(figsize=(9, 6.5), layout="constrained")
    for curve, style in zip(curves, line_styles(len(curves))):
        shown = [(x, y) for x, y in zip(curve.compute, curve.gains) if x > 0]
        ax.plot(*zip(*shown), marker="o", markersize=3, lw=1.3, label=f"{curve.label}, {curve.tokens_per_image} tokens",
                **style)
        ax.plot(*shown[-1], marker="o", markersize=8, color=style["color"],
                markerfacecolor=style["color"] if curve.learned else "white")
    for point in published:
        ax.plot(point.compute, point.gain_bound, marker="*", markersize=14, linestyle="none", color="k",
                label=f"{point.label} ({point.dataset}, {point.tokens_per_image} tokens): points over chance")
    ax.axhline(0, color="0.5", lw=1)
    ax.set(xscale="log", xlabel="images seen x student tokens per image", ylabel="CLS k-NN gain (points)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, fontsize="x-small")  # under the axes, off the data
    fig.suptitle("What DINO needs to learn: the k-NN points a run gained against the tokens it read.", fontsize="medium")
    add_caption(fig, provenance)
    return fig


def preset_differences(presets: Mapping[str, Preset] = PRESETS, dataset: str = "tiny-imagenet") -> tuple[str, list[str]]:
    """A Markdown table of every training setting in which a preset differs from ``paper``, and
    each preset's input and patch size on ``dataset``; and the settings that differ."""
    paper = presets["paper"].train
    names = [f.name for f in dataclasses.fields(paper)]
    differing = [n for n in names if any(getattr(p.train, n) != getattr(paper, n) for p in presets.values())]
    lines = ["| setting | " + " | ".join(f"`{name}`" for name in presets) + " |", "|---" * (len(presets) + 1) + "|"]
    lines += [f"| {n} | " + " | ".join(_setting(p, n) for p in presets.values()) + " |" for n in differing]
    views = [p.view(dataset) for p in presets.values()]
    lines.append(f"| {dataset} input / patch | " + " | ".join(f"{v.img_size} px / {v.patch_size}" for v in views) + " |")
    return "\n".join(lines), differing


def _setting(preset: Preset, name: str) -> str:
    value = getattr(preset.train, name)
    if name == "arch":
        width = ARCHITECTURES[value]["embed_dim"]
        return f"{MODEL_NAMES[width]} (D = {width})"
    if value is None:
        return "all" if name.endswith("images") else "default"
    return f"{value:g}" if isinstance(value, float) else str(value)


_FRACTIONS = {20: "twentieth", 25: "twenty-fifth", 30: "thirtieth", 40: "fortieth", 50: "fiftieth"}


def needs_values(published: PublishedPoint, laptop: Preset, tier: Sequence[NoteRow], floor_rows: Sequence[NoteRow],
                 dataset: str = "tiny-imagenet") -> dict[str, Value]:
    """What the "what DINO needs" paragraph states of the published point, the ``laptop`` tier's
    runs and the recipe rows."""
    train, view = laptop.train, laptop.view(dataset)
    images = train.epochs * (train.train_images // train.batch_size) * train.batch_size
    tokens = student_tokens(view.img_size, view.local_crop_size, view.patch_size, train.local_crops_number)
    ratio = published.compute / (images * tokens)
    ran = [row for row in tier if row.recipe.dataset == dataset]
    other = [row for row in tier if row.recipe.dataset != dataset]
    spread, two_se = rows_spread(floor_rows, dataset)
    values = {"published_network": published.network, "published_data": published.dataset,
              "published_knn": f"{published.knn_top1:g}", "published_epochs": str(published.epochs),
              "published_images": f"{published.images_seen:,}", "published_tokens": str(published.tokens_per_image),
              "tier_epochs": str(train.epochs), "tier_images": f"{images:,}", "tier_tokens": str(tokens),
              "ratio_words": _FRACTIONS.get(round(ratio), f"1/{ratio:.0f}"),
              "tier_gains": " and ".join(f"{row.rule.knn.learned:+.1f}" for row in ran),
              "tier_thresholds": " and ".join(f"{row.rule.knn.threshold:.1f}" for row in ran),
              "other_images": " and ".join(sorted({str(row.n_eval) for row in other})),
              "other_thresholds": " and ".join(f"{row.rule.knn.threshold:.1f}" for row in other),
              "rows_spread": f"{spread:.1f}", "rows_two_se": f"{two_se:.1f}"}
    raw = {"ratio": ratio, "tier_compute": images * tokens, "published_gain": published.gain_bound, "tier_learned": sum(row.rule.learned for row in ran),
           "other_learned": sum(row.rule.learned for row in other),
           "rows_spread": spread, "rows_two_se": two_se}
    return {key: Value(raw.get(key, text), text) for key, text in values.items()} | {
        key: Value(value, f"{value:g}") for key, value in raw.items() if key not in values}


def gpu_plan_values(paper: Preset, batch: int, min_steps: int, published: PublishedPoint, laptop_compute: float,
                    gpu_run: ComputeCurve | None, dataset: str = "tiny-imagenet") -> dict[str, Value]:
    """What the device plan trains (the ``paper`` recipe, at least ``min_steps`` steps) against the
    ``laptop`` tier's compute and the published point; and the committed GPU run."""
    view, train = paper.view(dataset), paper.train
    tokens = student_tokens(view.img_size, view.local_crop_size, view.patch_size, train.local_crops_number)
    images = batch * min_steps
    compute = images * tokens
    width = ARCHITECTURES[train.arch]["embed_dim"]
    values = {"gpu_network": Value(train.arch, f"{MODEL_NAMES[width]}/{view.patch_size} at {view.img_size} px"),
              "gpu_batch": Value(batch, str(batch)), "gpu_steps": Value(min_steps, f"{min_steps:,}"),
              "gpu_images": Value(images, f"{images:,}"), "gpu_tokens": Value(tokens, str(tokens)),
              "gpu_times_laptop": Value(compute / laptop_compute, f"{compute / laptop_compute:.0f}"),
              "gpu_share_published": Value(compute / published.compute, f"{100 * compute / published.compute:.0f} %")}
    if gpu_run is not None:
        values |= {"gpu_run_steps": Value(gpu_run.steps, f"{gpu_run.steps:,}"),
                   "gpu_run_batch": Value(gpu_run.batch_size, str(gpu_run.batch_size)),
                   "gpu_run_gain": Value(gpu_run.gains[-1], f"{gpu_run.gains[-1]:+.1f}"),
                   "gpu_run_images": Value(gpu_run.images_seen[-1], f"{gpu_run.images_seen[-1]:,}")}
    return values
