"""From a training run to profiles, and the whole reproduce bundle, on the ci preset."""
import json
import os
import signal
from pathlib import Path

import pytest
from shared_data import DTD_SAMPLE, needs

from ib_tutorial.cli import main
from ib_tutorial.compact import is_compact
from ib_tutorial.data import get_dataset
from ib_tutorial.data.spec import parse_spec, spec_folder
from ib_tutorial.presets import get_preset
from ib_tutorial.book.tables import write_comparison_table
from ib_tutorial.book.records import validate_profile_record
from ib_tutorial.book.reproduce import reproduce
from ib_tutorial.book.run_profiles import load_run_profiles, profile_run
from ib_tutorial.training.runs import RunDirectory

DATASETS = ["synthetic-objects", "synthetic-mix:texture_weight=0.75"]


# Every test here trains and profiles ci runs (the shared bundle takes minutes): the full suite only.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    reproduce("ci", datasets=DATASETS, out=out, progress=False)
    write_comparison_table(out)  # as `ib-tutorial reproduce` does
    return out


def test_reproduce_writes_runs_profiles_summary_and_table(bundle):
    summary = json.loads((bundle / "summary.json").read_text())
    assert summary["preset"] == "ci" and list(summary["datasets"]) == DATASETS
    for dataset in DATASETS:
        name, options = parse_spec(dataset)
        run = RunDirectory(bundle / spec_folder(dataset))
        epochs = run.backbone_epochs()
        config = run.read_config()
        assert epochs[0] == 0 and epochs[-1] == config.train.epochs
        assert config.dataset == name and config.dataset_options == options
        records = load_run_profiles(bundle / spec_folder(dataset))
        assert [r.epoch for r in records] == epochs
        for record in records:
            assert record.provenance.dataset == name
            assert record.provenance.preset == "ci"
            assert len(record.profile.eed_percent) == 12
            assert set(record.profile.companions) == {"rankme", "participation_ratio", "twonn"}
        entry = summary["datasets"][dataset]
        assert entry["random_init_eed_percent"] == records[0].profile.eed_percent
        assert entry["final_eed_percent"] == records[-1].profile.eed_percent
        assert entry["knn_accuracy"] is not None and entry["knn_accuracy_first"]["epoch"] == 0
        patch = config.view.patch_size
        assert entry["raw_patch_dim"] == 3 * patch**2 and 1 <= entry["raw_patch_n_eff"] <= entry["raw_patch_dim"]
        assert all(row["verdict"] == "not reported" for row in entry["comparison"])
        # both worlds draw objects: what the first and the last teacher learned besides the class is measured
        assert list(json.loads((run.path / "factors.json").read_text())["epochs"]) == [str(epochs[0]), str(epochs[-1])]
    table = (bundle / "comparison.md").read_text()
    assert all(dataset in table for dataset in DATASETS)


def test_rerunning_skips_finished_work(bundle, capsys):
    before = {p: p.stat().st_mtime_ns for p in bundle.rglob("*") if p.is_file() and p.suffix in (".pt", ".json")}
    before.pop(bundle / "summary.json")
    reproduce("ci", datasets=DATASETS, out=bundle, progress=False)
    assert "training finished earlier" in capsys.readouterr().out
    after = {p: p.stat().st_mtime_ns for p in before}
    assert after == before


def test_a_stop_as_a_profile_or_pruning_file_is_put_in_place_leaves_the_previous_one(bundle, monkeypatch):
    """SIGINT (Ctrl-C) arriving as ``reproduce`` renames a profile or pruning file into place:
    the previous file stays under the name (a cut-short profile, which the next run measures
    again, or no pruning file), no temporary file is left, and the next ``reproduce``
    writes what was missing, equal to what it had written before."""
    run = RunDirectory(bundle / DATASETS[0])
    last = run.backbone_epochs()[-1]
    profile, pruning = run.path / "profiles" / f"{last}.json", run.path / "pruning" / f"mean-{last}.json"
    whole = {path: json.loads(path.read_text()) for path in (profile, pruning)}
    cut_short = profile.read_bytes()[: profile.stat().st_size // 2]
    profile.write_bytes(cut_short)
    pruning.unlink()
    replace = os.replace

    def interrupted_at(target: Path):
        def replace_or_interrupt(source, destination):
            if Path(destination) == target:
                signal.raise_signal(signal.SIGINT)  # Python's handler raises KeyboardInterrupt here
            replace(source, destination)
        return replace_or_interrupt

    outer = signal.signal(signal.SIGINT, signal.default_int_handler)  # a test run may start with SIGINT ignored
    try:
        for target in (profile, pruning):  # reproduce profiles a run before it prunes it
            with monkeypatch.context() as patched:
                patched.setattr(os, "replace", interrupted_at(target))
                with pytest.raises(KeyboardInterrupt):
                    reproduce("ci", datasets=DATASETS, out=bundle, progress=False)
            if target == profile:
                assert profile.read_bytes() == cut_short
    finally:
        signal.signal(signal.SIGINT, outer)
    assert not pruning.exists() and not list(run.path.rglob("*.tmp"))
    reproduce("ci", datasets=DATASETS, out=bundle, progress=False)
    for path, record in whole.items():
        again = json.loads(path.read_text())
        assert {key: again[key] for key in record if key != "provenance"} == \
               {key: value for key, value in record.items() if key != "provenance"}


def test_other_token_choices_go_to_their_own_folder(bundle):
    paths = profile_run(bundle / DATASETS[0], tokens="cls", center=False, images=32, companions=(), progress=False)
    assert all(p.parent.name == "cls-uncentred" for p in paths)
    records = load_run_profiles(bundle / DATASETS[0], tokens="cls", center=False)
    assert all(r.profile.tokens == "cls" and not r.profile.center for r in records)
    assert all(r.profile.n_tokens == 32 for r in records)


def test_profile_command_names_a_missing_run(tmp_path):
    with pytest.raises(SystemExit, match="not a training run"):
        main(["profile", str(tmp_path / "nothing")])


def test_profile_command_rejects_more_images_than_the_split_has(bundle):
    with pytest.raises(SystemExit, match="lower --images"):
        main(["profile", str(bundle / DATASETS[0]), "--tokens", "mean", "--images", "1000000", "--no-progress"])


def test_export_copies_results_but_no_weights(bundle, tmp_path):
    from ib_tutorial.book.reproduce import export_bundle

    dest = export_bundle(bundle, tmp_path / "results", allow_dirty=True)  # this checkout may have local changes
    copied = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert {"summary.json", "comparison.md", "synthetic-objects/config.json",
            "synthetic-objects/metrics.jsonl", "synthetic-objects/profiles/0.json", "synthetic-objects/factors.json",
            f"{spec_folder(DATASETS[1])}/config.json", f"{spec_folder(DATASETS[1])}/factors.json"} <= copied
    assert not any(name.endswith(".pt") for name in copied)
    runs = [entry["run"] for entry in json.loads((dest / "summary.json").read_text())["datasets"].values()]
    assert runs == [spec_folder(d) for d in DATASETS]  # relative to the bundle: no machine's paths
    assert load_run_profiles(dest / "synthetic-objects") == load_run_profiles(bundle / "synthetic-objects")
    # Stored as the repository stores them: the records and logs compact, what describes a run as text.
    assert is_compact(dest / "synthetic-objects/profiles/0.json") and is_compact(dest / "synthetic-objects/metrics.jsonl")
    assert not is_compact(dest / "summary.json") and not is_compact(dest / "synthetic-objects/config.json")


def test_pretrained_control_is_skipped_cleanly_offline(bundle, monkeypatch, capsys):
    import huggingface_hub.constants

    from ib_tutorial.book.run_profiles import profile_pretrained

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", "/nonexistent-hf-cache")
    assert profile_pretrained(bundle / DATASETS[0]) is None
    assert "vit_small_patch16_224.dino" in capsys.readouterr().out
    assert not (bundle / DATASETS[0] / "controls").exists()
    reproduce("ci", datasets=DATASETS[:1], out=bundle, progress=False, pretrained_control=True)
    assert "pretrained_dino_eed_percent" not in json.loads((bundle / "summary.json").read_text())["datasets"][DATASETS[0]]


def test_pretrained_control_profile_is_written_when_weights_load(bundle, monkeypatch):
    # Stand in for the hub download with a randomly initialised ViT-S/16 of the same shape:
    # this checks the writing path, not the pretrained weights.
    from ib_tutorial import models
    from ib_tutorial.book import run_profiles
    from ib_tutorial.book.run_profiles import profile_pretrained

    monkeypatch.setattr(run_profiles, "pretrained_dino_vit_small", lambda: models.vit_small(224, 16))
    path = profile_pretrained(bundle / spec_folder(DATASETS[1]), images=8)
    record = json.loads(path.read_text())
    validate_profile_record(record)
    assert record["epoch"] is None and record["provenance"]["n_images"] == 8
    assert record["profile"]["n_tokens"] == 8 * 197
    # The provenance hashes the control's own model and input size, not the run's.
    from ib_tutorial.book.records import config_hash
    from ib_tutorial.training.runs import RunDirectory

    config = RunDirectory(bundle / spec_folder(DATASETS[1])).read_config().to_dict()
    expected = {**config, "model": models.PRETRAINED_DINO, "img_size": 224}
    assert record["provenance"]["config_hash"] == config_hash(expected) != config_hash(config)


@needs(DTD_SAMPLE)
def test_reproduce_on_a_real_folder_uses_its_test_split_and_all_of_it_when_small(tmp_path, capsys):
    root = tmp_path / "data"
    root.mkdir()
    (root / "dtd").symlink_to(DTD_SAMPLE, target_is_directory=True)
    spec = "dtd:folder=dtd"  # relative to the data root: no machine's path in the run's settings
    out = reproduce("ci", datasets=[spec], out=tmp_path / "bundle", root=root, progress=False)
    config = RunDirectory(out / spec_folder(spec)).read_config()
    assert config.held_out_split == "test" and config.dataset_options == {"folder": "dtd"}
    test_images = sum(1 for _ in get_dataset("dtd", "test", root=root, folder="dtd"))
    assert test_images < get_preset("ci").profile.images
    assert all(r.profile.n_images == test_images for r in load_run_profiles(out / spec_folder(spec)))
    assert f"profiling all {test_images}" in capsys.readouterr().out


def test_export_refuses_profiles_of_uncommitted_code(bundle, tmp_path):
    import shutil

    from ib_tutorial.book.reproduce import export_bundle

    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy, ignore=shutil.ignore_patterns("*.pt"))
    for path in copy.glob("*/profiles/**/*.json"):
        record = json.loads(path.read_text())
        record["provenance"]["code_version"] = "0123abc"
        path.write_text(json.dumps(record))
    assert export_bundle(copy, tmp_path / "clean").exists()
    profile = next(copy.glob("*/profiles/0.json"))
    record = json.loads(profile.read_text())
    record["provenance"]["code_version"] = "0123abc+dirty"
    profile.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="uncommitted code.*--allow-dirty"):
        export_bundle(copy, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    assert export_bundle(copy, tmp_path / "allowed", allow_dirty=True).exists()


def test_profiling_a_finished_run_again_draws_no_empty_progress_bar(bundle, capsys):
    """A page of a chapter run twice must not show a '0/0' bar for work already done."""
    profile_run(bundle / DATASETS[0], progress=True)
    assert "profiling" not in capsys.readouterr().err
