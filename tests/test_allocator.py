import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import ib_tutorial
from ib_tutorial.machine import keep_freed_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# A fresh process allocates, writes and frees tensors of 40, 24 and 48 MiB, twelve times
# over (as a forward pass does its activations), and reports the minor page faults of each time.
PASSES = """
import json, resource, sys, torch
from ib_tutorial.machine import keep_freed_memory
if sys.argv[1] == "kept":
    assert keep_freed_memory()
def faults_of_one_pass():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    held = [torch.ones(mib << 18) for mib in (40, 24, 48)]
    del held
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps([faults_of_one_pass() for _ in range(12)]))
"""


def page_faults_per_pass(case: str) -> list[int]:
    result = subprocess.run([sys.executable, "-c", PASSES, case], capture_output=True, text=True, check=True,
                            cwd=Path(ib_tutorial.__file__).parents[1])
    return json.loads(result.stdout)


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_kept_memory_serves_later_passes_without_page_faults():
    # By default the two blocks above 32 MiB (glibc's largest mmap threshold) go back to the
    # system when freed, and every pass faults their 22,528 pages in again.
    assert all(faults > 10_000 for faults in page_faults_per_pass("default")[-3:])
    assert all(faults < 1_000 for faults in page_faults_per_pass("kept")[-3:])


def test_without_glibc_nothing_is_changed(monkeypatch):
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    assert keep_freed_memory.__wrapped__() is False
