"""The on-disk layout of a training run, and how to read one back.

A run directory holds::

    config.json                 every resolved setting of the run
    metrics.jsonl               one JSON record per line: {"kind": "train", ...} every few
                                steps, {"kind": "epoch", ...} (its wall time) after each
                                epoch, {"kind": "knn", ...} after each k-NN evaluation
    checkpoint.pt               the latest full training state (see ib_tutorial.dino_step)
    backbones/teacher-epoch0000.pt, ...
                                the teacher backbone's weights at initialisation and at
                                every checkpoint, for measuring how the blocks change

Every file is written whole to a temporary name and then renamed, so an interruption
never leaves a half-written checkpoint; ``metrics.jsonl`` is appended line by line.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import torch

from .files import atomic_write, write_json_atomic
from .models import build_vit
from .run_config import RunConfig

BACKBONE_PATTERN = re.compile(r"teacher-epoch(\d{4,})\.pt")


class RunDirectory:
    """Paths and atomic reads and writes of one run's files."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser()
        self.config_path = self.path / "config.json"
        self.metrics_path = self.path / "metrics.jsonl"
        self.checkpoint_path = self.path / "checkpoint.pt"
        self.backbones = self.path / "backbones"

    def exists(self) -> bool:
        """Whether a run was started here (it wrote its configuration)."""
        return self.config_path.exists()

    # --- configuration ---------------------------------------------------------
    def write_config(self, config: RunConfig) -> None:
        write_json_atomic(self.config_path, config.to_dict())

    def read_config(self) -> RunConfig:
        if not self.exists():
            raise FileNotFoundError(f"{self.path} is not a training run (no config.json); train one with `ib-tutorial train`.")
        return RunConfig.from_dict(json.loads(self.config_path.read_text()))

    # --- metrics ---------------------------------------------------------------
    def append_metrics(self, record: dict) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        with self.metrics_path.open("a") as file:
            file.write(json.dumps(record) + "\n")

    def read_metrics(self, kind: str | None = None) -> list[dict]:
        """All records, or those of one ``kind`` (``"train"``, ``"epoch"`` or ``"knn"``), in order."""
        if not self.metrics_path.exists():
            return []
        records = [json.loads(line) for line in self.metrics_path.read_text().splitlines() if line.strip()]
        return [r for r in records if kind is None or r["kind"] == kind]

    def truncate_metrics(self, last_step: int) -> None:
        """Drop the records after step ``last_step`` (those a resumed run will write again)."""
        kept = [r for r in self.read_metrics() if r["step"] <= last_step]
        text = "".join(json.dumps(r) + "\n" for r in kept)
        atomic_write(self.metrics_path, lambda f: f.write(text.encode()))

    # --- checkpoints -----------------------------------------------------------
    def save_checkpoint(self, state: dict) -> None:
        atomic_write(self.checkpoint_path, lambda f: torch.save(state, f))

    def load_checkpoint(self, map_location: str | torch.device = "cpu") -> dict | None:
        """The latest checkpoint, or ``None`` when the run has none yet."""
        if not self.checkpoint_path.exists():
            return None
        return torch.load(self.checkpoint_path, map_location=map_location, weights_only=True)

    def save_backbone(self, state_dict: dict, epoch: int) -> None:
        atomic_write(self.backbone_path(epoch), lambda f: torch.save(state_dict, f))

    def backbone_path(self, epoch: int) -> Path:
        return self.backbones / f"teacher-epoch{epoch:04d}.pt"

    def backbone_epochs(self) -> list[int]:
        """Epochs with a saved teacher backbone (0 is the random initialisation)."""
        if not self.backbones.exists():
            return []
        found = (BACKBONE_PATTERN.fullmatch(p.name) for p in self.backbones.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def load_backbone(self, epoch: int | None = None, device: str | torch.device = "cpu") -> torch.nn.Module:
        """The teacher ViT of ``epoch`` (default: the latest saved), in eval mode.

        Built with the run's input and patch size; epoch 0 is the initialisation the
        run started from, the baseline against which training is judged.
        """
        epochs = self.backbone_epochs()
        if not epochs:
            raise FileNotFoundError(f"No backbones saved under {self.backbones}; has the run started?")
        chosen = epochs[-1] if epoch is None else epoch
        if chosen not in epochs:
            raise FileNotFoundError(f"No backbone for epoch {chosen} in {self.backbones}; saved epochs: {epochs}")
        config = self.read_config()
        model = build_vit(config.model["arch"], config.view.img_size, config.view.patch_size)
        state = torch.load(self.backbone_path(chosen), map_location="cpu", weights_only=True)
        model.load_state_dict(state)
        return model.to(device).eval()
