"""The profile explorer from stored records."""
import dataclasses

import matplotlib

matplotlib.use("Agg")

import pytest
from profile_records import make_record

from ib_tutorial.book.plots import profile_explorer


def test_explorer_builds_from_stored_records_and_follows_the_controls():
    records = [make_record(epoch) for epoch in (0, 5, 10)]
    other = make_record(10)
    other = dataclasses.replace(other, provenance=dataclasses.replace(other.provenance, dataset="synthetic-textures"))
    explorer = profile_explorer(records + [other])
    controls, slider, stack = explorer.children
    dataset, tokens, metric = controls.children
    assert dataset.value == "synthetic-objects"
    assert len(stack.children) == 3 and list(slider.options) == [0, 5, 10]
    assert stack.selected_index == 2
    first_png = bytes(stack.children[0].value)
    assert first_png.startswith(b"\x89PNG")
    metric.value = "participation_ratio"
    assert bytes(stack.children[0].value) != first_png
    dataset.value = "synthetic-textures"
    assert len(stack.children) == 1


def test_explorer_needs_records():
    with pytest.raises(ValueError, match="ib-tutorial profile"):
        profile_explorer([])
