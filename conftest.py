"""Set-up for every test, under tests/ and in the notebooks (``pytest --nbval``).

README command (b) runs the tests on two pytest-xdist workers (``-n 2``). The notebooks
and the book's build (``tests/test_book_pages.py``) share the ``ci`` runs under the data
folder: the build trains them and each chapter loads them, so one worker takes all of
them, in order and first (the longest share), while the other takes the rest file by file,
so that a file's module fixtures are built once. Each worker, and every process it starts
(notebook kernels, the book's build, training runs), uses one thread, so that the two do
not fight over the cores; a run without workers uses two.

The notebooks, the book's build and the tests marked ``slow`` (training runs to the end,
kills and resumptions, the reproduction fixture) take most of the time: ``pytest -m "not
slow"`` leaves them out, the quick check of the package.
"""
import os

import pytest
import torch

os.environ.setdefault("IB_TUTORIAL_PRESET", "ci")
THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
os.environ["OMP_NUM_THREADS"] = str(THREADS)
torch.set_num_threads(THREADS)

BOOK = "book"


def share(nodeid: str) -> str:
    """Which worker's share a test is in: the book's, or its own file's."""
    path = nodeid.split("::")[0]
    return BOOK if path.endswith(".ipynb") or path == "tests/test_book_pages.py" else path


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: minutes rather than seconds; `-m \"not slow\"` leaves it out")
    config.addinivalue_line("markers", "reading_budget: a chapter's words and code cells within the book's budget; "
                            "`-m reading_budget` lists the chapters still over it")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        if share(item.nodeid) == BOOK:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: share(item.nodeid) != BOOK)  # stable: each share keeps its order


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown without it
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "load":  # an explicit --dist keeps its own meaning
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BookShare(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return share(nodeid)

    return BookShare(config, log)
