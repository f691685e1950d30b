"""The caption line of every figure drawn from stored results: what was measured, on
which data, by which code, and whether the run was reduced.
"""
from __future__ import annotations

from ..models import MODEL_NAMES
from ..presets import PRESETS
from ..reproduction.bundles import Bundle
from ..reproduction.dataset_runs import DatasetRun
from ..reproduction.records import ProfileRecord


def _reduced(preset: str) -> str:
    """The caption's flag for a run of an illustrative preset (:attr:`~ib_tutorial.presets.Preset.illustrative`)."""
    illustrative = preset in PRESETS and PRESETS[preset].illustrative
    return " (reduced: a few training steps, illustrative only)" if illustrative else ""


def profile_caption(record: ProfileRecord) -> str:
    """The caption line of a figure drawn from a profile record: preset (flagged when
    reduced), model and width, images, tokens, centring, and the code that measured it."""
    p, profile = record.provenance, record.profile
    reduced = _reduced(p.preset)
    model = MODEL_NAMES.get(profile.dim, "ViT")
    centring = "centred" if profile.center else "uncentred"
    what = record.label if record.label.startswith(p.dataset) else f"{p.dataset}: {record.label}"
    return (f"preset {p.preset}{reduced}; {what}; {model} (D = {profile.dim}; "
            f"EED% of {profile.dim}), {p.n_images} held-out images, {p.n_tokens:,} tokens "
            f"({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


def pruning_caption(record: dict) -> str:
    """The caption line of a figure drawn from a pruning record: what was pruned, on which
    images, by which code."""
    p = record["provenance"]
    reduced = _reduced(p["preset"])
    return (f"preset {p['preset']}{reduced}; {p['dataset']}: teacher of epoch {record['epoch']}, {record['pool']}-pooled "
            f"features; directions fitted on {record['blocks'][0]['n_tokens']:,} training tokens; k-NN over "
            f"{p['n_images']:,} images (train against held-out); code {p['code_version'][:10]}")


def bundle_caption(bundle: Bundle) -> str:
    """What made the bundle, from the newest profile of its first run (see
    :func:`profile_caption`), with every run's held-out images, and every run's width where
    the runs differ in it (the first run's model would otherwise name them all)."""
    newest = next(iter(bundle.runs.values())).profiles[-1]
    images = ", ".join(f"{spec} {run.profiles[-1].provenance.n_images}" for spec, run in bundle.runs.items())
    widths = {spec: run.profiles[-1].profile.dim for spec, run in bundle.runs.items()}
    if len(set(widths.values())) > 1:
        runs = ", ".join(f"{spec} {MODEL_NAMES.get(dim, 'ViT')} (D = {dim})" for spec, dim in widths.items())
        return (f"bundle {bundle.name}, runs of several widths ({runs}); its first run: {profile_caption(newest)}; "
                f"held-out images per dataset: {images}")
    return f"bundle {bundle.name}: {profile_caption(newest)}; held-out images per dataset: {images}"


def run_caption(entry: DatasetRun) -> str:
    """What made a dataset run's figures: the bundle, the run, and its last profile's
    provenance (:func:`profile_caption`)."""
    return f"bundle {entry.bundle.name}, run {entry.spec}: {profile_caption(entry.run.profiles[-1])}"


def published_caption(record: ProfileRecord) -> str:
    """The caption line of a figure drawn from a published model's profile record: the
    model, its weights (file or hub, with their SHA-256), input, data, tokens, centring
    and the code that measured it."""
    p, profile = record.provenance, record.profile
    centring = "centred" if profile.center else "uncentred"
    return (f"{p.model} (D = {profile.dim}), weights {p.weights} (SHA-256 {p.weights_sha256[:12]}), "
            f"{p.input_size} px; {p.dataset_spec}: {p.n_images} held-out images of preset {p.preset}, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")
