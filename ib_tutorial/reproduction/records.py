"""The on-disk schema of measured profiles, and the provenance every file carries.

A profile file is JSON::

    {"schema": "ib-tutorial/profile/1",
     "label": "...", "epoch": 10 | null,
     "profile": {n_eff, eed_percent, dim, tokens, center, n_images, n_tokens, companions},
     "provenance": {code_version, preset, config_hash, packages, device, date,
                    dataset, n_images, n_tokens},
     "bootstrap": {variant, seed, n_eff: [[...], ...]} | null}

``bootstrap`` holds the replicates of a bootstrap over the profile's images
(:class:`~ib_tutorial.measure.bootstrap.StoredReplicates`), from which
:func:`bootstrap_of` gives intervals; files written before it was kept have none.

:class:`ProfileRecord` is their type, and :data:`PROFILE_SCHEMA`, the JSON Schema they
validate against, is derived from it (:func:`ib_tutorial.schema.json_schema`).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

from ..files import write_json_atomic
from ..measure.block_profile import Profile
from ..measure.bootstrap import LEVEL, METHODS, BootstrapProfile, StoredReplicates
from ..schema import json_schema

SCHEMA_ID = "ib-tutorial/profile/1"

@dataclass(frozen=True)
class Provenance:
    """Where a measurement came from: code, preset, settings (their hash), packages, device,
    date, and the images and tokens it was computed on (a published model's records add
    the model, its weights and input)."""

    code_version: str
    preset: str
    config_hash: str
    packages: dict[str, str]
    device: str
    date: str
    dataset: str
    n_images: int
    n_tokens: int


@dataclass(frozen=True)
class ProfileRecord:
    """One profile file: a :class:`~ib_tutorial.measure.block_profile.Profile` with its label,
    epoch (None for a published model), :class:`Provenance` and, where one was drawn, its
    bootstrap's replicates."""

    schema: str = field(metadata={"schema": {"const": SCHEMA_ID}})
    label: str
    epoch: int | None = field(metadata={"schema": {"minimum": 0}})
    profile: Profile
    provenance: Provenance
    bootstrap: StoredReplicates | None = None


#: The JSON Schema every profile file validates against, derived from :class:`ProfileRecord`.
PROFILE_SCHEMA: dict = json_schema(ProfileRecord)

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


def profile_record(profile: Profile, *, label: str, epoch: int | None, provenance: dict,
                   bootstrap: BootstrapProfile | None = None) -> dict:
    """A schema-valid record of one profile, with its bootstrap's replicates when given."""
    stored = asdict(bootstrap.stored()) if bootstrap is not None else None
    record = {"schema": SCHEMA_ID, "label": label, "epoch": epoch, "profile": profile.to_dict(),
              "provenance": provenance, "bootstrap": stored}
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


def bootstrap_of(record: dict, level: float = LEVEL, method: str = METHODS[0]) -> BootstrapProfile | None:
    """The bootstrap over images stored in a profile record, read at ``level`` with
    ``method``; None for a record without one."""
    stored = record.get("bootstrap")
    if stored is None:
        return None
    profile = record["profile"]
    return BootstrapProfile.from_stored(profile["n_eff"], profile["dim"], StoredReplicates(**stored), level, method)
