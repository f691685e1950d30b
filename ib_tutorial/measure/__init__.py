"""Measuring a network: a model and images in, numbers out; nothing here knows of run folders
(:mod:`ib_tutorial.book` measures runs).

:mod:`~ib_tutorial.measure.metrics` (EED and its companions), :mod:`~ib_tutorial.measure.covariance`
(the streaming covariance), :mod:`~ib_tutorial.measure.block_profile` (every block in one pass),
:mod:`~ib_tutorial.measure.knn` (k-NN accuracy of frozen features), :mod:`~ib_tutorial.measure.pruning`
(k-NN of blocks kept to their top principal directions), :mod:`~ib_tutorial.measure.variants` (which
covariance EED reads), :mod:`~ib_tutorial.measure.bootstrap` (the bootstrap over images, the Wilson
interval) and :mod:`~ib_tutorial.measure.shape` (a profile's shape over depth, three-valued verdicts).
"""
