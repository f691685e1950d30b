"""A run's profiles: measured with the settings the run recorded, and bootstrapped over their images."""
import dataclasses
import json
import math

import pytest
from torch.utils.data import DataLoader
from training_runs import DATASET, TINY

from ib_tutorial import presets
from ib_tutorial.measure.bootstrap import bootstrap_blocks
from ib_tutorial.measure.block_profile import profile_model
from ib_tutorial.measure.shape import middle_dip
from ib_tutorial.presets import ProfileSettings, get_preset
from ib_tutorial.book import claims
from ib_tutorial.book.records import bootstrap_of, load_profile_record
from ib_tutorial.book.run_profiles import load_run_profiles, profile_images, profile_run, profile_settings
from ib_tutorial.training import loop
from ib_tutorial.training.run_config import RunConfig
from ib_tutorial.training.runs import RunDirectory

SETTINGS = ProfileSettings(images=24, batch_size=8, img_size=16, patch_size=8, twonn_samples=100, replicates=30)


def custom_preset():
    """The ``ci`` tier shrunk to seconds, under a name no table knows, profiled by :data:`SETTINGS`."""
    ci = get_preset("ci")
    return ci.replace(name="custom-tiny", profile=SETTINGS, train=dataclasses.replace(ci.train, epochs=1))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("custom") / "run"
    loop.train(DATASET, custom_preset(), out=out, progress=False, **TINY)
    return RunDirectory(out)


@pytest.fixture(scope="module")
def profiled(run):
    return [load_profile_record(path) for path in profile_run(run.path, progress=False)]


def test_the_run_records_its_profile_settings(run):
    assert run.read_config().profile == SETTINGS
    assert json.loads(run.config_path.read_text())["profile"]["replicates"] == SETTINGS.replicates


def test_a_run_of_a_preset_no_table_knows_is_profiled_with_its_own_settings(run, profiled):
    with pytest.raises(ValueError, match="Unknown preset 'custom-tiny'"):
        get_preset("custom-tiny")
    assert [r.epoch for r in profiled] == run.backbone_epochs() == [0, 1]
    assert all(r.profile.n_images == SETTINGS.images for r in profiled)
    assert all(r.provenance.preset == "custom-tiny" for r in profiled)


def test_each_profile_keeps_its_bootstrap_and_reads_intervals_from_it(profiled):
    for record in profiled:
        bootstrap = bootstrap_of(record)
        assert bootstrap.replicates.shape == (SETTINGS.replicates, record.profile.depth)
        assert bootstrap.seed == 0 and bootstrap.variant == "tokens"
        intervals = bootstrap.intervals()
        assert all(i.low < i.high and math.isfinite(i.low) for i in intervals)
        assert bootstrap_of(record, level=0.5).intervals()[3].high - bootstrap_of(record, level=0.5).intervals()[3].low \
            < intervals[3].high - intervals[3].low
    shape = claims.profile_shape(profiled[-1])
    assert shape.bootstrap is not None
    test = claims.mid_depth_minimum(shape)
    assert test.interval is not None and test.interval.estimate == pytest.approx(middle_dip(shape.n_eff))


def test_the_bootstrap_measures_what_the_profile_measures(run):
    # the same covariance from per-image sums as from the profile's running accumulator
    config = run.read_config()
    model = run.load_backbone(1, "cpu")
    images = profile_images(config, SETTINGS.images)
    profile = profile_model(model, DataLoader(images, batch_size=8), progress=False, companions=())
    for tokens in ("all", "patch"):
        bootstrap = bootstrap_blocks(model, images, [("tokens", tokens)], replicates=2, batch_size=8)[("tokens", tokens)]
        expected = profile.n_eff if tokens == "all" else profile_model(
            model, DataLoader(images, batch_size=8), tokens=tokens, progress=False, companions=()).n_eff
        assert bootstrap.n_eff == pytest.approx(expected, rel=1e-6)


def test_every_epoch_is_bootstrapped_on_the_same_resampled_images(profiled):
    # the same seed and images: the replicates of the two epochs are paired, which a change
    # over training needs; the replicates differ because the networks do
    first, last = (bootstrap_of(record) for record in profiled)
    assert first.seed == last.seed
    assert (first.replicates != last.replicates).any()


def test_a_later_change_to_the_preset_does_not_change_how_the_run_is_profiled(run, profiled, monkeypatch, tmp_path):
    config = run.read_config()
    monkeypatch.setitem(presets.PRESETS, "custom-tiny", custom_preset().replace(
        profile=dataclasses.replace(SETTINGS, images=12, replicates=5)))
    assert profile_settings(config) == SETTINGS
    again = load_run_profiles(run.path)
    for path in profile_run(run.path, progress=False):  # found done: nothing measured again
        assert load_profile_record(path) in again
    assert [r.profile.n_images for r in again] == [SETTINGS.images] * 2


def test_a_run_made_before_the_settings_were_recorded_is_profiled_with_its_preset(run, monkeypatch):
    old = dataclasses.replace(run.read_config(), profile=None)
    monkeypatch.setitem(presets.PRESETS, "custom-tiny", custom_preset())
    assert profile_settings(old) == SETTINGS
    assert RunConfig.from_dict({k: v for k, v in old.to_dict().items() if k != "profile"}).profile is None


def test_profile_settings_do_not_stop_a_resume(run):
    config = run.read_config()
    changed = dataclasses.replace(config, profile=dataclasses.replace(SETTINGS, images=12))
    changed.check_resumable(config, run.path)  # no error
    with pytest.raises(ValueError, match="lr"):
        dataclasses.replace(changed, train=dataclasses.replace(config.train, lr=1.0)).check_resumable(config, run.path)


def test_an_uncentred_profile_has_no_bootstrap(run):
    records = [load_profile_record(p) for p in profile_run(run.path, tokens="cls", center=False, companions=(),
                                                            progress=False)]
    assert all(r.bootstrap is None for r in records)
