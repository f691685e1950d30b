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
