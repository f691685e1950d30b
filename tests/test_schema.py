"""``schema.from_json`` reads back what ``dataclasses.asdict`` and JSON wrote;
``schema.schema_error`` judges data as a JSON Schema validator does."""
import dataclasses
import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profile_records import make_record

from ib_tutorial.measure.bootstrap import StoredReplicates
from ib_tutorial.book.records import PROFILE_SCHEMA
from ib_tutorial.schema import from_json, json_schema, schema_error


@dataclasses.dataclass(frozen=True)
class Inner:
    scale: tuple[float, float]
    name: str = "inner"


@dataclasses.dataclass(frozen=True)
class Outer:
    inner: Inner
    maybe: Inner | None
    counts: list[int]
    added_later: int = 3


def test_a_record_round_trips_through_json_with_its_tuples_and_nested_records():
    record = Outer(Inner((0.9, 1.0)), Inner((0.1, 0.5), "other"), [1, 2])
    data = json.loads(json.dumps(dataclasses.asdict(record)))
    assert isinstance(data["inner"]["scale"], list)
    assert from_json(Outer, data) == record


def test_a_missing_field_is_its_default_an_unknown_key_is_left_out_and_none_stays_none():
    data = {"inner": {"scale": [0.2, 0.3]}, "maybe": None, "counts": [], "written_by_a_newer_version": 1}
    assert from_json(Outer, data) == Outer(Inner((0.2, 0.3)), None, [])


def test_a_field_that_defaults_to_none_is_optional_in_the_schema_and_others_required():
    @dataclasses.dataclass
    class Record:
        kept: int
        added: str | None = None

    schema = json_schema(Record)
    assert schema["required"] == ["kept"]
    assert schema["properties"]["added"]["type"] == ["string", "null"]


def _leaves(value, path=()):
    """Every path into ``value``: its objects' keys and its arrays' indices, at every depth."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _leaves(item, (*path, key))


_RECORD = dataclasses.replace(make_record(), bootstrap=StoredReplicates("tokens", 3, [[1.5] * 12, [2.0] * 12]))
_DATA = json.loads(json.dumps(_RECORD.to_dict()))
_PATHS = list(_leaves(_DATA))[1:]
_VALUES = [None, True, False, 0, -1, 3, 2.0, 0.5, 150.0, "", "all", "x", [], [1.0], [[1.0]], {}, "<delete>"]


def _changed(changes):
    """A copy of the record's data with each (path, value) set, or the key deleted."""
    data = json.loads(json.dumps(_DATA))
    for path, value in changes:
        parent = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            if value != "<delete>":
                parent[path[-1]] = value
            elif isinstance(parent, dict):
                del parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the place
    return data


def _agrees_with_jsonschema(data):
    reference = [tuple(error.absolute_path) for error in jsonschema.Draft202012Validator(PROFILE_SCHEMA).iter_errors(data)]
    error = schema_error(PROFILE_SCHEMA, data)
    return (error is None) == (not reference) and (error is None or error[0] in reference)


def test_the_schema_check_judges_every_single_change_to_a_record_as_a_json_schema_validator_does():
    """Every place of a record (with a bootstrap) given a value of every JSON type, or
    removed: schema_error refuses exactly those jsonschema refuses, at one of its errors."""
    assert schema_error(PROFILE_SCHEMA, _DATA) is None
    disagreements = [(path, value) for path in _PATHS for value in _VALUES
                     if not _agrees_with_jsonschema(_changed([(path, value)]))]
    assert not disagreements


@settings(max_examples=200, deadline=None)
@given(changes=st.lists(st.tuples(st.sampled_from(_PATHS), st.sampled_from(_VALUES)), min_size=2, max_size=4))
def test_the_schema_check_judges_several_changes_as_a_json_schema_validator_does(changes):
    assert _agrees_with_jsonschema(_changed(changes))


def test_the_schema_check_refuses_a_keyword_it_cannot_check():
    with pytest.raises(ValueError, match="pattern"):
        schema_error({"type": "string", "pattern": "^a"}, "b")
