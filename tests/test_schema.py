"""``schema.from_json`` reads back what ``dataclasses.asdict`` and JSON wrote."""
import dataclasses
import json

from ib_tutorial.schema import from_json, json_schema


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
