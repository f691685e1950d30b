"""``python -m ib_tutorial COMMAND ...``, also what ``torchrun`` launches: :mod:`ib_tutorial.cli`."""
from .cli import main

main()
