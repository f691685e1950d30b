"""What the chapter "Converged ViTs" renders: which published models were profiled on
which data, their profiles beside the paper's ranges and our trained runs, the claims
tested on them, and the measurement question (:mod:`ib_tutorial.reproduction.converged`
computes it all)."""
from __future__ import annotations

import shlex
from collections.abc import Mapping

import matplotlib.pyplot as plt

from ..models import PRETRAINED_DINO, PROFILE_IMG_SIZE, PUBLISHED_VIT_SMALL
from ..reproduction.converged import (
    CONVERGED_DATASETS,
    DEFAULT_MEASUREMENT,
    Comparison,
    closest_measurement,
    range_checks,
)
from ..reproduction.dataset_runs import DatasetRun
from ..reproduction.paper import REPORTED
from ..reproduction.records import ProfileRecord
from .captions import published_caption
from .plots import add_caption, panel_grid, plot_block_profile

def profile_command(dataset: str, models=PUBLISHED_VIT_SMALL) -> str:
    """The commands that profile ``models`` on ``dataset`` into the folder this chapter reads."""
    plain = [model for model in models if model not in PROFILE_IMG_SIZE]
    lines = [shlex.join(["ib-tutorial", "profile-pretrained", *plain, "--dataset", dataset, "--download"])] if plain else []
    lines += [shlex.join(["ib-tutorial", "profile-pretrained", model, "--dataset", dataset, "--download",
                          "--img-size", str(size)]) for model, size in PROFILE_IMG_SIZE.items() if model in models]
    return "\n".join(lines)


def availability_markdown(profiles: Mapping[str, Mapping[str, dict]]) -> str:
    """A table of which model was profiled on which dataset, and for every dataset with a
    model missing, the command that profiles it (nothing stands in for it here)."""
    # A row per model: its long name wraps in the first column, the datasets' short names head the others.
    lines = ["| model | " + " | ".join(CONVERGED_DATASETS) + " |", "| --- |" + " --- |" * len(CONVERGED_DATASETS)]
    lines += [f"| `{model}` | " + " | ".join("profiled" if model in profiles.get(dataset, {}) else "-"
                                             for dataset in CONVERGED_DATASETS) + " |" for model in PUBLISHED_VIT_SMALL]
    missing = []
    for dataset in CONVERGED_DATASETS:
        absent = [model for model in PUBLISHED_VIT_SMALL if model not in profiles.get(dataset, {})]
        if absent:
            missing.append(f"- **{dataset}**: {len(absent)} of {len(PUBLISHED_VIT_SMALL)} models not profiled; on a "
                           f"machine with a network (the weights and the data are downloaded once):\n\n"
                           f"  ```bash\n  {profile_command(dataset, absent).replace(chr(10), chr(10) + '  ')}\n  ```")
    text = "\n".join(lines)
    if missing:
        text += ("\n\nWhat is not here is not shown, and nothing stands in for it. To fill the gaps:\n\n"
                 + "\n".join(missing))
    return text


def plot_converged(profiles: Mapping[str, Mapping[str, Mapping[str, ProfileRecord]]], trained: Mapping[str, DatasetRun],
                   measurement: str = DEFAULT_MEASUREMENT) -> plt.Figure:
    """One panel per dataset: each published model's profile (``measurement``), the paper's
    reported ranges, and the longest trained run of ours on that dataset (by objective)."""
    fig, axes = panel_grid(len(profiles), 5.0, 3.8)
    captions = []
    for ax, (dataset, models) in zip(axes, profiles.items()):
        lines = {model: records[measurement].profile for model, records in models.items()
                 if measurement in records}
        for key, entry in trained.items():
            if key.startswith(dataset + " "):
                lines[f"ours: {key} (epoch {entry.run.profiles[-1].epoch})"] = entry.run.profiles[-1].profile
        plot_block_profile(lines, caption="", ax=ax, title=dataset, reported=REPORTED.get(dataset), full_range=True)
        first = next(records for records in models.values() if measurement in records)[measurement]
        captions.append(f"{dataset}: {published_caption(first)}")
    fig.suptitle(f"Published, converged ViTs: EED per block ({measurement})")
    add_caption(fig, "; ".join(captions) + ". Our runs: the trained runs of the chapter \"Networks that learned\" "
                "(ViT-Tiny, D = 192, 32 px; EED% of 192).")
    return fig


def ranges_markdown(profiles: Mapping[str, Mapping[str, dict]], measurement: str = DEFAULT_MEASUREMENT) -> str:
    """Each model's statistics against the paper's reported ranges, per dataset it studied."""
    lines = ["| dataset | model | statistic | ours (EED%) | paper | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for dataset, models in profiles.items():
        for model, records in models.items():
            for check in range_checks(dataset, records[measurement]) if measurement in records else []:
                verdict = "inside" if check.inside else f"{check.off_by:+.1f} points outside"
                lines.append(f"| {dataset} | `{model}` | {check.statistic} | {check.value:.1f} | "
                             f"{check.reported[0]:g}-{check.reported[1]:g} | {verdict} |")
    return "\n".join(lines) if len(lines) > 2 else "The paper reports no range for the datasets profiled here."


def comparisons_markdown(comparisons: list[Comparison]) -> str:
    """DINO against the other objectives at the same width: the middle dips side by side."""
    if not comparisons:
        return (f"No dataset has both `{PRETRAINED_DINO}` and a supervised or DINOv2 ViT-S profiled, so the "
                "objectives cannot be compared here.")
    lines = ["| dataset | DINO ViT-S/16 middle dip | compared with | its middle dip | DINO minus it |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {c.dataset} | {c.first_dip:.1f} | `{c.second}` | {c.second_dip:.1f} | {c.difference:+.1f} |"
              for c in comparisons]
    return "\n".join(lines) + ("\n\nA middle dip is the lower of the early (L0-L1) and late (L9-L11) blocks' mean N_eff "
                               "minus the middle blocks' (L2-L4), in effective directions, signed (negative where "
                               "the middle lies above either end).")


def measurement_markdown(profiles: Mapping[str, Mapping[str, dict]], model: str = PRETRAINED_DINO) -> str:
    """For ``model`` on each dataset the paper studied: every measurement's distance from
    the paper's ranges, and the one that comes nearest."""
    lines = ["| dataset | measurement | early | minimum | late | points outside the ranges |",
             "| --- | --- | --- | --- | --- | --- |"]
    sentences = []
    for dataset, models in profiles.items():
        records = models.get(model, {})
        for measurement, record in records.items():
            checks = {check.statistic: check for check in range_checks(dataset, record)}
            if not checks:
                continue
            cells = [f"{checks[s].value:.1f}" if s in checks else "-" for s in ("early", "minimum", "late")]
            lines.append(f"| {dataset} | {measurement} | " + " | ".join(cells)
                         + f" | {sum(abs(c.off_by) for c in checks.values()):.1f} |")
        nearest = closest_measurement(dataset, records)
        if nearest is not None:
            measurement, distance = nearest
            sentences.append(f"On {dataset}, {measurement} comes nearest, {distance:.1f} points outside the ranges in all"
                             + (": inside every range the paper reports." if distance == 0 else "."))
    if not sentences:
        return f"`{model}` was not profiled on a dataset the paper reports ranges for."
    return "\n".join(lines) + "\n\n" + " ".join(sentences)
