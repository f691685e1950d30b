"""ib_tutorial: measure how Vision Transformers compress information, block by block.

Importing it fetches and starts nothing; every download is an explicit call.
"""
import importlib.metadata

from .measure.metrics import effective_encoding_dimension
from .presets import get_preset

try:  # one version source, pyproject.toml's, as installed
    __version__ = importlib.metadata.version("ib-tutorial")
except importlib.metadata.PackageNotFoundError:  # imported from a folder that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    # `ib_tutorial.train(...)` without importing the training stack with the package.
    if name == "train":
        from .training.loop import train

        return train
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["effective_encoding_dimension", "get_preset", "train"]
