"""From training runs to results: measuring runs, reproducing the paper, and bundles.

* :mod:`~ib_tutorial.reproduction.records`: the schema of profile files and their provenance;
* :mod:`~ib_tutorial.reproduction.run_profiles`: every saved network of a run profiled;
* :mod:`~ib_tutorial.reproduction.run_pruning`: a run's last network pruned;
* :mod:`~ib_tutorial.reproduction.pretrained`: a published, converged ViT profiled on a
  dataset's profile images;
* :mod:`~ib_tutorial.reproduction.paper` and :mod:`~ib_tutorial.reproduction.comparison`:
  what the paper reports, and a profile set against it;
  :mod:`~ib_tutorial.reproduction.claims`: the paper's claims about a profile's shape,
  tested; :mod:`~ib_tutorial.reproduction.plateau`: whether a run stopped learning;
* :mod:`~ib_tutorial.reproduction.reproduce`: train, profile, prune and compare in one
  resumable command;
* :mod:`~ib_tutorial.reproduction.bundles`: committed results read back whole;
  :mod:`~ib_tutorial.reproduction.dataset_runs`: a dataset's runs among them;
* :mod:`~ib_tutorial.reproduction.recipes`: training recipes side by side;
* :mod:`~ib_tutorial.reproduction.dino_compute`: a DINO run's compute (images seen times
  student tokens) against its k-NN gain, and the published points beside it.
"""
