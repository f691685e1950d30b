"""A dataset with its options as one string, for commands that take several datasets.

    synthetic-mix:texture_weight=0.25
    uc-merced:train_fraction=0.5,split_seed=1
    tiny-imagenet:subset=tin20        (a named subset, see ib_tutorial.data.subsets)

Each value is read as a Python literal (``0.5``, ``True``, ``'keep'``, ``(0.9,1.0)``) and kept
as text otherwise; a comma inside brackets belongs to the value.
"""
from __future__ import annotations

import ast
import hashlib

from . import check_dataset_options


def parse_option(text: str) -> tuple[str, object]:
    """``"KEY=VALUE"`` -> ``(KEY, value)``."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def parse_options(text: str) -> dict:
    """``"KEY=VALUE,KEY=(A,B),..."`` -> ``{KEY: value}``; commas inside brackets belong to a value."""
    parts, depth, start = [], 0, 0
    for index, character in enumerate(text):
        depth += (character in "([") - (character in ")]")
        if character == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return dict(parse_option(part) for part in parts) if text else {}


def parse_spec(spec: str) -> tuple[str, dict]:
    """``"NAME[:KEY=VALUE,...]"`` -> ``(NAME, options)``, checked against what the dataset takes."""
    name, _, option_text = spec.partition(":")
    options = parse_options(option_text)
    check_dataset_options(name, options)
    return name, options


#: The longest folder name :func:`spec_folder` writes out in full: file systems refuse a name
#: over 255 bytes, and a run with many settings reaches that.
MAX_FOLDER_NAME = 255


def spec_folder(spec: str) -> str:
    """A folder name for the spec's run that is valid on every file system: ``:`` and ``,``
    become ``_``. A name over :data:`MAX_FOLDER_NAME` bytes keeps its beginning and ends in
    a hash of the whole spec, so that two long specs never share a folder."""
    name = spec.replace(":", "_").replace(",", "_")
    if len(name.encode()) <= MAX_FOLDER_NAME:
        return name
    digest = hashlib.sha256(spec.encode()).hexdigest()[:16]
    return f"{name.encode()[:MAX_FOLDER_NAME - len(digest) - 1].decode(errors='ignore')}~{digest}"
