"""From training runs to results: measuring runs, reproducing the paper, and bundles.

Measuring runs:

* :mod:`~ib_tutorial.reproduction.records`: the schema of profile files and their provenance;
* :mod:`~ib_tutorial.reproduction.run_profiles`: every saved network of a run profiled;
* :mod:`~ib_tutorial.reproduction.run_pruning`: a run's last network pruned;
* :mod:`~ib_tutorial.reproduction.run_factors`: what a run's networks learned besides the class;
* :mod:`~ib_tutorial.reproduction.measurement`: which input and which measurement give a
  network's profile its levels;
* :mod:`~ib_tutorial.reproduction.pretrained`: a published, converged ViT profiled on a
  dataset's profile images.

The paper and its claims:

* :mod:`~ib_tutorial.reproduction.paper` and :mod:`~ib_tutorial.reproduction.comparison`:
  what the paper reports, and a profile set against it;
* :mod:`~ib_tutorial.reproduction.claims`: the paper's claims about a profile's shape, tested;
  :mod:`~ib_tutorial.reproduction.verdicts`: asked of groups of committed runs;
* :mod:`~ib_tutorial.reproduction.converged`: converged, published ViTs against the paper.

Whether and what a run learned:

* :mod:`~ib_tutorial.reproduction.learned`: the one rule of "learned";
  :mod:`~ib_tutorial.reproduction.plateau`: whether a run stopped learning;
* :mod:`~ib_tutorial.reproduction.learning`: a run's change from its random initialisation;
* :mod:`~ib_tutorial.reproduction.seeds`: how far a profile and its verdicts move with the seed.

Runs and bundles:

* :mod:`~ib_tutorial.reproduction.reproduce`: train, profile, prune and compare in one
  resumable command;
* :mod:`~ib_tutorial.reproduction.bundles`: committed results read back whole;
  :mod:`~ib_tutorial.reproduction.dataset_runs`: a dataset's runs among them;
  :mod:`~ib_tutorial.reproduction.manifest`: the committed results the book reads, by key;
* :mod:`~ib_tutorial.reproduction.recipes`: training recipes side by side;
* :mod:`~ib_tutorial.reproduction.dino_compute`: a DINO run's compute against its k-NN gain;
* :mod:`~ib_tutorial.reproduction.gpu_run`: what the committed GPU run's files say;
* :mod:`~ib_tutorial.reproduction.knob`: the texture knob's sweeps;
  :mod:`~ib_tutorial.reproduction.knob_rows`: the knob's DINO rows.
"""
