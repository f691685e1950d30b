"""What the chapters render from computed results: figures, widgets, Markdown.

* :mod:`~ib_tutorial.report.captions`: the caption line of every figure;
* :mod:`~ib_tutorial.report.plots`: figures of per-block profiles;
* :mod:`~ib_tutorial.report.information_plane`: the Information Bottleneck chapter's figures;
* :mod:`~ib_tutorial.report.widgets`: the profile explorer;
* :mod:`~ib_tutorial.report.tables`: Markdown tables of comparisons, bundles, recipes and cost;
* :mod:`~ib_tutorial.report.dataset_chapters`: what a dataset chapter of the Results part shows;
* :mod:`~ib_tutorial.report.claims`: the verdicts on trained networks (plateau, the paper's claims).

Nothing below this package draws or writes Markdown.
"""
