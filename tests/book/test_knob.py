"""Knob sweeps: found by objective and settings, and trends with known answers."""
import dataclasses
import math
import shlex
from pathlib import Path

import pytest

from ib_tutorial.book.bundles import Bundle
from ib_tutorial.book.claims import ShapeSummary, deeper_along_knob
from ib_tutorial.book.knob import (
    DINO_HUE_SEEDS,
    DINO_HUE_SWEEP,
    DINO_TIER_ENDS,
    LIVE_SWEEP,
    OBJECT_SEEDS,
    OBJECT_SWEEP,
    KnobRecipe,
    knob_sweeps,
    recipe_sweep,
    seeds_by_weight,
    knob_trend,
    widest_sweep,
)
from ib_tutorial.book.knob import knob_command
from ib_tutorial.training.run_config import RunSpec

from profile_records import bundle_run


def mix_run(weight, settings="objective=supervised,epochs=2", **world):
    options = "".join(f",{key}={value}" for key, value in world.items())
    spec = f"synthetic-mix:texture_weight={weight:g}{options}@{settings}"
    run = bundle_run(spec)
    config = dataclasses.replace(run.config, dataset="synthetic-mix", dataset_options={"texture_weight": weight, **world})
    return spec, dataclasses.replace(run, config=config)


def bundle(name, *runs):
    return Bundle(name, Path(name), "laptop", dict(runs))


def shape(depth, epoch=12):
    """A U of the given depth in effective directions (the late blocks higher still)."""
    return ShapeSummary(epoch, (20 + depth,) * 2 + (20,) * 3 + (22 + depth,) * 7, dim=192)


def test_a_straight_line_is_fitted_exactly():
    trend = knob_trend([0, 0.25, 0.5, 1], [10, 8, 6, 2])
    assert trend.slope == pytest.approx(-8) and trend.change == pytest.approx(-8)
    assert trend.rank_correlation == pytest.approx(-1)


def test_the_change_spans_the_weights_swept_and_the_rank_correlation_ignores_the_scale():
    trend = knob_trend([0.25, 0.5, 0.75], [1, 4, 100])
    assert trend.change == pytest.approx(trend.slope * 0.5)
    assert trend.rank_correlation == pytest.approx(1)


def test_two_weights_or_a_flat_statistic_have_no_rank_correlation():
    assert math.isnan(knob_trend([0, 1], [3, 1]).rank_correlation)
    assert math.isnan(knob_trend([0, 0.5, 1], [2, 2, 2]).rank_correlation)
    with pytest.raises(ValueError, match="two or more weights"):
        knob_trend([0], [1])
    with pytest.raises(ValueError, match="each with one value"):
        knob_trend([0, 1], [1, 2, 3])


@pytest.mark.parametrize("depths, holds", [([12, 9, 6, 3, 0.5], True),     # falls 11.5 directions
                                           ([0.5, 3, 6, 9, 12], False),    # rises
                                           ([5, 5.2, 4.9, 5.1, 4.8], False)])  # flat within the margin
def test_claim_three_along_the_knob_holds_when_the_u_depth_falls_towards_textures(depths, holds):
    weights = [0, 0.25, 0.5, 0.75, 1]
    test = deeper_along_knob(weights, [shape(d) for d in depths])
    assert test.holds is holds and test.interval is None
    assert test.difference == pytest.approx(-knob_trend(weights, depths).change)


def test_sweeps_group_one_objective_and_settings_and_need_two_weights():
    runs = [mix_run(0.5), mix_run(0), mix_run(1), mix_run(0.5, "objective=supervised,epochs=4"),
            mix_run(0, "epochs=2"), ("tiny-imagenet@objective=supervised", bundle_run("tiny-imagenet@objective=supervised"))]
    sweeps = knob_sweeps([bundle("b", *runs)])
    assert [(s.objective, s.overrides, s.weights) for s in sweeps] == [
        ("supervised", (("epochs", "2"), ("objective", "supervised")), [0.0, 0.5, 1.0])]
    assert sweeps[0].epochs == 2


def test_the_widest_sweep_of_an_objective_is_chosen():
    narrow = bundle("narrow", mix_run(0), mix_run(1))
    wide = bundle("wide", mix_run(0), mix_run(0.5), mix_run(1))
    assert widest_sweep("supervised", [narrow, wide]).bundle.name == "wide"
    assert widest_sweep("dino", [narrow, wide]) is None


@pytest.mark.parametrize("recipe", [LIVE_SWEEP, OBJECT_SWEEP, OBJECT_SEEDS, DINO_TIER_ENDS, DINO_HUE_SWEEP])
def test_the_sweep_specs_name_the_knob_and_the_same_world_and_settings(recipe):
    specs = recipe.specs()
    parsed = [RunSpec.parse(spec) for spec in specs]
    assert [spec.options["texture_weight"] for spec in parsed] == list(recipe.weights)
    assert all((spec.overrides, spec.dataset_spec.split(",")[1:]) == (parsed[0].overrides, parsed[0].dataset_spec.split(",")[1:])
               for spec in parsed)
    assert f"--datasets {shlex.join(specs)} --out /tmp/knob" in knob_command("laptop", recipe, "/tmp/knob")


def test_the_object_recipe_is_the_one_its_runs_were_trained_with():
    seeded = [RunSpec.parse(spec) for spec in OBJECT_SEEDS.specs(seed=1)]
    assert all(spec.overrides["seed"] == 1 and spec.overrides["global_crop_scale"] == (0.9, 1.0) for spec in seeded)
    assert RunSpec.parse(OBJECT_SWEEP.specs()[0]).folder == (
        "synthetic-mix_texture_weight=0_object_scale=1.6_clutter=0@objective=supervised_epochs=24_lr=0.0005_"
        "warmup_epochs=2_local_crops_number=0_global_crop_scale=(0.9_1.0)_blur_radius=(0.0_0.0)_color_strength=0.0_"
        "knn_every=4")


def test_runs_in_another_world_make_another_sweep():
    sweeps = knob_sweeps([bundle("worlds", mix_run(0), mix_run(1), mix_run(0, object_scale=1.6), mix_run(1, object_scale=1.6))])
    assert sorted(sweep.world for sweep in sweeps) == [(), (("object_scale", "1.6"),)]


def test_the_seeds_of_a_sweep_are_the_runs_that_differ_only_in_their_seed():
    runs = [mix_run(w) for w in (0, 0.5, 1)] + [mix_run(w, "objective=supervised,epochs=2,seed=1") for w in (0, 1)]
    runs += [mix_run(0, "objective=supervised,epochs=4,seed=1"), mix_run(1, "objective=dino,epochs=2,seed=1")]
    found = knob_sweeps([bundle("seeds", *runs)])
    main = max(found, key=lambda sweep: len(sweep.runs))
    seeds = seeds_by_weight(main)
    assert list(seeds) == [0.0, 1.0]  # 0.5 has one seed; other budgets and objectives are other experiments
    assert all([run.config.seed for run in pair] == [0, 1] for pair in seeds.values())
    assert seeds_by_weight(main) == seeds_by_weight(next(s for s in found if dict(s.overrides).get("seed") == "1"))


def test_a_recipes_sweep_is_found_by_its_settings_and_world_not_by_its_width():
    views = "objective=dino,epochs=2,momentum_teacher=0.996"
    recipe = KnobRecipe((0, 1), views, "object_scale=1.6,clutter=0")
    wide = [mix_run(w, "objective=dino,epochs=2", object_scale=1.6, clutter=0) for w in (0, 0.5, 1)]
    other_world = [mix_run(w, views) for w in (0, 1)]
    ours = [mix_run(w, views, object_scale=1.6, clutter=0) for w in (0, 1)]
    found = recipe_sweep(recipe, [bundle("knob", *wide, *other_world, *ours)])
    assert found is not None and found.weights == [0.0, 1.0]
    assert dict(found.overrides)["momentum_teacher"] == "0.996" and dict(found.world) == {"object_scale": "1.6", "clutter": "0"}
    assert recipe_sweep(recipe, [bundle("knob", *wide, *other_world)]) is None


def test_a_second_seed_of_one_end_alone_is_found():
    runs = [mix_run(w, "objective=dino,epochs=2") for w in (0, 0.2, 1)] + [mix_run(1, "objective=dino,epochs=2,seed=1")]
    found = knob_sweeps([bundle("one end", *runs)])
    assert len(found) == 1  # the lone seed makes no sweep of its own
    seeds = seeds_by_weight(found[0])
    assert list(seeds) == [1.0] and [run.config.seed for run in seeds[1.0]] == [0, 1]


def test_the_dino_seeds_recipe_is_the_sweeps_texture_end_with_another_seed():
    sweep_end = RunSpec.parse(DINO_HUE_SWEEP.specs()[-1])
    seeded = RunSpec.parse(DINO_HUE_SEEDS.specs(seed=1)[0])
    assert seeded.options == sweep_end.options and seeded.overrides == {**sweep_end.overrides, "seed": 1}
