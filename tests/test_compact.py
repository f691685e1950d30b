"""Committed results in compact form: stored xz-compressed under their own names, read by the
one reader as plain files are, converted and converted back byte for byte."""
import json
import lzma
import shutil
import subprocess
import sys

import pytest

from ib_tutorial.compact import XZ_MAGIC, compact_folder, compactable, is_compact, read_json, read_text
from ib_tutorial.files import stored_results
from ib_tutorial.book.bundles import load_bundle
from ib_tutorial.training.runs import RunDirectory

RECORD = {"schema": "ib-tutorial/profile/1", "bootstrap": {"n_eff": [[1.25, 2.5e-05], [3.0, 4.0]]}}


def bundle_like(folder):
    """A bundle's layout: the files the rule compacts and those it leaves as text."""
    run = folder / "tiny-imagenet"
    for name in ("profiles/0.json", "profiles/mean-uncentred/0.json", "pruning/mean-3.json", "measurement/3.json"):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(json.dumps(RECORD, indent=2) + "\n")
    (run / "metrics.jsonl").write_text('{"kind": "knn", "epoch": 0}\n{"kind": "epoch", "epoch": 1}\n')
    (run / "config.json").write_text("{}\n")
    (folder / "summary.json").write_text("{}\n")
    (folder / "comparison.md").write_text("| a |\n")
    return folder


def test_the_rule_compacts_records_and_logs_and_leaves_what_describes_a_run_as_text(tmp_path):
    folder = bundle_like(tmp_path / "bundle")
    plain = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    assert [p.relative_to(folder).as_posix() for p in compactable(folder)] == [
        "tiny-imagenet/measurement/3.json", "tiny-imagenet/metrics.jsonl", "tiny-imagenet/profiles/0.json",
        "tiny-imagenet/profiles/mean-uncentred/0.json", "tiny-imagenet/pruning/mean-3.json"]
    files, before, after = compact_folder(folder)
    assert files == 5 and before == sum(len(plain[p]) for p in compactable(folder)) and after != before
    for path, text in plain.items():
        assert is_compact(path) == (path in compactable(folder))
        assert read_text(path) == text.decode()  # either form reads as the plain text
    assert lzma.decompress((folder / "tiny-imagenet/profiles/0.json").read_bytes()) == plain[folder / "tiny-imagenet/profiles/0.json"]
    assert RunDirectory(folder / "tiny-imagenet").read_metrics("epoch") == [{"kind": "epoch", "epoch": 1}]
    compacted = {path: path.read_bytes() for path in plain}
    assert compact_folder(folder)[1:] == (after, after)  # once compact, left alone
    assert {path: path.read_bytes() for path in plain} == compacted
    compact_folder(folder, expand=True)
    assert {path: path.read_bytes() for path in plain} == plain  # back as they were, byte for byte


def test_the_command_converts_a_folder_and_prints_what_it_saved(tmp_path):
    folder = bundle_like(tmp_path / "bundle")
    done = subprocess.run([sys.executable, "-m", "ib_tutorial.compact", str(folder)], capture_output=True, text=True, check=True)
    assert f"{folder}: 5 files" in done.stdout and all(is_compact(p) for p in compactable(folder))
    subprocess.run([sys.executable, "-m", "ib_tutorial.compact", "--expand", str(folder)], check=True)
    assert not any(is_compact(p) for p in compactable(folder))
    refused = subprocess.run([sys.executable, "-m", "ib_tutorial.compact", str(tmp_path / "none")], capture_output=True, text=True)
    assert refused.returncode == 2 and "is not a folder" in refused.stderr


def test_a_damaged_compact_file_names_itself_rather_than_reading_as_something_else(tmp_path):
    path = tmp_path / "0.json"
    path.write_bytes(XZ_MAGIC + b"not a stream")
    with pytest.raises(lzma.LZMAError):
        read_json(path)


BUNDLES = sorted(p.parent.name for p in stored_results().glob("*/summary.json"))


@pytest.mark.skipif(not BUNDLES, reason="no bundles committed next to this package")
def test_every_committed_record_is_stored_compact():
    """A bundle committed in plain text would bring the checkout back over what a device
    command carries (tests/benchmarks/test_gpu_plan.py): `python -m ib_tutorial.compact results`."""
    plain = [str(p.relative_to(stored_results())) for p in compactable(stored_results()) if not is_compact(p)]
    assert not plain, f"{len(plain)} records stored plain, e.g. {plain[0]}; run `python -m ib_tutorial.compact results`"


@pytest.mark.skipif("gpu-paper-subsets" not in BUNDLES, reason="no bundles committed next to this package")
def test_a_compact_bundle_reads_as_its_plain_copy(tmp_path):
    shutil.copytree(stored_results("gpu-paper-subsets"), tmp_path / "plain")
    compact_folder(tmp_path / "plain", expand=True)
    assert load_bundle(tmp_path / "plain").runs == load_bundle(stored_results("gpu-paper-subsets")).runs
