"""Every committed bundle under results/ loads with today's types: its JSON is the contract."""
import dataclasses
import os
import shutil

import pytest

from ib_tutorial.files import stored_results
from ib_tutorial.book import bundles
from ib_tutorial.book.bundles import load_bundle, stored_bundles
from ib_tutorial.book.records import PROFILE_SCHEMA, SCHEMA_ID, load_profile_record
from ib_tutorial.book.run_profiles import VARIANTS, load_run_profiles, variant_label

BUNDLES = stored_bundles()

# The schema profile files were written against (ib-tutorial/profile/1), spelled out: the
# one derived from the record's type must accept and refuse what it did.
_PER_BLOCK = {"type": "array", "items": {"type": "number"}, "minItems": 1}
CONTRACT = {
    "type": "object",
    "required": ["schema", "label", "epoch", "profile", "provenance"],
    "properties": {
        "schema": {"const": SCHEMA_ID, "type": "string"},
        "label": {"type": "string"},
        "epoch": {"type": ["integer", "null"], "minimum": 0},
        "profile": {"type": "object",
                    "required": ["n_eff", "eed_percent", "dim", "tokens", "center", "n_images", "n_tokens", "companions"],
                    "properties": {
                        "n_eff": _PER_BLOCK,
                        "eed_percent": {**_PER_BLOCK, "items": {"type": "number", "minimum": 0, "maximum": 100}},
                        "dim": {"type": "integer", "minimum": 1},
                        "tokens": {"enum": ["all", "cls", "patch", "mean"]},
                        "center": {"type": "boolean"},
                        "n_images": {"type": "integer", "minimum": 0},
                        "n_tokens": {"type": "integer", "minimum": 2},
                        "companions": {"type": "object", "additionalProperties": _PER_BLOCK}}},
        "provenance": {"type": "object",
                       "required": ["code_version", "preset", "config_hash", "packages", "device", "date",
                                    "dataset", "n_images", "n_tokens"],
                       "properties": {
                           "code_version": {"type": "string"}, "preset": {"type": "string"},
                           "config_hash": {"type": "string"},
                           "packages": {"type": "object", "additionalProperties": {"type": "string"}},
                           "device": {"type": "string"}, "date": {"type": "string"}, "dataset": {"type": "string"},
                           "n_images": {"type": "integer"}, "n_tokens": {"type": "integer"},
                           # a published model's, optional: a run's files lack them
                           **{key: {"type": ["string", "null"]}
                              for key in ("model", "dataset_spec", "weights", "weights_sha256", "interpolation")},
                           "input_size": {"type": ["integer", "null"]},
                           "mean": {"type": ["array", "null"], "items": {"type": "number"}},
                           "std": {"type": ["array", "null"], "items": {"type": "number"}}}},
        # added later, absent from older files
        "bootstrap": {"type": ["object", "null"], "required": ["variant", "seed", "n_eff"],
                      "properties": {"variant": {"type": "string"}, "seed": {"type": "integer"},
                                     "n_eff": {"type": "array", "items": {"type": "array", "items": {"type": "number"}},
                                               "minItems": 1}}},
    },
}


def _unordered(schema):
    """``required`` lists compared as sets."""
    if isinstance(schema, dict):
        return {key: sorted(value) if key == "required" else _unordered(value) for key, value in schema.items()}
    return schema


def test_the_schema_derived_from_the_record_type_is_the_files_contract():
    assert _unordered(PROFILE_SCHEMA) == _unordered(CONTRACT)


@pytest.mark.skipif(not BUNDLES, reason="no bundles committed next to this package")
@pytest.mark.parametrize("name", BUNDLES)
def test_every_committed_bundle_loads(name):
    bundle = load_bundle(name)
    assert bundle.runs
    for key, run in bundle.runs.items():
        assert run.spec.text == key and run.profiles and run.config.objective.name == run.config.train.objective
    for path in sorted(stored_results(name).rglob("profiles/**/*.json")):
        load_profile_record(path)  # raises, naming the file, on a record the schema refuses


@pytest.mark.skipif("old-laptop-vit-small" not in BUNDLES, reason="no bundles committed next to this package")
def test_a_committed_bundle_is_read_once_until_its_summary_is_written_again(tmp_path, monkeypatch):
    shutil.copytree(stored_results("old-laptop-vit-small"), tmp_path / "results" / "old")
    shutil.copytree(stored_results("old-laptop-vit-small"), tmp_path / "elsewhere")
    monkeypatch.setattr(bundles, "stored_results", lambda name="": tmp_path / "results" / name)
    first = load_bundle("old")
    assert load_bundle("old") is first and load_bundle(tmp_path / "results" / "old") is first
    summary = tmp_path / "results" / "old" / "summary.json"
    written = summary.stat().st_mtime_ns
    os.utime(summary, ns=(written + 10**9, written + 10**9))  # written again, e.g. by `reproduce --export`
    again = load_bundle("old")
    assert again is not first and again == first
    assert load_bundle(tmp_path / "elsewhere") is not load_bundle(tmp_path / "elsewhere")  # a live folder: read each time


@pytest.mark.skipif("laptop-real" not in BUNDLES, reason="no bundles committed next to this package")
def test_a_runs_other_measurements_are_read_when_first_asked_for_and_are_those_on_disk():
    run = next(iter(bundles._read_bundle(stored_results("laptop-real")).runs.values()))
    assert "_records" not in vars(run.variants)  # nothing read yet
    on_disk = {variant_label(tokens, center): load_run_profiles(stored_results("laptop-real") / run.summary["run"], tokens, center)
               for tokens, center in VARIANTS}
    assert dict(run.variants) == {label: records for label, records in on_disk.items() if records} and len(run.variants) == 4


@pytest.mark.skipif(not BUNDLES, reason="no bundles committed next to this package")
def test_chance_is_one_over_the_classes_whichever_record_states_them():
    both = 0
    for name in BUNDLES:
        for run in load_bundle(name).runs.values():
            if run.config.train_data is None:  # an older run: its pruning record counted the classes
                assert run.chance == (run.pruning[-1]["chance"] if run.pruning else None)
                continue
            assert run.chance == pytest.approx(100 / len(run.config.train_data.classes))
            if run.pruning:  # the two records agree where a run has both
                both += 1
                assert run.pruning[-1]["chance"] == pytest.approx(run.chance)
                unpruned = dataclasses.replace(run, pruning=[])  # a run measured without pruning, as the live knob
                assert unpruned.chance == pytest.approx(run.chance)
    assert both  # the check above ran
