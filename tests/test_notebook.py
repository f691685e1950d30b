"""The chapters' set-up: where the chapters that call reproduce keep their runs."""
from pathlib import Path

import torch

from ib_tutorial.notebook import ChapterSetup
from ib_tutorial.presets import get_preset
from ib_tutorial.book import records


def chapter(root: Path, preset: str) -> ChapterSetup:
    return ChapterSetup(get_preset(preset), torch.device("cpu"), root)


def test_other_presets_keep_one_folder_per_preset(tmp_path):
    assert chapter(tmp_path, "laptop").reproduce_folder() == tmp_path / "reproduce" / "laptop"


def test_ci_runs_are_kept_per_source_and_those_of_other_code_removed(tmp_path, monkeypatch):
    old = tmp_path / "reproduce" / "ci-0123456789abcdef"
    (old / "synthetic-objects").mkdir(parents=True)
    laptop = tmp_path / "reproduce" / "laptop"
    laptop.mkdir()
    setup = chapter(tmp_path, "ci")
    folder = setup.reproduce_folder()
    assert folder == tmp_path / "reproduce" / f"ci-{records.source_fingerprint()}"
    assert old.is_dir()  # asking where the runs go removes nothing
    setup.remove_stale_runs()
    assert not old.exists() and laptop.is_dir()
    monkeypatch.setattr("ib_tutorial.notebook.source_fingerprint", lambda: "fedcba9876543210")
    assert chapter(tmp_path, "ci").reproduce_folder().name == "ci-fedcba9876543210"


def test_the_fingerprint_follows_the_source(tmp_path, monkeypatch):
    package = tmp_path / "ib_tutorial" / "reproduction"
    package.mkdir(parents=True)
    (package / "records.py").write_text("x = 1\n")
    monkeypatch.setattr(records, "__file__", str(package / "records.py"))
    first = records.source_fingerprint()
    assert records.source_fingerprint() == first
    (package / "records.py").write_text("x = 2\n")
    assert records.source_fingerprint() != first
