"""``python -m ib_tutorial.train ...``: the command-line entry ``torchrun`` launches.

Takes the arguments of ``ib-tutorial train``, for example::

    torchrun --nproc_per_node=4 -m ib_tutorial.train --dataset cifar100 --preset paper

The training function lives in :mod:`ib_tutorial.training` and is exported as
``ib_tutorial.train``; this module only exists so that ``-m`` has something to run.
"""
import sys

from .cli import main

if __name__ == "__main__":
    main(["train", *sys.argv[1:]])
