"""What a network learned besides the class: the object world's factors, their median splits,
and a run's networks measured on them."""
from __future__ import annotations

import colorsys
import json

import numpy as np
import pytest
import torch
from torch.utils.data import Subset
from training_runs import TINY

from ib_tutorial import cli
from ib_tutorial.data.synthetic import OBJECT_FACTORS, SyntheticWorld
from ib_tutorial.book.run_profiles import FILE, MedianSplits, factor_values, measure_factors
from ib_tutorial.training import loop


def test_the_factors_are_the_objects_drawn_colour_and_place():
    world = SyntheticWorld("val", size=40, object_scale=1.0, clutter=0.0)
    for index in range(40):
        factors = world.object_factors(index)
        assert set(factors) == set(OBJECT_FACTORS) and factors == world.object_factors(index)
        centre = world.image_array(index)[int(factors["object y"] * 32), int(factors["object x"] * 32)] / 255
        hue, _, value = colorsys.rgb_to_hsv(*centre)
        assert value == pytest.approx(factors["object value"], abs=0.01)  # the object covers its centre
        assert min(abs(hue - factors["object hue"]), 1 - abs(hue - factors["object hue"])) < 0.02
    with pytest.raises(ValueError, match="draws no object"):
        SyntheticWorld("val", size=4, texture_weight=1.0).object_factors(0)
    with pytest.raises(ValueError, match="no object factors"):
        factor_values(Subset(SyntheticWorld("val", size=4, texture_weight=1.0), [0, 1]))


def test_a_feature_that_holds_one_factor_reads_that_factor_and_not_the_others():
    world = SyntheticWorld("train", size=400, object_scale=1.6, clutter=0.0)
    train, held_out = Subset(world, range(300)), Subset(world, range(300, 400))
    splits = MedianSplits.of(factor_values(train), factor_values(held_out))
    assert splits.constant == [] and set(splits.thresholds) == set(OBJECT_FACTORS)
    chance = splits.chance()
    assert all(40 <= chance[name] <= 60 for name in ("object value", "object hue", "object radius", "background value"))
    # most large objects sit at the centre, so their place ties at the median: chance is the larger side's share
    assert chance["object x"] > 60 and chance["object x"] == pytest.approx(100 * (splits.held_out["object x"] == 0).float().mean())
    centred = MedianSplits.of({"object x": np.full(4, 0.5), "object value": np.arange(4.0)},
                              {"object x": np.full(2, 0.5), "object value": np.array([0.0, 3.0])})
    assert centred.constant == ["object x"] and centred.thresholds == {"object value": 1.5}  # a constant is not split

    def features(values: np.ndarray) -> torch.Tensor:  # a unit vector whose angle is the value
        angle = torch.as_tensor(np.pi * values, dtype=torch.float32)
        return torch.stack([angle.cos(), angle.sin()], dim=1)

    read = splits.accuracies(features(factor_values(train)["object value"]), features(factor_values(held_out)["object value"]),
                             k=20, temperature=0.07)
    assert read["object value"] > 95 and read["object radius"] < 70 and read["background value"] < 70


def test_a_runs_networks_are_measured_at_every_saved_epoch_and_kept(tmp_path, capsys):
    out = tmp_path / "run"
    loop.train("synthetic-objects", "ci", out=out, progress=False, epochs=1, **TINY)
    path = measure_factors(out, progress=False)
    record = json.loads(path.read_text())
    assert path == out / FILE and list(record["epochs"]) == ["0", "1"] and record["held_out"] == TINY["knn_eval_images"]
    for epoch in record["epochs"].values():
        assert set(epoch) == {"cls", "mean"} and all(set(pool) == {"class", *record["thresholds"]} for pool in epoch.values())
    assert record["provenance"]["preset"] == "ci"
    with pytest.raises(ValueError, match=r"saved no network at epoch \[7\]; it saved epochs \[0, 1\]"):
        measure_factors(out, [7])
    stamp = path.stat().st_mtime_ns
    assert measure_factors(out, [1]) == path and path.stat().st_mtime_ns == stamp  # measured epochs are kept
    cli.main(["factors", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert "| epoch | pool | class |" in printed and "object value" in printed
