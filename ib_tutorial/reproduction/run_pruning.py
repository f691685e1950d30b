"""A run's last network pruned: the spectral pruning curves of
:mod:`ib_tutorial.measure.pruning`, on the run's own k-NN images, written beside its profiles.

    <run>/pruning/<pool>-<epoch>.json    {"epoch", "pool", "keep_fraction", "chance", "blocks", "provenance"}
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..files import write_json_atomic
from ..measure.pruning import prune_blocks, pruning_record
from ..training.data import knn_image_sets
from ..training.runs import RunDirectory
from .records import provenance
from .run_profiles import profile_device


def prune_run(run_dir, epoch: int | None = None, pool: str = "mean", root=None, download: bool = False,
              device: str | torch.device | None = None) -> Path:
    """The pruning curves of the teacher of ``epoch`` (default: the last saved) of a run, on
    the run's own k-NN images, written to ``pruning/<pool>-<epoch>.json`` in the run
    directory (skipped when that file exists)."""
    run = RunDirectory(run_dir)
    config = run.read_config()
    epoch = run.backbone_epochs()[-1] if epoch is None else epoch
    path = run.path / "pruning" / f"{pool}-{epoch}.json"
    if path.exists():
        return path
    device = torch.device(device) if device is not None else profile_device(config)
    train_set, held_out_set = knn_image_sets(config, root, download)
    classes = len(train_set.dataset.classes)
    curves = prune_blocks(run.load_backbone(epoch, device), train_set, held_out_set, classes, pool,
                          k_neighbours=config.train.knn_k, temperature=config.train.knn_temperature, device=device)
    origin = provenance(preset=config.preset, config=config.to_dict(), dataset=config.dataset,
                        n_images=len(train_set) + len(held_out_set), n_tokens=curves[0].n_tokens, device=str(device))
    write_json_atomic(path, {"epoch": epoch, **pruning_record(curves, pool, classes, origin.to_dict())})
    return path
