"""Published ViTs profiled offline: weights the test writes, a wrong architecture's file,
and no file with no network."""
import json
import os
import subprocess
import sys

import huggingface_hub
import pytest
import timm
import torch

from ib_tutorial import cli
from ib_tutorial.models import PROFILE_IMG_SIZE, PretrainedUnavailable, load_pretrained
from ib_tutorial.book.pretrained import (
    MEASUREMENTS,
    file_sha256,
    model_transform,
    profile_published,
    prune_published,
)
from ib_tutorial.book.bundles import load_bundle
from ib_tutorial.book.records import validate_profile_record
from ib_tutorial.book import reproduce as reproduce_module
from ib_tutorial.book.reproduce import export_bundle, reproduce
from ib_tutorial.book.run_profiles import variant_label
from ib_tutorial.training.run_config import RunSpec

DINO = "vit_small_patch16_224.dino"


@pytest.fixture(scope="module")
def dino_weights(tmp_path_factory):
    """Random weights of the right architecture, saved as a state dict file."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("weights") / "dino-vits16.pth"
    torch.save(timm.create_model(DINO, pretrained=False, num_classes=0).state_dict(), path)
    return path


def test_a_state_dict_file_gives_a_profile_of_every_measurement_with_its_provenance(dino_weights, tmp_path):
    paths = profile_published(DINO, "synthetic-objects", tmp_path, weights=dino_weights, preset="ci", images=6,
                              progress=False)
    assert [p.name for p in paths] == [f"{t}-{'centred' if c else 'uncentred'}.json" for t, c in MEASUREMENTS]
    assert all(p.parent == tmp_path / "synthetic-objects" / DINO / "profiles" for p in paths)
    for path in paths:
        record = json.loads(path.read_text())
        validate_profile_record(record)
        origin = record["provenance"]
        assert origin["model"] == DINO and origin["weights"] == "dino-vits16.pth"
        assert origin["weights_sha256"] == file_sha256(dino_weights)
        assert origin["input_size"] == 224 and origin["dataset"] == "synthetic-objects" and origin["n_images"] == 6
        profile = record["profile"]
        assert profile["dim"] == 384 and len(profile["eed_percent"]) == 12
        assert profile["n_tokens"] == 6 * {"all": 197, "patch": 196, "cls": 1, "mean": 1}[profile["tokens"]]
    default = json.loads(paths[0].read_text())["profile"]
    assert set(default["companions"]) == {"rankme", "participation_ratio", "twonn"}


def test_the_file_loads_exactly_the_weights_written(dino_weights):
    written = torch.load(dino_weights)
    loaded = load_pretrained(DINO, dino_weights).state_dict()
    assert all(torch.equal(loaded[name], tensor) for name, tensor in written.items())


def test_a_file_of_another_architecture_is_refused_by_name(tmp_path):
    path = tmp_path / "tiny.pth"
    torch.save(timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=0).state_dict(), path)
    with pytest.raises(PretrainedUnavailable, match=f"{path} does not hold the weights of {DINO}"):
        load_pretrained(DINO, path)


def test_unknown_models_and_missing_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="timm knows no model 'vit_gigantic'"):
        load_pretrained("vit_gigantic")
    with pytest.raises(FileNotFoundError, match="no weights file"):
        load_pretrained(DINO, tmp_path / "absent.pth")


def test_each_model_gets_its_own_input_size_and_normalisation():
    _, dino = model_transform(timm.create_model(DINO, pretrained=False, num_classes=0))
    assert dino["input_size"] == 224 and dino["mean"] == pytest.approx([0.485, 0.456, 0.406])
    _, augreg = model_transform(timm.create_model("vit_small_patch16_224.augreg_in21k_ft_in1k", pretrained=False,
                                                  num_classes=0))
    assert augreg["mean"] == pytest.approx([0.5, 0.5, 0.5]) and augreg["std"] == pytest.approx([0.5, 0.5, 0.5])


def test_no_file_and_no_network_is_one_message_and_a_failing_exit(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hub")}  # nothing cached, no network
    result = subprocess.run([sys.executable, "-m", "ib_tutorial", "profile-pretrained", DINO, "--dataset",
                             "synthetic-objects", "--out", str(tmp_path / "out"), "--no-progress"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert f"error: the published weights of {DINO} could not be fetched from the Hugging Face hub" in result.stderr
    assert "--weights FILE" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_published_model_is_pruned_on_seeded_train_and_held_out_images_with_its_provenance(dino_weights, tmp_path):
    path = prune_published(DINO, "synthetic-objects", tmp_path, weights=dino_weights, preset="ci", train_images=12,
                           eval_images=6)
    assert path == tmp_path / "synthetic-objects" / DINO / "pruning" / "mean.json"
    record = json.loads(path.read_text())
    assert record["chance"] == pytest.approx(10.0) and len(record["blocks"]) == 12
    block = record["blocks"][0]
    assert block["ks"] == list(range(1, 385)) and block["n_tokens"] == 12 * 197
    assert all(0 <= accuracy <= 100 for accuracy in block["accuracy"])
    assert block["accuracy"][-1] == pytest.approx(block["unpruned"])  # keeping all 384 directions prunes nothing
    origin = record["provenance"]
    assert origin["model"] == DINO and origin["weights_sha256"] == file_sha256(dino_weights)
    assert origin["input_size"] == 224 and origin["n_images"] == 18
    written = path.stat().st_mtime_ns
    assert prune_published(DINO, "synthetic-objects", tmp_path, weights=dino_weights, preset="ci") == path
    assert path.stat().st_mtime_ns == written  # finished work is not redone


def test_profile_pretrained_prunes_each_model_when_asked(dino_weights, tmp_path, monkeypatch, capsys):
    asked = []
    monkeypatch.setattr(cli, "prune_published", lambda name, spec, out, **options: asked.append((name, spec, out, options))
                        or tmp_path / "pruning.json")
    cli.main(["profile-pretrained", DINO, "--dataset", "synthetic-objects", "--weights", str(dino_weights),
              "--out", str(tmp_path), "--preset", "ci", "--images", "4", "--no-progress", "--prune"])
    [(name, spec, out, options)] = asked
    assert (name, spec, out, options["weights"], options["preset"]) == (DINO, RunSpec.parse("synthetic-objects"), tmp_path, dino_weights, "ci")
    assert f"pruning curves in {tmp_path / 'pruning.json'}" in capsys.readouterr().out


def test_weights_are_the_file_of_one_model(dino_weights, tmp_path):
    result = subprocess.run([sys.executable, "-m", "ib_tutorial", "profile-pretrained", DINO, "deit_small_patch16_224.fb_in1k",
                             "--dataset", "synthetic-objects", "--weights", str(dino_weights), "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "give one MODEL with it" in result.stderr


# The ci tier shrunk to seconds: the run is not what these tests are about.
TINY_RUN = ("synthetic-objects@epochs=1,train_images=16,batch_size=8,img_size=16,patch_size=8,local_crop_size=8,"
            "knn_train_images=8,knn_eval_images=8,out_dim=64,hidden_dim=64,bottleneck_dim=16,arch=vit_tiny")


@pytest.mark.slow
def test_reproduce_profiles_published_models_beside_its_runs_and_the_bundle_carries_them(dino_weights, tmp_path,
                                                                                      monkeypatch, capsys):
    # No file for DeiT and no network (the hub's offline switch, read when it was imported): reported, then skipped.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    deit = "deit_small_patch16_224.fb_in1k"
    out = reproduce("ci", datasets=[TINY_RUN], out=tmp_path / "out", progress=False, all_measurements=False,
                    pretrained=[DINO, deit], weights={DINO: dino_weights})
    assert f"{deit} not profiled: the published weights of {deit} could not be fetched" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["pretrained"][TINY_RUN]) == [DINO] and len(summary["pretrained"][TINY_RUN][DINO]) == 12
    bundle = load_bundle(export_bundle(out, tmp_path / "bundle", allow_dirty=True))
    measured = bundle.pretrained[RunSpec.parse("synthetic-objects")][DINO]
    assert set(measured) == {variant_label(tokens, center) for tokens, center in MEASUREMENTS}
    assert measured["all tokens, centred"].provenance.weights_sha256 == file_sha256(dino_weights)
    # Finished work is not redone: a second call reads the records it wrote.
    before = {path: path.stat().st_mtime_ns for path in (out / "pretrained").rglob("*.json")}
    reproduce("ci", datasets=[TINY_RUN], out=out, progress=False, all_measurements=False, pretrained=[DINO],
              weights={DINO: dino_weights})
    assert before == {path: path.stat().st_mtime_ns for path in (out / "pretrained").rglob("*.json")}


def test_reproduce_profiles_dinov2_at_the_size_the_book_profiles_it_at(monkeypatch, tmp_path):
    sizes = {}
    monkeypatch.setattr(reproduce_module, "profile_published",
                        lambda name, *args, img_size=None, **kwargs: sizes.setdefault(name, img_size) and [])
    for name in (DINO, "vit_small_patch14_dinov2.lvd142m"):
        reproduce_module.profile_published_or_say_why(name, "synthetic-objects", tmp_path, None, None, None, False, False)
    assert sizes == {DINO: None, "vit_small_patch14_dinov2.lvd142m": PROFILE_IMG_SIZE["vit_small_patch14_dinov2.lvd142m"]}
