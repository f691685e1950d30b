"""Training a ViT with DINO, or with labels as a control, and what a run leaves on disk.

In the order a step uses them: :mod:`~ib_tutorial.training.run_config` (one run's
resolved settings), :mod:`~ib_tutorial.training.augment` (multi-crop views),
:mod:`~ib_tutorial.training.data` (the loop's images and k-NN sets),
:mod:`~ib_tutorial.training.dino` (DINO's parts), :mod:`~ib_tutorial.training.phases` (how long
its warm-up and last-layer freeze last), :mod:`~ib_tutorial.training.dino_step`
and :mod:`~ib_tutorial.training.supervised_step` (one step of each objective),
:mod:`~ib_tutorial.training.distributed`, :mod:`~ib_tutorial.training.stopping`,
:mod:`~ib_tutorial.training.runs` (run folders and checkpoints),
:mod:`~ib_tutorial.training.loop` (the loop itself, :func:`~ib_tutorial.training.loop.train`)
and :mod:`~ib_tutorial.training.cost` (what a run costs).
"""
