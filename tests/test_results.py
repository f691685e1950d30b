"""Profile files: schema, provenance, atomic writes."""
import json

import matplotlib

matplotlib.use("Agg")

import pytest

from ib_tutorial import plots
from ib_tutorial.paper import REPORTED
from ib_tutorial.block_profile import Profile
from ib_tutorial.results import (
    config_hash,
    load_profile_record,
    profile_from_record,
    profile_record,
    provenance,
    save_profile_record,
    validate_profile_record,
)


def make_profile(depth=12, dim=384):
    n_eff = [100.0 + 10 * abs(5 - block) for block in range(depth)]
    return Profile(n_eff=n_eff, eed_percent=[100 * n / dim for n in n_eff], dim=dim, tokens="all",
                   center=True, n_images=64, n_tokens=64 * 65,
                   companions={"participation_ratio": [n / 2 for n in n_eff]})


def make_record(epoch=3):
    profile = make_profile()
    prov = provenance(preset="ci", config={"lr": 1e-3, "epochs": 2}, dataset="synthetic-objects",
                      profile=profile, device="cpu")
    return profile_record(profile, label="teacher", epoch=epoch, provenance=prov)


def test_record_round_trips(tmp_path):
    record = make_record()
    save_profile_record(tmp_path / "profiles" / "3.json", record)
    loaded = load_profile_record(tmp_path / "profiles" / "3.json")
    assert loaded == json.loads(json.dumps(record))
    assert profile_from_record(loaded) == make_profile()
    assert list((tmp_path / "profiles").iterdir()) == [tmp_path / "profiles" / "3.json"]  # no temp files left


def test_provenance_names_its_sources():
    prov = make_record()["provenance"]
    assert prov["preset"] == "ci" and prov["dataset"] == "synthetic-objects"
    assert prov["n_tokens"] == 64 * 65
    assert {"torch", "timm", "python", "ib-tutorial"} <= set(prov["packages"])
    assert prov["code_version"]


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
    record = make_record()
    breakage(record)
    with pytest.raises(ValueError, match=where):
        validate_profile_record(record)


def test_a_broken_file_is_named_and_left_alone(tmp_path):
    path = tmp_path / "0.json"
    path.write_text('{"schema": ')
    with pytest.raises(ValueError, match="0.json"):
        load_profile_record(path)
    assert path.read_text() == '{"schema": '


def test_plots_build_from_stored_records(tmp_path):
    records = [make_record(epoch) for epoch in (0, 1, 2)]
    profiles = {f"epoch {r['epoch']}": profile_from_record(r) for r in records}
    ax = plots.plot_block_profile(profiles, "caption", reported=REPORTED["tiny-imagenet"])
    assert ax.get_xlabel().startswith("block index") and ax.get_ylabel().startswith("EED")
    assert len(ax.get_lines()) >= 3
    heat = plots.plot_eed_heatmap([0, 1, 2], [r["profile"]["eed_percent"] for r in records], "caption")
    assert heat.images[0].get_array().shape == (12, 3)
    fig = plots.plot_datasets({"cifar100": profiles, "uc-merced": profiles}, "caption", reported=REPORTED)
    assert len(fig.axes) == 2
    comp = plots.plot_companions(profiles["epoch 0"], "caption")
    assert len(comp.get_lines()) == 2


def test_knob_plot_orders_points_by_texture_weight():
    ax = plots.plot_texture_knob([1.0, 0.0, 0.5], {"trained": [30.0, 10.0, 20.0], "random init": [5.0, 4.0, 6.0]},
                                 blocks=(2, 3, 4), caption="caption")
    trained = ax.get_lines()[0]
    assert list(trained.get_xdata()) == [0.0, 0.5, 1.0] and list(trained.get_ydata()) == [10.0, 20.0, 30.0]
    assert "L2-L4" in ax.get_ylabel() and ax.get_xlabel().startswith("texture_weight")


def test_explorer_builds_from_stored_records_and_follows_the_controls():
    from ib_tutorial.widgets import profile_explorer

    records = [make_record(epoch) for epoch in (0, 5, 10)]
    other = make_record(10)
    other["provenance"]["dataset"] = "synthetic-textures"
    explorer = profile_explorer(records + [other])
    controls, slider, stack = explorer.children
    dataset, tokens, metric = controls.children
    assert dataset.value == "synthetic-objects"
    assert len(stack.children) == 3 and list(slider.options) == [0, 5, 10]
    assert stack.selected_index == 2
    first_png = bytes(stack.children[0].value)
    assert first_png.startswith(b"\x89PNG")
    metric.value = "participation_ratio"
    assert bytes(stack.children[0].value) != first_png
    dataset.value = "synthetic-textures"
    assert len(stack.children) == 1


def test_explorer_needs_records():
    from ib_tutorial.widgets import profile_explorer

    with pytest.raises(ValueError, match="ib-tutorial profile"):
        profile_explorer([])
