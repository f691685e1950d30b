"""Where data and results live on disk: never inside the repository by default."""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV_VAR = "IB_TUTORIAL_DATA"


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: ``root`` if given, else ``$IB_TUTORIAL_DATA``, else ``~/.cache/ib_tutorial``."""
    if root is not None:
        return Path(root).expanduser()
    return Path(os.environ.get(DATA_ENV_VAR, "~/.cache/ib_tutorial")).expanduser()


def display_path(path: str | os.PathLike) -> str:
    """``path`` as a page shows it: under the home folder as ``~/...``, so a built page does
    not carry the builder's home."""
    path, home = Path(path), Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def repository_root() -> Path:
    """The folder that holds the package: the repository's root when it runs from a checkout,
    else ``site-packages`` (:func:`in_repository` tells which). The one place the package
    finds the repository."""
    return Path(__file__).resolve().parents[1]


def in_repository() -> bool:
    """Whether the package runs from a checkout of the repository (which has the book's
    ``_toc.yml`` beside the package), so that the committed results and benchmark records are there."""
    return (repository_root() / "_toc.yml").exists()


def stored_results(name: str = "") -> Path:
    """``results/<name>`` of the repository this package was loaded from (not the working
    directory): the bundles committed with the book. An installed package has none; check
    ``.exists()``."""
    return repository_root() / "results" / name


def stored_benchmark(name: str) -> Path:
    """``benchmarks/results/<name>`` of the repository this package was loaded from (absent
    for an installed package; check ``.exists()``)."""
    return repository_root() / "benchmarks" / "results" / name
