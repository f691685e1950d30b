"""What the chapters render from computed results: figures, widgets, Markdown.

* :mod:`~ib_tutorial.report.captions`: the caption line of every figure;
* :mod:`~ib_tutorial.report.plots`: figures of per-block profiles;
* :mod:`~ib_tutorial.report.information_plane`: the Information Bottleneck chapter's figures;
* :mod:`~ib_tutorial.report.widgets`: the profile explorer;
* :mod:`~ib_tutorial.report.tables`: Markdown tables of comparisons, bundles and cost;
* :mod:`~ib_tutorial.report.dataset_chapters`: what a dataset chapter of the Results part shows;
* :mod:`~ib_tutorial.report.claims`: the verdicts on trained networks (plateau, the paper's claims);
* :mod:`~ib_tutorial.report.dino_chapter`: the DINO chapter's figures and what DINO needs to learn;
* :mod:`~ib_tutorial.report.lab_notes`: the lab notes' DINO tables, findings and figures.

Nothing below this package draws or writes Markdown.
"""
