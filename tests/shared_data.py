"""The real-data samples the tests read when present: ``../shared/data`` beside the
repository's root (where the development machines and CI keep it; it is never copied into
the repository). Tests that need a folder skip, naming it, when it is absent."""
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TINY_SAMPLE = SHARED_DATA / "tiny-imagenet-200-sample"
DTD_SAMPLE = SHARED_DATA / "dtd-sample"
REAL = SHARED_DATA / "real"  # a data root of real images for training on a CPU


def needs(*folders: Path) -> pytest.MarkDecorator:
    """Skip the test unless every one of ``folders`` is present."""
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    return pytest.mark.skipif(bool(missing), reason=f"no real-data sample at {', '.join(missing)}")
