"""Train, profile and prune each dataset, then compare with the paper: one resumable command.

    ib-tutorial reproduce --preset NAME [--datasets ...] [--out DIR]

A dataset is a run spec (:class:`~ib_tutorial.training.run_config.RunSpec`): options after
``:`` (``synthetic-mix:texture_weight=0.5``, which runs in ``synthetic-mix_texture_weight=0.5/``)
and settings after ``@`` (``tiny-imagenet@objective=supervised``). Only DINO runs are compared
with the paper. Layout of ``DIR``::

    <dataset>/              a training run (ib_tutorial.training.runs) with profiles/<epoch>.json,
                            the other measurements in profiles/<variant>/<epoch>.json,
                            pruning/mean-<last epoch>.json (ib_tutorial.measure.pruning), and
                            on a world with objects factors.json (ib_tutorial.book.run_profiles)
    comparison.md           the table against the paper, written from the summary by
                            ib_tutorial.book.tables.write_comparison_table
    summary.json            per dataset: random-init and final profiles, k-NN accuracy, the
                            raw-patch baseline, the comparison rows and the final profile's
                            provenance; with ``pretrained``, each published model's EED% profile
    pretrained/<dataset>/<model>/profiles/<tokens>-<centred|uncentred>.json

Finished work is never redone: a finished run is not trained again, a run that stopped part-way
resumes from its checkpoint, and existing profiles and pruning curves are kept.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..compact import compact_folder
from ..files import atomic_folder, data_root, display_path, write_json_atomic
from ..models import PROFILE_IMG_SIZE, PretrainedUnavailable
from ..presets import Preset, get_preset
from ..training.loop import train
from ..training.run_config import RunSpec
from ..training.runs import RunDirectory
from .paper import PAPER_DATASETS, run_comparison
from .pretrained import profile_published
from .records import load_profile_record
from .run_profiles import FILE as FACTORS_FILE
from .run_profiles import (has_object_factors, load_run_profiles, measure_factors, profile_pretrained, profile_run,
                           profile_variants, prune_run, raw_patch_eed)


def summarise_run(spec: RunSpec, run_dir: Path, root=None, download: bool = False) -> dict:
    """One run's entry of ``summary.json``."""
    records = load_run_profiles(run_dir)
    if not records:
        raise FileNotFoundError(f"{run_dir} has no profiles; run `ib-tutorial profile {run_dir}`")
    first, last = records[0], records[-1]
    run = RunDirectory(run_dir)
    knn = run.read_metrics("knn")
    raw_n_eff, raw_dim = raw_patch_eed(run_dir, root=root, download=download)
    config = run.read_config()
    rows = run_comparison(str(spec), last.profile.eed_percent, config) if config.objective.compared_with_paper else []
    return {
        "run": str(run_dir),
        "epochs": [r.epoch for r in records],
        "random_init_eed_percent": first.profile.eed_percent if first.epoch == 0 else None,
        "final_epoch": last.epoch,
        "final_eed_percent": last.profile.eed_percent,
        "knn_accuracy": knn[-1] if knn else None,
        "knn_accuracy_first": knn[0] if knn else None,
        "raw_patch_n_eff": raw_n_eff,
        "raw_patch_dim": raw_dim,
        "comparison": [dataclasses.asdict(row) for row in rows],
        "provenance": last.provenance.to_dict(),
    }


def reproduce(
    preset: str | Preset | None = None,
    datasets: Sequence[str | RunSpec] = PAPER_DATASETS,
    out: str | os.PathLike | None = None,
    root=None,
    download: bool = False,
    progress: bool = True,
    pretrained_control: bool = False,
    all_measurements: bool = True,
    pretrained: Sequence[str] = (),
    weights: Mapping[str, str | os.PathLike] | None = None,
) -> Path:
    """Train, profile, prune and measure the object factors of every dataset into ``out``
    (default ``<data root>/reproduce/<preset>``), then write ``summary.json``.

    ``pretrained_control`` also profiles timm's pretrained DINO ViT-S/16 on each dataset's
    profile images; ``all_measurements=False`` keeps to the default profiles (a quick look at
    extra runs); ``pretrained`` names published timm models to profile with every measurement
    (:func:`~ib_tutorial.book.pretrained.profile_published`), ``weights`` their local state
    dicts. A model whose weights cannot be had is reported and skipped.
    """
    preset = preset if isinstance(preset, Preset) else get_preset(preset)
    out = Path(out) if out is not None else data_root(root) / "reproduce" / preset.name
    summary = {"preset": preset.name, "datasets": {}}
    for spec in map(RunSpec.of, datasets):  # parsed here, once
        run_dir = out / spec.folder
        run = RunDirectory(run_dir)
        if run.exists() and run.read_config().train.epochs in run.backbone_epochs():
            print(f"{spec}: training finished earlier in {display_path(run_dir)}; skipped")
        else:
            train(spec.dataset, preset, out=run_dir, resume=run.exists(), root=root, download=download,
                  dataset_options=spec.options, progress=progress, **spec.overrides)
        profile_run(run_dir, root=root, download=download, progress=progress)
        if all_measurements:
            profile_variants(run_dir, root=root, download=download, progress=progress)
            prune_run(run_dir, root=root, download=download)
            if has_object_factors(run_dir):  # what the first and the last teacher learned besides the class
                saved = run.backbone_epochs()
                measure_factors(run_dir, sorted({saved[0], saved[-1]}), root=root, download=download, progress=progress)
        summary["datasets"][spec.text] = summarise_run(spec, run_dir, root, download)
        control = profile_pretrained(run_dir, root=root, download=download) if pretrained_control else None
        if control is not None:
            summary["datasets"][spec.text]["pretrained_dino_eed_percent"] = load_profile_record(control).profile.eed_percent
        for name in pretrained:
            profiled = profile_published_or_say_why(name, spec, out / PRETRAINED_FOLDER,
                                                    (weights or {}).get(name), preset, root, download, progress)
            if profiled:
                summary.setdefault("pretrained", {}).setdefault(spec.text, {})[name] = \
                    load_profile_record(profiled[0]).profile.eed_percent
        write_json_atomic(out / "summary.json", summary)  # after each dataset: partial results survive
    return out


def profile_published_or_say_why(name: str, spec: RunSpec, out: Path, weights, preset: Preset, root, download: bool,
                                 progress: bool) -> list[Path]:
    """:func:`~ib_tutorial.book.pretrained.profile_published` at the book's input side for the
    model (:data:`~ib_tutorial.models.PROFILE_IMG_SIZE`), or, without its weights, the reason
    printed and nothing."""
    try:
        return profile_published(name, spec, out, weights=weights, preset=preset, root=root, download=download,
                                 progress=progress, img_size=PROFILE_IMG_SIZE.get(name))
    except PretrainedUnavailable as error:
        print(f"{spec}: {name} not profiled: {error}")
        return []


SMALL_RUN_FILES = ("config.json", "metrics.jsonl")
PRETRAINED_FOLDER = "pretrained"  # <out>/pretrained/<dataset>/<model>/profiles/*.json


def export_bundle(out: str | os.PathLike, dest: str | os.PathLike, allow_dirty: bool = False) -> Path:
    """Copy a reproduction from ``out`` to ``dest`` but its checkpoints and weights, a few hundred
    kilobytes for committing under ``results/``, stored compact (:mod:`ib_tutorial.compact`).
    An existing ``dest`` is replaced whole once the copy is complete.

    Refuses (ValueError) a profile measured by uncommitted code (``code_version`` ending in
    ``+dirty``) unless ``allow_dirty``: committed results must name a commit that can make them again.
    """
    out, dest = Path(out), Path(dest)
    summary = out / "summary.json"
    if not summary.exists():
        raise FileNotFoundError(f"{out} holds no summary.json; run `ib-tutorial reproduce --out {out}` first")
    dirty = [path for path in sorted(out.glob("*/profiles/**/*.json"))
             if load_profile_record(path).provenance.code_version.endswith("+dirty")]
    if dirty and not allow_dirty:
        raise ValueError(
            f"{len(dirty)} profiles were measured by uncommitted code, e.g. {dirty[0]}. Commit, delete the runs' "
            "profiles/ folders and run `ib-tutorial reproduce` again (it only re-profiles), or export with --allow-dirty.")
    exported = json.loads(summary.read_text())
    for entry in exported["datasets"].values():  # the run folder relative to the bundle, not this machine's path
        entry["run"] = Path(entry["run"]).name

    def fill(folder: Path) -> None:
        write_json_atomic(folder / "summary.json", exported)
        if (out / "comparison.md").exists():
            shutil.copy2(out / "comparison.md", folder / "comparison.md")
        for run in sorted(p.parent for p in out.glob("*/config.json")):
            (folder / run.name).mkdir()
            for name in SMALL_RUN_FILES:
                shutil.copy2(run / name, folder / run.name / name)
            if (run / FACTORS_FILE).exists():
                shutil.copy2(run / FACTORS_FILE, folder / run.name / FACTORS_FILE)
            for measured in ("profiles", "pruning", "measurement"):
                if (run / measured).exists():
                    shutil.copytree(run / measured, folder / run.name / measured)
        if (out / PRETRAINED_FOLDER).exists():  # the published models' profiles: JSON only, no weights
            shutil.copytree(out / PRETRAINED_FOLDER, folder / PRETRAINED_FOLDER)
        compact_folder(folder)  # the records in the form the repository stores (ib_tutorial.compact)

    atomic_folder(dest, fill)  # a bundle is replaced whole, or not at all
    return dest
