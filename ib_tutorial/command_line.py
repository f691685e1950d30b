"""The words of the ``ib-tutorial`` command line: how a setting is named, its value read
(:mod:`ib_tutorial.cli`) and written back (the commands the package prints), and how a message
names an argument to its reader (:func:`argument`)."""
from __future__ import annotations

import contextlib
import contextvars
import os
import shlex
import types
import typing
from collections.abc import Mapping, Sequence

PROGRAM = "ib-tutorial"

# Whether the messages raised now are read by someone who typed a command.
_FROM_COMMAND_LINE = contextvars.ContextVar("from_command_line", default=False)


def option(setting: str) -> str:
    """A setting's option: ``batch_size`` -> ``--batch-size``."""
    return f"--{setting.replace('_', '-')}"


@contextlib.contextmanager
def spoken_as_options():
    """Inside, :func:`argument` and :func:`argument_name` write what a command line takes."""
    token = _FROM_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _FROM_COMMAND_LINE.reset(token)


def argument_name(name: str) -> str:
    """``--warmup-epochs`` after a command, ``warmup_epochs`` in Python."""
    return option(name) if _FROM_COMMAND_LINE.get() else name


def argument(name: str, value: object = True) -> str:
    """An argument as the reader gives it: ``--download`` or ``download=True`` (``value`` True: a
    flag), ``--root <folder>`` or ``root=<folder>`` (a placeholder), ``--device cpu`` or ``device='cpu'``."""
    if _FROM_COMMAND_LINE.get():
        return option(name) if value is True else f"{option(name)} {value_text(value)}"
    placeholder = isinstance(value, str) and value.startswith("<")
    return f"{name}={value if placeholder else repr(value)}"


def value_parser(kind: type):
    """Text -> value of a setting's type: ``none`` for optional ones, ``a,b`` for pairs, true/false."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        inner = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        parse_inner = value_parser(inner)
        return lambda text: None if text.lower() == "none" else parse_inner(text)
    if typing.get_origin(kind) is tuple:
        return lambda text: tuple(float(part) for part in text.split(","))
    if kind is bool:
        return lambda text: {"true": True, "false": False}[text.lower()]
    return kind


def value_text(value) -> str:
    """A setting's value as :func:`value_parser` reads it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def command_line(argv: Sequence[str]) -> str:
    """``ib-tutorial`` and its arguments, quoted for a POSIX shell."""
    return shlex.join([PROGRAM, *argv])


def train_command(dataset: str, preset: str, out: str | os.PathLike, dataset_options: Mapping, root,
                  settings: Mapping, world_size: int = 1, resume: bool = False) -> str:
    """The ``train`` command of one run (under ``torchrun`` for several processes)."""
    words = ["train"] if world_size == 1 else ["torchrun", f"--nproc_per_node={world_size}", "-m", "ib_tutorial", "train"]
    words += ["--dataset", dataset, "--preset", preset, "--out", str(out)]
    words += [word for key, value in dataset_options.items() for word in ("--dataset-option", f"{key}={value}")]
    words += ["--root", str(root)] if root is not None else []
    words += [word for name, value in settings.items() for word in (option(name), value_text(value))]
    words += ["--resume"] if resume else []
    return command_line(words) if world_size == 1 else shlex.join(words)


def reproduce_argv(preset: str, specs: Sequence[object], out: str | None = None, download: bool = False,
                   export: str | None = None) -> tuple[str, ...]:
    """The arguments of a ``reproduce`` command of ``specs`` (run specs) at ``preset``."""
    argv = ["reproduce", "--preset", preset, "--datasets", *map(str, specs), *(["--download"] if download else [])]
    return tuple(argv + (["--out", out] if out else []) + (["--export", export] if export else []))
