import shutil

import pytest
import torch


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


@pytest.fixture
def tmp_path(tmp_path):
    """Run directories hold checkpoints of tens to hundreds of megabytes: remove them after
    each test, so that a session does not fill the disk."""
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)
