import platform
import resource
import sys

import pytest
import torch

from ib_tutorial.allocator import keep_freed_memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def page_faults_of_a_fresh_tensor(mib: int) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.ones(mib << 18)  # float32: mib MiB, every page written, then freed
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_freed_blocks_are_reused_without_faulting_their_pages_in_again():
    # 64 MiB is above glibc's largest adaptive mmap threshold (32 MiB): by default such a
    # block goes back to the system when freed, and the next one faults 16,384 pages in.
    assert keep_freed_memory()
    page_faults_of_a_fresh_tensor(64)
    assert page_faults_of_a_fresh_tensor(64) < 1000


def test_without_glibc_nothing_is_changed(monkeypatch):
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    assert keep_freed_memory.__wrapped__() is False
