"""ib_tutorial: measure how Vision Transformers compress information, block by block.

The package behind the ib-tutorial book. Importing it fetches nothing and starts
nothing; every download is an explicit call.
"""
from .metrics import (
    CovarianceAccumulator,
    eed_percent,
    effective_encoding_dimension,
    participation_ratio,
    rankme,
    twonn_dimension,
)
from .presets import get_preset

__version__ = "0.1.0"

__all__ = [
    "CovarianceAccumulator",
    "eed_percent",
    "effective_encoding_dimension",
    "get_preset",
    "participation_ratio",
    "rankme",
    "twonn_dimension",
]
