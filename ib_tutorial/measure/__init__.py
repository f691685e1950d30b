"""Measuring a network: a model and images in, numbers out.

* :mod:`~ib_tutorial.measure.metrics`: EED and its companions (RankMe, participation
  ratio, TwoNN), pure functions of a spectrum or a point cloud;
* :mod:`~ib_tutorial.measure.covariance`: the streaming covariance of a block's tokens;
* :mod:`~ib_tutorial.measure.block_profile`: every block measured in one forward pass;
* :mod:`~ib_tutorial.measure.knn`: weighted k-NN accuracy of frozen features;
* :mod:`~ib_tutorial.measure.pruning`: k-NN accuracy of each block kept to its top
  principal directions;
* :mod:`~ib_tutorial.measure.variants`: which covariance of a block's tokens EED reads;
* :mod:`~ib_tutorial.measure.bootstrap`: the bootstrap over images, bootstrap profiles of
  every block in one pass, and the Wilson interval;
* :mod:`~ib_tutorial.measure.shape`: a profile's shape over depth, and three-valued verdicts.

Nothing here knows of run folders or files: :mod:`ib_tutorial.book` measures runs.
"""
