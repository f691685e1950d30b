"""``python -m ib_tutorial COMMAND ...``: the command line, also the entry ``torchrun`` launches.

    python -m ib_tutorial train --dataset synthetic-objects --preset ci
    torchrun --nproc_per_node=4 -m ib_tutorial train --dataset cifar100 --preset paper

The same commands as the ``ib-tutorial`` script (:mod:`ib_tutorial.cli`).
"""
from .cli import main

main()
