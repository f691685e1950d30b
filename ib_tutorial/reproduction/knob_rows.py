"""The knob's DINO rows: runs at the knob's object end that each change one part of the hue
recipe (:data:`~ib_tutorial.reproduction.knob.DINO_HUE_SWEEP`), read as one line each.

A row is a run directory: what it changed against the hue recipe's object end, how many
steps it ran, its CLS token's held-out k-NN top-1 from the random initialisation to its last
evaluation (with that accuracy's Wilson interval), its teacher's information about the image
(the lowest logged and the mean over the last tenth), whether it learned by the book's rule
(:func:`~ib_tutorial.reproduction.learned.learned_rule`), and what its networks read of the
object's factors (:mod:`~ib_tutorial.reproduction.run_factors`), where measured.

Rows ran for different lengths, so they are also read as they stood at :data:`ROWS_AT`, the
step every one of them reached (:func:`~ib_tutorial.reproduction.recipes.read_recipe`'s
``until_step``).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..measure.bootstrap import Interval
from ..training.runs import RunDirectory
from .knob import KnobSweep
from .learned import Learned, learned_rule
from .learning import knn_interval
from .recipes import Recipe, read_recipe, read_recipes, recipe_settings
from .run_factors import read_factors

#: The step at which rows of different lengths are compared: epoch 4 of 156 steps.
ROWS_AT = 624


@dataclass(frozen=True)
class KnobRow:
    """One run at the knob's object end, against the hue recipe.

    Attributes:
        name: the row's name (its folder's, or a label such as ``"the hue recipe"``).
        folder: the run directory.
        whole: the run read to its end (:class:`~ib_tutorial.reproduction.recipes.Recipe`).
        early: the run read as it stood at :data:`ROWS_AT`.
        steps: the training steps it ran.
        end: its last CLS k-NN top-1 with its Wilson interval (points).
        information: the teacher's information about the image at each logged step, (step, nats).
        learned: the book's rule on the whole run.
        factors: its ``factors.json``, or None where the factors were not measured.
    """

    name: str
    folder: Path
    whole: Recipe
    early: Recipe
    steps: int
    end: Interval
    information: tuple[tuple[int, float], ...]
    learned: Learned
    factors: dict | None

    @property
    def changes(self) -> dict:
        """The settings it changed against the hue recipe, without those that shape local crops
        in a row that makes none."""
        no_locals = self.whole.changes.get("local_crops_number") == 0
        return {key: value for key, value in self.whole.changes.items() if not (no_locals and key.startswith("local_crop_"))}

    def information_at(self, step: int) -> float:
        """The teacher's information (nats) at the first logged step at or after ``step``."""
        return next(nats for logged, nats in self.information if logged >= step)

    def lowest_information(self, until: int | None = None) -> float:
        """The teacher's lowest logged information (nats), over the whole run or up to step ``until``."""
        return min(nats for logged, nats in self.information if until is None or logged <= until)

    def factor(self, name: str, epoch: int, pool: str = "cls") -> float:
        """k-NN top-1 (%) of factor ``name`` (or ``"class"``) from the ``pool`` token at ``epoch``."""
        return self.factors["epochs"][str(epoch)][pool][name]


def read_row(folder: str | Path, reference: dict, name: str | None = None) -> KnobRow:
    """The run in ``folder`` as a :class:`KnobRow`, its changes taken against ``reference``
    (:func:`~ib_tutorial.reproduction.recipes.recipe_settings` of the hue recipe's object end)."""
    run = RunDirectory(folder)
    knn, train = run.read_metrics("knn"), run.read_metrics("train")
    return KnobRow(name or run.path.name, run.path, read_recipe(folder, reference), read_recipe(folder, reference, ROWS_AT),
                   train[-1]["step"], knn_interval(knn[-1]),
                   tuple((r["step"], r["teacher_information"]) for r in train if "teacher_information" in r),
                   learned_rule(run), read_factors(folder))


def hue_reference(hue_sweep: KnobSweep) -> dict:
    """The settings of the hue recipe's object end, against which every row's changes are read."""
    run = hue_sweep.runs[min(hue_sweep.weights)][1]
    return recipe_settings(run.config.train, run.config.view)


def object_end_rows(hue_sweep: KnobSweep) -> dict[str, KnobRow]:
    """The hue recipe's object end and the other runs at ``w = 0`` of its bundle (its views
    changed), by name: ``"the hue recipe"``, then ``"row 1"``, ``"row 2"``, ..."""
    reference, swept = hue_reference(hue_sweep), {spec for spec, _ in hue_sweep.runs.values()}
    bundle = hue_sweep.bundle
    others = [run for spec, run in bundle.runs.items()
              if spec not in swept and run.config.dataset_options.get("texture_weight") == 0]
    runs = [hue_sweep.runs[min(hue_sweep.weights)][1], *others]
    return {("the hue recipe" if index == 0 else f"row {index}"): read_row(bundle.path / run.spec.folder, reference)
            for index, run in enumerate(runs)}


def folder_rows(folder: str | Path, hue_sweep: KnobSweep, same_world: bool = True) -> dict[str, KnobRow]:
    """The DINO runs directly under ``folder`` by name, read against the hue recipe: those on the
    hue recipe's world (``same_world``), or those on another (the grey palette)."""
    reference = hue_reference(hue_sweep)
    object_end = hue_sweep.runs[min(hue_sweep.weights)][1]
    world = read_recipe(hue_sweep.bundle.path / object_end.spec.folder, reference).dataset
    return {recipe.name: read_row(Path(folder) / recipe.name, reference)
            for recipe in read_recipes(folder, reference) if (recipe.dataset == world) == same_world}


def rows_named(rows: dict[str, KnobRow], prefixes: Iterable[str]) -> dict[str, KnobRow]:
    """The rows named by one of ``prefixes`` and their number (``"o"`` names ``o1-invert``), in order."""
    return {name: row for name, row in rows.items() if name[:1] in tuple(prefixes) and name[1:2].isdigit()}
