"""The on-disk schema of measured profiles, and the provenance every file carries.

A profile file is JSON::

    {"schema": "ib-tutorial/profile/1",
     "label": "...", "epoch": 10 | null,
     "profile": {n_eff, eed_percent, dim, tokens, center, n_images, n_tokens, companions},
     "provenance": {code_version, preset, config_hash, packages, device, date,
                    dataset, n_images, n_tokens}}

:data:`PROFILE_SCHEMA` is the JSON Schema they validate against.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from ..files import write_json_atomic
from ..measure.block_profile import Profile

SCHEMA_ID = "ib-tutorial/profile/1"

_PER_BLOCK = {"type": "array", "items": {"type": "number"}, "minItems": 1}
#: The JSON Schema every profile file validates against.
PROFILE_SCHEMA: dict = {
    "type": "object",
    "required": ["schema", "label", "epoch", "profile", "provenance"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "label": {"type": "string"},
        "epoch": {"type": ["integer", "null"], "minimum": 0},
        "profile": {
            "type": "object",
            "required": ["n_eff", "eed_percent", "dim", "tokens", "center", "n_images", "n_tokens", "companions"],
            "properties": {
                "n_eff": _PER_BLOCK,
                "eed_percent": {**_PER_BLOCK, "items": {"type": "number", "minimum": 0, "maximum": 100}},
                "dim": {"type": "integer", "minimum": 1},
                "tokens": {"enum": ["all", "cls", "patch", "mean"]},
                "center": {"type": "boolean"},
                "n_images": {"type": "integer", "minimum": 0},
                "n_tokens": {"type": "integer", "minimum": 2},
                "companions": {"type": "object", "additionalProperties": _PER_BLOCK},
            },
        },
        "provenance": {
            "type": "object",
            "required": ["code_version", "preset", "config_hash", "packages", "device", "date",
                         "dataset", "n_images", "n_tokens"],
            "properties": {
                "code_version": {"type": "string"},
                "preset": {"type": "string"},
                "config_hash": {"type": "string"},
                "packages": {"type": "object", "additionalProperties": {"type": "string"}},
                "device": {"type": "string"},
                "date": {"type": "string"},
                "dataset": {"type": "string"},
                "n_images": {"type": "integer"},
                "n_tokens": {"type": "integer"},
            },
        },
    },
}

_PACKAGES = ("ib-tutorial", "torch", "timm", "numpy")


def config_hash(config: dict) -> str:
    """SHA-256 (first 16 hex digits) of the config as canonical JSON: equal settings, equal hash."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def code_version() -> str:
    """The git commit of the package's checkout (with ``+dirty`` if it has local
    changes), else the installed package version."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return f"ib-tutorial {metadata.version('ib-tutorial')}"


def source_fingerprint() -> str:
    """SHA-256 (first 16 hex digits) of the package's source files and the versions of the
    packages it runs on: equal fingerprints, equal code, whatever git says."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(json.dumps(_package_versions(), sort_keys=True).encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def provenance(*, preset: str, config: dict, dataset: str, n_images: int, n_tokens: int, device: str) -> dict:
    """Everything needed to say where a measurement came from: code, preset, settings,
    packages, device, date, and the images and tokens it was computed on."""
    return {
        "code_version": code_version(),
        "preset": preset,
        "config_hash": config_hash(config),
        "packages": _package_versions(),
        "device": device,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "dataset": dataset,
        "n_images": n_images,
        "n_tokens": n_tokens,
    }


def profile_record(profile: Profile, *, label: str, epoch: int | None, provenance: dict) -> dict:
    """A schema-valid record of one profile."""
    record = {"schema": SCHEMA_ID, "label": label, "epoch": epoch, "profile": profile.to_dict(),
              "provenance": provenance}
    validate_profile_record(record)
    return record


def validate_profile_record(record: dict) -> None:
    """Raise ``ValueError`` naming the first field that breaks :data:`PROFILE_SCHEMA`."""
    # Imported here: importing jsonschema builds the grammars of its optional format
    # checkers (1.5 s), which every `ib-tutorial` process would pay, training included.
    import jsonschema

    try:
        jsonschema.validate(record, PROFILE_SCHEMA)
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise ValueError(f"not a valid {SCHEMA_ID} record at {where}: {error.message}") from None


def save_profile_record(path: str | os.PathLike, record: dict) -> None:
    """Validate, then write atomically."""
    validate_profile_record(record)
    write_json_atomic(path, record)


def load_profile_record(path: str | os.PathLike) -> dict:
    """Read and validate a profile file; the error names the file."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
        validate_profile_record(record)
    except (json.JSONDecodeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
    return record


def profile_from_record(record: dict) -> Profile:
    """The :class:`~ib_tutorial.measure.block_profile.Profile` stored in a record."""
    return Profile(**record["profile"])


