"""The manifest of committed results: every entry names a folder that is there, once."""
import pytest

from ib_tutorial.book.bundles import ENTRIES, manifest_entry, stored_entry


def test_keys_are_unique():
    keys = [entry.key for entry in ENTRIES]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry.key)
def test_every_entry_is_committed(entry):
    assert stored_entry(entry.key).is_dir(), f"results/{entry.folder} is missing"


def test_an_unknown_key_names_the_keys():
    with pytest.raises(KeyError, match="the manifest has"):
        manifest_entry("no-such-result")
