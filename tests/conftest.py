import os

import pytest
import torch

os.environ.setdefault("IB_TUTORIAL_PRESET", "ci")
torch.set_num_threads(2)


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(1234)
