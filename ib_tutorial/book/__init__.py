"""The book's machinery: from committed runs to the chapters' tables, figures and verdicts.

The core a reader learns from lies outside this package (:mod:`ib_tutorial.data`,
:mod:`ib_tutorial.ib`, :mod:`ib_tutorial.measure`, :mod:`ib_tutorial.models`,
:mod:`ib_tutorial.training`); everything here reads what runs left on disk and turns it into
what the book shows. One module a concept:

Runs measured and stored:

* :mod:`~ib_tutorial.book.records`: the schema of profile files and their provenance;
* :mod:`~ib_tutorial.book.run_profiles`: every saved network of a run profiled, the last pruned,
  and what its networks learned besides the class;
* :mod:`~ib_tutorial.book.measurement`: which input and which measurement give a profile its
  levels, and one network in front of its controls;
* :mod:`~ib_tutorial.book.pretrained`: a published, converged ViT profiled on a dataset;
* :mod:`~ib_tutorial.book.reproduce`: train, profile, prune and compare in one resumable command;
* :mod:`~ib_tutorial.book.bundles`: committed results read back whole, and the manifest of those
  the book reads; :mod:`~ib_tutorial.book.dataset_runs`: a dataset's runs among them;
* :mod:`~ib_tutorial.book.recipes`: training recipes side by side.

The paper, its claims and the one rule of "learned":

* :mod:`~ib_tutorial.book.paper`: what the paper reports, and a profile set against it;
* :mod:`~ib_tutorial.book.learned`: whether a run stopped learning, and whether it learned;
* :mod:`~ib_tutorial.book.claims`: the paper's claims tested on profiles, across seeds and groups
  of runs, and the sentences that state them;
* :mod:`~ib_tutorial.book.status`: every test of every chapter in one status table.

Shared by the chapters:

* :mod:`~ib_tutorial.book.plots`: figures, their captions and the profile explorer;
* :mod:`~ib_tutorial.book.tables`: Markdown tables and one section of a chapter.

One module a chapter (or a part of one):

* :mod:`~ib_tutorial.book.information_plane`: the Information Bottleneck chapter's figures;
* :mod:`~ib_tutorial.book.level_puzzle`: the EED chapter's level puzzle;
* :mod:`~ib_tutorial.book.synthetic_worlds`: the Data chapter's synthetic worlds;
* :mod:`~ib_tutorial.book.dino_chapter`: the DINO chapter's figures and tables;
* :mod:`~ib_tutorial.book.lab_notes`: the lab notes' DINO part, and what DINO needs to learn, as compute;
* :mod:`~ib_tutorial.book.knob`: the texture knob and its chapter;
  :mod:`~ib_tutorial.book.knob_rows`: the knob's DINO rows and their lab notes;
* :mod:`~ib_tutorial.book.walkthrough`: "From runs to results", one bundle end to end;
* :mod:`~ib_tutorial.book.dataset_chapters`: what a dataset chapter of the Results part shows;
* :mod:`~ib_tutorial.book.converged`: converged, published ViTs and their chapter;
* :mod:`~ib_tutorial.book.beyond`: the chapter "Beyond the paper".
"""
