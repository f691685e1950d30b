"""The chapters' thread count: the cores other work leaves free."""
import pytest

from ib_tutorial import machine
from ib_tutorial.machine import busy_cores, free_threads


@pytest.mark.parametrize("busy, available, threads", [
    (None, 2, 2),  # counters unknown: PyTorch's own choice
    (0.1, 2, 2), (0.6, 2, 2), (0.8, 2, 1), (1.0, 2, 1), (2.0, 2, 1),  # a few tenths are noise; never fewer than one
    (1.4, 8, 7), (1.8, 8, 6), (3.0, 4, 1),
])
def test_threads_are_the_cores_other_work_leaves_free(busy, available, threads):
    assert free_threads(busy, available) == threads


def test_busy_cores_are_read_from_the_change_of_the_kernels_counters(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 20 300 10 0 0 0 0 0\ncpu0 50 0 10 150 5 0 0 0 0 0\n")

    def later(_seconds):  # a quarter of the time busy over the window: user +30, idle +90
        stat.write_text("cpu  130 0 20 390 10 0 0 0 0 0\n")

    monkeypatch.setattr(machine.time, "sleep", later)
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 4)
    assert busy_cores(stat=stat) == pytest.approx(1.0)


def test_niced_work_leaves_its_cores_free(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 0 100 0 0 0 0 0 0\n")

    def later(_seconds):  # both cores busy over the window, one of them with niced work
        stat.write_text("cpu  200 100 0 100 0 0 0 0 0 0\n")

    monkeypatch.setattr(machine.time, "sleep", later)
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    assert busy_cores(stat=stat) == pytest.approx(1.0)


def test_without_the_counters_the_busy_cores_are_unknown(tmp_path):
    assert busy_cores(0.01, stat=tmp_path / "missing") is None
    (tmp_path / "other").write_text("intr 1 2 3\n")
    assert busy_cores(0.01, stat=tmp_path / "other") is None
