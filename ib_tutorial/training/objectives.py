"""The table from an objective's name (``TrainSettings.objective``) to the objective that
trains it: the one place that knows which objectives exist. Callers look an objective up
here and ask it, instead of testing its name."""
from __future__ import annotations

from ..command_line import argument
from .dino_step import DINOTraining
from .objective import Objective
from .supervised_step import SupervisedTraining

#: Every objective a run can train with, by name: DINO (the paper's) and the supervised control.
OBJECTIVES: dict[str, type[Objective]] = {objective.name: objective for objective in (DINOTraining, SupervisedTraining)}


def get_objective(name: str) -> type[Objective]:
    """The objective called ``name``; a clear error listing the known ones."""
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"Unknown objective {name!r}; known: {', '.join(OBJECTIVES)}. "
                         f"Choose one with {argument('objective', '<name>')}.") from None
