"""The JSON Schema of a dataclass, derived from its fields' types, so that a record's type and
the schema its files validate against are one definition; a field's ``metadata["schema"]`` adds
constraints. Every field is required but one that defaults to None (older files lack it); other
keys are allowed.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema(cls: type) -> dict:
    """The JSON Schema of dataclass ``cls``: an object with a property per field."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = dataclasses.fields(cls)
    return {
        "type": "object",
        "required": [f.name for f in fields if f.default is not None],
        "properties": {f.name: {**type_schema(hints[f.name]), **f.metadata.get("schema", {})} for f in fields},
    }


def type_schema(hint) -> dict:
    """The JSON Schema of one type annotation."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return json_schema(hint)
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [arg for arg in args if arg is not type(None)]
        return {**type_schema(inner), "type": [type_schema(inner)["type"], "null"]}
    if origin is list:
        return {"type": "array", "items": type_schema(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(args[1])}
    raise TypeError(f"no JSON Schema for the type {hint!r}; give the field a supported type")


def from_json(cls: type, data: dict):
    """The dataclass ``cls`` of JSON ``data`` written by ``dataclasses.asdict``: nested
    dataclasses and tuples rebuilt, a field the data lacks (newer than the file) at its
    default, keys the type does not name left out."""
    hints = _type_hints(cls)
    return cls(**{f.name: _from_json_value(hints[f.name], data[f.name]) for f in dataclasses.fields(cls) if f.name in data})


# Resolving a class's annotations compiles each of them: once per class, not once per record read.
_type_hints = functools.cache(typing.get_type_hints)


def _from_json_value(hint, value):
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        if value is None:
            return None
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if dataclasses.is_dataclass(hint):
        return from_json(hint, value)
    if typing.get_origin(hint) is tuple and isinstance(value, list):
        return tuple(value)
    return value


# The JSON types, as Python's json module reads them (a bool is not a number; 2.0 is an integer).
_IS_TYPE = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: (isinstance(value, int) and not isinstance(value, bool))
    or (isinstance(value, float) and value.is_integer()),
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
    "null": lambda value: value is None,
}
_KEYWORDS = {"type", "required", "properties", "additionalProperties", "items", "enum", "const", "minimum", "maximum",
             "minItems"}


def schema_error(schema: dict, value, path: tuple = ()) -> tuple[tuple, str] | None:
    """The first place, in the data's order, where ``value`` breaks ``schema``, as (path,
    message); None where it conforms.

    It checks the keywords :func:`json_schema` and the fields' metadata write, as ``jsonschema``
    does (the tests hold it against it), and refuses any other. Importing ``jsonschema`` cost
    each chapter's kernel a second and a half, and its walk over a bootstrap's numbers one by
    one most of a bundle's loading time."""
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"no check for the schema keywords {sorted(unknown)}")
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds is not None and not any(_IS_TYPE[kind](value) for kind in kinds):
        return path, f"{value!r} is not of type {' or '.join(map(repr, kinds))}"
    if "const" in schema and value != schema["const"]:
        return path, f"{schema['const']!r} was expected"
    if "enum" in schema and value not in schema["enum"]:
        return path, f"{value!r} is not one of {schema['enum']!r}"
    if _IS_TYPE["number"](value):
        if value < schema.get("minimum", value):
            return path, f"{value!r} is less than the minimum of {schema['minimum']!r}"
        if value > schema.get("maximum", value):
            return path, f"{value!r} is greater than the maximum of {schema['maximum']!r}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return path, f"{value!r} has fewer than {schema['minItems']} items"
        items = schema.get("items")
        if items is not None and not _numbers_only(items, value):  # arrays of numbers in one pass, not a walk
            for index, item in enumerate(value):
                if error := schema_error(items, item, (*path, index)):
                    return error
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", ()) if key not in value]
        if missing:
            return path, f"{missing[0]!r} is a required property"
        for key, item in value.items():
            item_schema = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if item_schema is not None and (error := schema_error(item_schema, item, (*path, key))):
                return error
    return None


def _numbers_only(schema: dict, items: list) -> bool:
    """Whether ``items`` conforms to ``schema`` as numbers, or arrays (of arrays) of numbers, with
    no other constraint."""
    if schema == {"type": "number"}:
        return {type(item) for item in items} <= {int, float}
    if schema.keys() == {"type", "items"} and schema["type"] == "array":
        return all(isinstance(item, list) for item in items) and all(_numbers_only(schema["items"], item) for item in items)
    return False
