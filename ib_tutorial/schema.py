"""The JSON Schema of a dataclass, derived from its fields' types, so that a record's type
and the schema its files validate against are one definition.

Types map to JSON types (``str`` string, ``int`` integer, ``float`` number, ``bool``
boolean, ``list[X]`` array, ``dict[str, X]`` object, ``X | None`` adds null, ``Literal``
an enum, a nested dataclass an object); a field's ``metadata["schema"]`` adds constraints
(``minimum``, ``minItems``, ``const``, ...). Every field is required (a record is written
whole) but one that defaults to None, which files written before it was added lack; other
keys are allowed, so a record may carry more than its type names. :func:`from_json` reads
such data back as the dataclass.
"""
from __future__ import annotations

import dataclasses
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
    """The dataclass ``cls`` of JSON ``data`` (a file written by ``dataclasses.asdict``):
    nested dataclasses (``X`` or ``X | None``) rebuilt from their objects, arrays made tuples
    where the field is a tuple, a field the data lacks (newer than the file) at its default,
    keys the type does not name left out."""
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _from_json_value(hints[f.name], data[f.name]) for f in dataclasses.fields(cls) if f.name in data})


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
