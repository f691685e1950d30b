"""The book's machinery: what runs left on disk turned into the chapters' tables, figures and
verdicts (the core a reader learns from lies outside it). One module a concept:

* runs measured and stored: :mod:`~ib_tutorial.book.records` (the profile files' schema and
  provenance), :mod:`~ib_tutorial.book.run_profiles` (a run's networks profiled and pruned),
  :mod:`~ib_tutorial.book.measurement` (which input and measurement give a profile its levels),
  :mod:`~ib_tutorial.book.pretrained` (a published ViT profiled), :mod:`~ib_tutorial.book.reproduce`
  (the resumable command), :mod:`~ib_tutorial.book.bundles` (committed results and their manifest),
  :mod:`~ib_tutorial.book.dataset_runs` (a dataset's runs), :mod:`~ib_tutorial.book.recipes`
  (training recipes side by side);
* the paper and the rule of "learned": :mod:`~ib_tutorial.book.paper` (what the paper reports),
  :mod:`~ib_tutorial.book.learned`, :mod:`~ib_tutorial.book.claims` (the claims tested, and the
  sentences that state them), :mod:`~ib_tutorial.book.status` (every test in one table);
* shared by the chapters: :mod:`~ib_tutorial.book.plots`, :mod:`~ib_tutorial.book.tables`;
* one module a chapter or part of one: :mod:`~ib_tutorial.book.information_plane`,
  :mod:`~ib_tutorial.book.level_puzzle` (EED), :mod:`~ib_tutorial.book.synthetic_worlds` (Data),
  :mod:`~ib_tutorial.book.dino_chapter`, :mod:`~ib_tutorial.book.lab_notes` (the lab notes' DINO
  part), :mod:`~ib_tutorial.book.knob` and :mod:`~ib_tutorial.book.knob_rows` (the texture knob),
  :mod:`~ib_tutorial.book.walkthrough` ("From runs to results"), :mod:`~ib_tutorial.book.dataset_chapters`
  (the Results chapters), :mod:`~ib_tutorial.book.converged` (converged ViTs),
  :mod:`~ib_tutorial.book.beyond` ("Beyond the paper").
"""
