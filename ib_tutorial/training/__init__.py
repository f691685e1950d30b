"""Training a ViT with DINO, or with labels as a control, and what a run leaves on disk.

In the order a run uses them: :mod:`~ib_tutorial.training.run_config` (a run named by its
settings, its resolved settings and the table of objectives),
:mod:`~ib_tutorial.training.augment` (multi-crop views, in the loader or in batches on the
device), :mod:`~ib_tutorial.training.data` (the loop's images and k-NN sets),
:mod:`~ib_tutorial.training.schedules` (warm-up, freeze, learning rate, weight decay, momentum
and teacher temperature, built once per run), :mod:`~ib_tutorial.training.objective` (what
every objective shares), :mod:`~ib_tutorial.training.dino` (DINO in one module: its parts and
its one training step) and :mod:`~ib_tutorial.training.supervised_step` (the supervised
objective's step), :mod:`~ib_tutorial.training.distributed`, :mod:`~ib_tutorial.training.runs`
(run folders, checkpoints, and the disk space a run needs), :mod:`~ib_tutorial.training.loop`
(the loop itself, :func:`~ib_tutorial.training.loop.train`, stopping cleanly on a signal, and
its out-of-memory message) and :mod:`~ib_tutorial.training.cost` (what a run costs).
"""
