"""The on-disk schema of measured profiles, and the provenance every file carries.

A profile file is JSON::

    {"schema": "ib-tutorial/profile/1",
     "label": "...", "epoch": 10 | null,
     "profile": {n_eff, eed_percent, dim, tokens, center, n_images, n_tokens, companions},
     "provenance": {code_version, preset, config_hash, packages, device, date,
                    dataset, n_images, n_tokens},
     "bootstrap": {variant, seed, n_eff: [[...], ...]} | null}

``bootstrap`` holds the replicates of a bootstrap over the profile's images, from which
:func:`bootstrap_of` gives intervals (older files have none). :data:`PROFILE_SCHEMA`, the
JSON Schema the files validate against, is derived from :class:`ProfileRecord`.
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

from ..compact import read_json
from ..files import write_json_atomic
from ..measure.block_profile import Profile
from ..measure.bootstrap import LEVEL, METHODS, BootstrapProfile, StoredReplicates
from ..schema import from_json, json_schema, schema_error

SCHEMA_ID = "ib-tutorial/profile/1"


@dataclass(frozen=True)
class Provenance:
    """Where a measurement came from. Only a published model's records
    (:func:`~ib_tutorial.book.pretrained.profile_published`) name the model, dataset spec,
    weights and input; a run's leave them None, and its files lack them."""

    code_version: str
    preset: str
    config_hash: str
    packages: dict[str, str]
    device: str
    date: str
    dataset: str
    n_images: int
    n_tokens: int
    model: str | None = None
    dataset_spec: str | None = None
    weights: str | None = None
    weights_sha256: str | None = None
    input_size: int | None = None
    interpolation: str | None = None
    mean: list[float] | None = None
    std: list[float] | None = None

    def to_dict(self) -> dict:
        """JSON-ready data, without the fields that are None."""
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class ProfileRecord:
    """One profile file; ``epoch`` is None for a published model."""

    schema: str = field(default=SCHEMA_ID, metadata={"schema": {"const": SCHEMA_ID}})
    label: str
    epoch: int | None = field(metadata={"schema": {"minimum": 0}})
    profile: Profile
    provenance: Provenance
    bootstrap: StoredReplicates | None = None

    def to_dict(self) -> dict:
        """The file's JSON data."""
        return {**asdict(self), "provenance": self.provenance.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> ProfileRecord:
        """The record of a file's JSON data, once :func:`validate_profile_record` has accepted it."""
        return from_json(cls, data)


#: The JSON Schema every profile file validates against, derived from :class:`ProfileRecord`.
PROFILE_SCHEMA: dict = json_schema(ProfileRecord)

_PACKAGES = ("ib-tutorial", "torch", "timm", "numpy")


def config_hash(config: dict) -> str:
    """SHA-256 (first 16 hex digits) of the config as canonical JSON."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def code_version() -> str:
    """The git commit of the package's checkout (``+dirty`` with local changes), else its version."""
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
    """SHA-256 (first 16 hex digits) of the package's source and the versions of what it runs on."""
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


def provenance(*, preset: str, config: dict, dataset: str, n_images: int, n_tokens: int, device: str) -> Provenance:
    """The :class:`Provenance` of a measurement made now by this code."""
    return Provenance(code_version=code_version(), preset=preset, config_hash=config_hash(config),
                      packages=_package_versions(), device=device,
                      date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), dataset=dataset,
                      n_images=n_images, n_tokens=n_tokens)


def validate_profile_record(data: dict) -> None:
    """Raise ``ValueError`` naming the first field of ``data`` that breaks :data:`PROFILE_SCHEMA`."""
    error = schema_error(PROFILE_SCHEMA, data)
    if error is not None:
        where = "/".join(str(part) for part in error[0]) or "(top level)"
        raise ValueError(f"not a valid {SCHEMA_ID} record at {where}: {error[1]}")


def save_profile_record(path: str | os.PathLike, record: ProfileRecord) -> None:
    """Validate, then write atomically."""
    data = record.to_dict()
    validate_profile_record(data)
    write_json_atomic(path, data)


def load_profile_record(path: str | os.PathLike) -> ProfileRecord:
    """Read and validate a profile file; the error names the file."""
    path = Path(path)
    try:
        data = read_json(path)
        validate_profile_record(data)
    except (json.JSONDecodeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from None
    return ProfileRecord.from_dict(data)


def bootstrap_of(record: ProfileRecord, level: float = LEVEL, method: str = METHODS[0]) -> BootstrapProfile | None:
    """The record's bootstrap over images read at ``level`` with ``method``; None without one."""
    if record.bootstrap is None:
        return None
    return BootstrapProfile.from_stored(record.profile.n_eff, record.profile.dim, record.bootstrap, level, method)
