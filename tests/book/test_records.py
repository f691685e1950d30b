"""Profile files: schema, provenance, captions, atomic writes."""
import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
import torch
from profile_records import make_profile, make_record

from ib_tutorial.measure.bootstrap import BootstrapProfile
from ib_tutorial.book import records
from ib_tutorial.book.plots import profile_caption
from ib_tutorial.book.records import (
    code_version,
    config_hash,
    Provenance,
    load_profile_record,
    save_profile_record,
    validate_profile_record,
)


def test_record_round_trips(tmp_path):
    record = make_record()
    save_profile_record(tmp_path / "profiles" / "3.json", record)
    loaded = load_profile_record(tmp_path / "profiles" / "3.json")
    assert loaded == record and loaded.profile == make_profile()
    assert isinstance(loaded.provenance, Provenance) and loaded.provenance.model is None
    assert list((tmp_path / "profiles").iterdir()) == [tmp_path / "profiles" / "3.json"]  # no temp files left


def test_a_run_record_is_written_as_before_and_a_published_models_keeps_its_extra_provenance(tmp_path):
    data = json.loads(json.dumps(make_record().to_dict()))
    assert list(data) == ["schema", "label", "epoch", "profile", "provenance", "bootstrap"]
    assert list(data["provenance"]) == ["code_version", "preset", "config_hash", "packages", "device", "date",
                                        "dataset", "n_images", "n_tokens"]  # no nulls for a published model's keys
    published = dataclasses.replace(make_record(), epoch=None, provenance=dataclasses.replace(
        make_record().provenance, model="vit_small_patch16_224.dino", dataset_spec="dtd:folder=dtd",
        weights="dino.pth", weights_sha256="ab" * 32, input_size=224, interpolation="bicubic",
        mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]))
    save_profile_record(tmp_path / "published.json", published)
    assert load_profile_record(tmp_path / "published.json") == published


def test_keys_a_record_type_does_not_name_are_allowed_and_left_out_when_read(tmp_path):
    record = make_record()
    data = record.to_dict()
    data["note"], data["provenance"]["host"] = "measured twice", "lab-1"
    (tmp_path / "3.json").write_text(json.dumps(data))
    assert load_profile_record(tmp_path / "3.json") == record


def test_a_record_keeps_its_bootstrap_and_older_records_without_one_still_load(tmp_path):
    n_eff = make_profile().n_eff
    replicates = torch.tensor([n_eff] * 4, dtype=torch.float64) + torch.arange(4.0)[:, None]
    bootstrap = BootstrapProfile(n_eff, replicates, 384, 0.9, "basic", "tokens", 7)
    record = dataclasses.replace(make_record(1), bootstrap=bootstrap.stored())
    save_profile_record(tmp_path / "1.json", record)
    read = records.bootstrap_of(load_profile_record(tmp_path / "1.json"), level=0.5)
    assert read.seed == 7 and read.level == 0.5 and torch.equal(read.replicates, replicates)
    older = {key: value for key, value in record.to_dict().items() if key != "bootstrap"}
    (tmp_path / "0.json").write_text(json.dumps(older))
    assert records.bootstrap_of(load_profile_record(tmp_path / "0.json")) is None


def test_provenance_names_its_sources():
    prov = make_record().provenance
    assert prov.preset == "ci" and prov.dataset == "synthetic-objects"
    assert prov.n_tokens == 64 * 65
    assert {"torch", "timm", "python", "ib-tutorial"} <= set(prov.packages)
    assert prov.code_version == code_version()


def test_code_version_is_the_checkout_commit_and_says_when_it_is_dirty():
    """The commit the package was loaded from, ``+dirty`` exactly when tracked files differ
    from it; the package version outside a git checkout."""
    version = code_version()
    git = ["git", "-C", str(Path(records.__file__).parent)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        assert version.startswith("ib-tutorial ")
        return
    changed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", version)
    assert version == head.stdout.strip() + ("+dirty" if changed else "")


def test_the_caption_of_a_record_names_its_source():
    caption = profile_caption(make_record())
    assert caption.startswith("preset ci (reduced") and "synthetic-objects" in caption and "ViT-S (D = 384" in caption
    assert "64 held-out images" in caption and "4,160 tokens (all, centred)" in caption


def test_config_hash_ignores_key_order_but_not_values():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash({"a": 1, "b": 2}) != config_hash({"a": 1, "b": 3})


@pytest.mark.parametrize(
    "breakage, where",
    [
        (lambda r: r["profile"].update(tokens="some"), "profile/tokens"),
        (lambda r: r["profile"]["eed_percent"].__setitem__(0, 140.0), "profile/eed_percent/0"),
        (lambda r: r["provenance"].pop("preset"), "provenance"),
        (lambda r: r.update(schema="other/1"), "schema"),
    ],
)
def test_invalid_records_name_the_field(breakage, where):
    data = make_record().to_dict()
    breakage(data)
    with pytest.raises(ValueError, match=where):
        validate_profile_record(data)


def _record_with_replicates(rows):
    data = make_record().to_dict()
    data["bootstrap"] = {"variant": "tokens", "seed": 0, "n_eff": rows}
    return data


@pytest.mark.parametrize(
    "rows, where",
    [
        ([[1.0, 2.0], [1.0, "2.0"]], "bootstrap/n_eff/1/1"),
        ([[1.0, 2.0], [1.0, True]], "bootstrap/n_eff/1/1"),
        ([[1.0, 2.0], [None, 2.0]], "bootstrap/n_eff/1/0"),
        ([[1.0, 2.0], 3.0], "bootstrap/n_eff/1"),
        ([], "bootstrap/n_eff"),
    ],
)
def test_every_replicate_of_a_bootstrap_is_checked_not_only_the_first(rows, where):
    with pytest.raises(ValueError, match=f"at {where}: "):
        validate_profile_record(_record_with_replicates(rows))
    validate_profile_record(_record_with_replicates([[1.0, 2], [3.5, 4.0]]))


def test_a_broken_file_is_named_and_left_alone(tmp_path):
    path = tmp_path / "0.json"
    path.write_text('{"schema": ')
    with pytest.raises(ValueError, match="0.json"):
        load_profile_record(path)
    assert path.read_text() == '{"schema": '


def test_runs_differing_in_one_setting_are_grouped_with_their_plain_run():
    from profile_records import bundle_run

    from ib_tutorial.book.bundles import Bundle, runs_differing_in

    specs = ["tiny-imagenet", "tiny-imagenet@objective=supervised", "tiny-imagenet@arch=vit_small",
             "dtd:folder=dtd@objective=supervised", "synthetic-objects"]
    bundle = Bundle("b", None, "laptop", {spec: bundle_run(spec) for spec in specs})
    objectives = runs_differing_in(bundle, "objective")
    assert list(objectives) == ["tiny-imagenet"]  # dtd's supervised run has no plain run beside it
    assert list(objectives["tiny-imagenet"]) == ["dino", "supervised"]
    assert objectives["tiny-imagenet"]["supervised"].spec.text == "tiny-imagenet@objective=supervised"
    widths = runs_differing_in(bundle, "arch")
    assert list(widths["tiny-imagenet"]) == ["vit_tiny", "vit_small"]
