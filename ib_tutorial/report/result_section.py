"""One section of a chapter as the package computes it: a table, a figure, the values its
paragraph glues, and the statements that paragraph makes, each checked against the data.

A chapter's cell calls a function that returns a :class:`ResultSection` and shows it; the
paragraph after the cell quotes the glued values and says what the statements say. When the
committed results change so that a statement no longer holds, :meth:`ResultSection.show`
raises, so ``pytest --nbval`` fails until the paragraph is rewritten.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
from IPython.display import Markdown, display


@dataclass(frozen=True)
class ResultSection:
    """What one section of a chapter shows of a computed result.

    Attributes:
        table: Markdown shown first (a table, or a sentence where the results are absent).
        figures: the section's figures, shown after the table.
        values: name -> value, glued for the paragraph (MyST-NB's ``glue:text`` role).
        statements: what the paragraph says -> whether the data still says it.
        details: Markdown a chapter shows folded (long tables of every test).
    """

    table: str
    figures: tuple[plt.Figure, ...] = ()
    values: dict[str, float | str] = field(default_factory=dict)
    statements: dict[str, bool] = field(default_factory=dict)
    details: str = ""

    def failed(self) -> list[str]:
        """The statements the data no longer supports."""
        return [statement for statement, holds in self.statements.items() if not holds]

    def check(self) -> None:
        """Raise ``AssertionError`` naming every statement the data no longer supports."""
        failed = self.failed()
        if failed:
            raise AssertionError("the committed results no longer say: " + "; ".join(failed)
                                 + ". Rewrite the paragraph after this cell.")

    def show(self, glue: Callable[[str, float | str], None]) -> None:
        """Check the statements, glue the values with ``glue`` (the chapter's
        :func:`~ib_tutorial.notebook.glue_number`), and display the table and the figures."""
        self.check()
        for name, value in self.values.items():
            glue(name, value)
        display(Markdown(self.table))
        for figure in self.figures:
            display(figure)
        plt.close("all")  # displayed above, not again at the cell's end


def absent(command: str, what: str) -> ResultSection:
    """A section whose committed runs are not next to this package: the command that makes them."""
    return ResultSection(f"No committed {what} next to this package (clone the repository to read `results/`). "
                         f"This command makes it:\n\n```bash\n{command}\n```")
