"""What the chapters render from computed results: figures, widgets, Markdown.

Shared by every chapter:

* :mod:`~ib_tutorial.report.captions`: the caption of every figure;
* :mod:`~ib_tutorial.report.plots`: figures of per-block profiles;
* :mod:`~ib_tutorial.report.tables`: Markdown tables of comparisons, bundles and cost;
* :mod:`~ib_tutorial.report.widgets`: the profile explorer;
* :mod:`~ib_tutorial.report.result_section`: one section of a chapter (table, figures, glued
  values, checked statements).

One module a chapter (or a part of one):

* :mod:`~ib_tutorial.report.information_plane`: the Information Bottleneck chapter's figures;
* :mod:`~ib_tutorial.report.spectra`: the EED chapter's spectra with known answers;
* :mod:`~ib_tutorial.report.level_puzzle`: the EED chapter's level puzzle;
* :mod:`~ib_tutorial.report.synthetic_worlds`: the Data chapter's synthetic worlds;
* :mod:`~ib_tutorial.report.dino_chapter`: the DINO chapter and what DINO needs to learn;
* :mod:`~ib_tutorial.report.walkthrough`: "From runs to results", one bundle end to end;
* :mod:`~ib_tutorial.report.dataset_chapters`: what a dataset chapter of the Results part shows;
* :mod:`~ib_tutorial.report.claims`: the verdicts on trained networks;
  :mod:`~ib_tutorial.report.controls`: one network in front of its controls;
  :mod:`~ib_tutorial.report.status`: every test of every chapter in one status table;
* :mod:`~ib_tutorial.report.knob`: the knob chapter; :mod:`~ib_tutorial.report.knob_rows`:
  the lab notes of its DINO rows;
* :mod:`~ib_tutorial.report.converged`: the chapter "Converged ViTs";
* :mod:`~ib_tutorial.report.beyond`: the chapter "Beyond the paper";
* :mod:`~ib_tutorial.report.lab_notes`: the lab notes' DINO part.

Nothing below this package draws or writes Markdown.
"""
