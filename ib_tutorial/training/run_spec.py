"""A run as one string, ``DATASET[:KEY=VALUE,...][@SETTING=VALUE,...]``, parsed once where it
enters and passed on as a :class:`RunSpec`. What follows ``@`` overrides the preset for this run
only, e.g. ``tiny-imagenet@objective=supervised``; a pair is written in brackets,
``@global_crop_scale=(0.9,1.0)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..data.spec import parse_options, parse_spec, spec_folder
from ..presets import training_overrides


@dataclass(frozen=True)
class RunSpec:
    """One run's dataset, dataset options and training overrides, with the text they came from.

    Attributes:
        text: the spec as written (a bundle's key for the run; ``str()`` gives it back).
        dataset: the dataset's name, e.g. ``dtd``.
        options: its options (what follows ``:``), checked against what the dataset takes.
        overrides: the training settings that follow ``@``, checked against
            :func:`~ib_tutorial.presets.training_overrides`.
    """

    text: str
    dataset: str
    options: dict = field(default_factory=dict, compare=False)  # both follow from the text
    overrides: dict = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        """``"DATASET[:KEY=VALUE,...][@SETTING=VALUE,...]"`` -> a checked :class:`RunSpec`."""
        dataset_spec, _, override_text = text.partition("@")
        dataset, options = parse_spec(dataset_spec)
        overrides = parse_options(override_text)
        known = training_overrides()
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise ValueError(f"Unknown training setting(s) {unknown} in {text!r}. Known: {', '.join(sorted(known))}.")
        return cls(text, dataset, options, overrides)

    @classmethod
    def of(cls, spec: str | RunSpec) -> RunSpec:
        """``spec`` as a :class:`RunSpec`: parsed when it is text (where a spec enters the API)."""
        return spec if isinstance(spec, RunSpec) else cls.parse(spec)

    def __str__(self) -> str:
        return self.text

    @property
    def dataset_spec(self) -> str:
        """The dataset with its options, without the overrides: ``"dtd:folder=dtd"``."""
        return self.text.partition("@")[0]

    @property
    def folder(self) -> str:
        """The run's folder name in a results bundle, valid on every file system."""
        return spec_folder(self.text)
