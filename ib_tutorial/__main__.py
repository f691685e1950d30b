"""``python -m ib_tutorial COMMAND ...`` (or ``torchrun ... -m ib_tutorial``): the commands of :mod:`ib_tutorial.cli`."""
from .cli import main

main()
