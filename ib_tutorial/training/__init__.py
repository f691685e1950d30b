"""Training a ViT with DINO, or with labels as a control, and what a run leaves on disk.

In the order a run uses them: :mod:`~ib_tutorial.training.run_config` (settings and objectives),
:mod:`~ib_tutorial.training.augment` (multi-crop views), :mod:`~ib_tutorial.training.data`,
:mod:`~ib_tutorial.training.schedules`, :mod:`~ib_tutorial.training.objective`,
:mod:`~ib_tutorial.training.dino`, :mod:`~ib_tutorial.training.supervised_step`,
:mod:`~ib_tutorial.training.distributed`, :mod:`~ib_tutorial.training.runs` (run folders and
checkpoints), :mod:`~ib_tutorial.training.loop` (:func:`~ib_tutorial.training.loop.train`) and
:mod:`~ib_tutorial.training.cost` (what a run costs).
"""
