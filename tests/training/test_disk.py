"""The disk-space check before a run: its reckoning against the files a run writes, and a
refusal, with the numbers, that leaves nothing written."""
import pytest
from training_runs import DATASET, TINY

from ib_tutorial.files import DiskFullError
from ib_tutorial.training import loop, runs
from ib_tutorial.training.runs import RunDirectory


def test_the_reckoning_matches_the_files_the_run_writes(tmp_path, monkeypatch):
    reckoned = []
    check = runs.check_disk_space
    monkeypatch.setattr(loop, "check_disk_space", lambda folder, writes: (reckoned.append(writes), check(folder, writes)))
    run = RunDirectory(loop.train(DATASET, "ci", out=tmp_path / "run", progress=False, epochs=3, checkpoint_every=2,
                                  **TINY))
    [writes] = reckoned
    assert writes.backbones == len(run.backbone_epochs()) == 3  # epochs 0, 2 and the last, 3
    assert writes.backbone == pytest.approx(run.backbone_path(3).stat().st_size, rel=0.1)
    assert writes.checkpoint == pytest.approx(run.checkpoint_path.stat().st_size, rel=0.1)


def test_a_run_that_cannot_fit_is_refused_before_it_writes_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(runs.shutil, "disk_usage", lambda path: type("Usage", (), {"free": 10**6})())
    with pytest.raises(DiskFullError, match=r"needs about .* GB .* 3 checkpoints of .* MB .* 0.00 GB are free") as error:
        loop.train(DATASET, "ci", out=tmp_path / "run", progress=False, epochs=3, **TINY)
    assert "--checkpoint-every" in str(error.value)
    assert not RunDirectory(tmp_path / "run").config_path.exists()
    assert not list((tmp_path / "run").glob("**/*.pt"))


def test_saved_epochs_are_every_nth_and_the_last():
    assert runs.saved_epochs(0, 10, 4) == [0, 4, 8, 10]
    assert runs.saved_epochs(5, 10, 4) == [8, 10]
