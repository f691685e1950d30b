"""What a dataset chapter shows: the committed runs of a dataset, the data on disk, the
paper's row and the commands that make the missing runs."""
import dataclasses
import json
import shlex
import shutil
import zipfile

import matplotlib

matplotlib.use("Agg")

import pytest
from archive_builders import TINY_WNIDS, TINY_WORDS, tiny_imagenet_zip

from ib_tutorial.cli import build_parser
from ib_tutorial.book import plots
from ib_tutorial.book.plots import CAPTION_KEY, run_caption
from ib_tutorial.book import dataset_chapters
from ib_tutorial.book.dataset_chapters import GPU_BENCHMARK, REAL_SPECS, chapter_runs, data_status_markdown, dataset_overview, datasets_markdown, gallery, images_root, paper_table_markdown, real_images, run_summary, gpu_epochs, gpu_timing_markdown, missing_runs_markdown, other_runs_markdown, paper_row_markdown, run_commands, run_commands_markdown, run_section, shape_markdown, sizes_markdown, summary_run
from ib_tutorial.presets import get_preset
from ib_tutorial.data import DATASETS
from ib_tutorial.book.dataset_runs import FAMILIES, dataset_runs
from ib_tutorial.book.recipes import tier_changes
from ib_tutorial.book.bundles import load_bundle
from ib_tutorial.files import stored_benchmark, stored_results
from ib_tutorial.training.runs import RunDirectory

laptop_real = pytest.mark.skipif(not (stored_results("laptop-real") / "summary.json").exists(),
                                 reason="the committed bundle results/laptop-real is not next to this package")
gpu_bundle = pytest.mark.skipif(not (stored_results("gpu-paper-subsets") / "summary.json").exists()
                                or not stored_benchmark(GPU_BENCHMARK).exists(),
                                reason="the committed GPU bundle and benchmark are not next to this package")


@pytest.mark.slow
@laptop_real
def test_dataset_runs_finds_the_committed_laptop_runs_of_one_dataset():
    tiny = dataset_runs("tiny-imagenet")
    assert [(r.bundle.name, r.spec.text, r.tier) for r in tiny] == [("laptop-real", "tiny-imagenet", "laptop"),
                                                                    ("laptop-tier-48", "tiny-imagenet", "laptop")]
    assert tiny[0].plain and not tiny[0].on_gpu and tiny[0].chance == pytest.approx(5.0)
    dtd = dataset_runs("dtd")
    assert [(r.bundle.name, r.spec.text) for r in dtd] == [("laptop-real", "dtd:folder=dtd"),
                                                           ("laptop-tier-48", "dtd:folder=dtd")]
    assert [r.current for r in dtd] == [False, True]
    assert dataset_runs("cifar100") == [] and dataset_runs("uc-merced") == []


@laptop_real
def test_runs_with_other_settings_are_listed_apart_from_the_plain_ones(tmp_path):
    source = stored_results("laptop-real")
    summary = json.loads((source / "summary.json").read_text())
    entry = summary["datasets"]["tiny-imagenet"]
    supervised = "tiny-imagenet@objective=supervised"
    for spec in ("tiny-imagenet", supervised):
        shutil.copytree(source / entry["run"], tmp_path / "bundle" / spec)
    (tmp_path / "bundle" / "summary.json").write_text(json.dumps(
        {"preset": "laptop", "datasets": {spec: {**entry, "run": spec} for spec in ("tiny-imagenet", supervised)}}))
    bundles = [load_bundle(tmp_path / "bundle")]
    assert [r.spec.text for r in dataset_runs("tiny-imagenet", bundles)] == ["tiny-imagenet"]
    assert [r.spec.text for r in dataset_runs("tiny-imagenet", bundles, plain=False)] == ["tiny-imagenet", supervised]
    assert supervised in other_runs_markdown("tiny-imagenet", bundles)
    assert other_runs_markdown("dtd", bundles).startswith("No other runs")


@pytest.mark.slow
@laptop_real
def test_a_tier_without_a_committed_run_is_named_with_its_command():
    textures = FAMILIES["textures"]
    text = missing_runs_markdown(textures, dataset_runs("dtd") + dataset_runs("uc-merced"))
    assert "No GPU (quick or paper) run of `uc-merced` is committed" in text
    assert "ib-tutorial reproduce --preset quick --datasets uc-merced" in text
    cifar = missing_runs_markdown(FAMILIES["cifar100"], [])
    assert "No laptop run of `cifar100`" in cifar and "No GPU (quick or paper) run of `cifar100`" in cifar


@pytest.mark.slow
@laptop_real
def test_a_plain_run_made_before_its_tier_changed_is_shown_and_named_with_what_changed():
    # laptop-real's runs were the tier's plain command when they were made: 6 epochs, no floors.
    dtd = dataset_runs("dtd")[0]
    tier = get_preset("laptop").train
    assert dtd.plain and not dtd.current
    assert dtd.tier_changes == {"epochs": (6, tier.epochs), "warmup_min_steps": (0, tier.warmup_min_steps),
                                "freeze_min_steps": (0, tier.freeze_min_steps)}
    text = missing_runs_markdown(FAMILIES["textures"], [dtd])
    assert ("No laptop run of `dtd:folder=dtd` at its tier's own settings is committed under `results/`.** The run "
            "shown below differs from its tier as it stands today: `dtd:folder=dtd` (laptop-real, preset laptop) "
            f"trained 6 of the `laptop` tier's {tier.epochs} epochs, warmup_min_steps 0 (the tier: "
            f"{tier.warmup_min_steps}), freeze_min_steps 0 (the tier: {tier.freeze_min_steps})") in text
    assert "ib-tutorial reproduce --preset laptop --datasets dtd:folder=dtd" in text


def test_a_run_of_the_tier_as_it_stands_is_current():
    # A run recorded with today's settings has no changes; one setting changed is named with both values.
    preset = get_preset("laptop")
    assert tier_changes(preset.train, preset.view("dtd"), preset, "dtd") == {}
    older = dataclasses.replace(preset.train, epochs=6, threads=1)  # the thread count is bookkeeping
    assert tier_changes(older, preset.view("dtd"), preset, "dtd") == {"epochs": (6, preset.train.epochs)}


@pytest.mark.slow
@laptop_real
def test_the_summary_reads_the_run_at_its_tiers_settings_today():
    runs = chapter_runs(FAMILIES["tiny-imagenet"])
    older = [entry for entry in runs if not entry.current]
    assert summary_run(older) is older[0] and older[0].bundle.name == "laptop-real"  # none current: the first
    assert summary_run([entry for entry in runs if entry.on_gpu]) is None  # no laptop run
    today = summary_run(runs)  # laptop-tier-48 is the tier as it stands
    assert today.current and today.bundle.name == "laptop-tier-48"


@laptop_real
def test_the_shape_table_has_one_row_per_saved_epoch():
    run = dataset_runs("tiny-imagenet")[0]
    rows = shape_markdown(run).splitlines()[2:]
    assert [row.split(" | ")[0].strip("| ") for row in rows] == [str(r.epoch) for r in run.run.profiles]
    # the blocks near the lowest are named together, once ("L9, L10 within 1 direction")
    assert all(row.count("within") <= 1 for row in rows) and any(", L" in row for row in rows)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_command_is_one_the_command_line_accepts(family):
    commands = run_commands(FAMILIES[family])
    assert {c.tier for c in commands} == {"laptop", "quick", "paper"}
    for command in commands:
        args = build_parser().parse_args(list(command.argv))
        assert args.command == "reproduce" and args.preset == command.tier
        assert shlex.split(command.line)[1:] == list(command.argv)
    text = run_commands_markdown(FAMILIES[family])
    assert all(command.line in text for command in commands)
    assert "estimate, not a measurement: this machine was not timed" in text and "no GPU has been timed" not in text
    if stored_benchmark(GPU_BENCHMARK).exists():
        assert "not on Colab" in text


def test_gpu_commands_export_where_the_chapter_looks():
    quick = run_commands(FAMILIES["textures"])[1]
    assert quick.argv[-2:] == ("--export", "results/quick-uc-merced") and "--download" in quick.argv
    laptop = run_commands(FAMILIES["textures"])[0]
    assert "--download" not in laptop.argv  # a folder spec reads what is on disk


def test_the_gallery_skips_when_the_data_is_absent(tmp_path):
    assert gallery("tiny-imagenet", root=tmp_path) is None
    status = data_status_markdown("tiny-imagenet", root=tmp_path)
    assert "is not on disk" in status and "download=True" in status
    assert "```" not in status and "\n" not in status  # one sentence, not the loader's list of missing files
    folder_status = data_status_markdown("dtd:folder=dtd", root=tmp_path)
    assert "is not on disk" in folder_status and "images/<class>/" in folder_status


def test_images_come_from_the_data_root_else_the_shared_samples(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset_chapters, "shared_samples", lambda: tmp_path / "shared")
    assert images_root("tiny-imagenet", root=tmp_path / "empty") is None
    text, figure = dataset_overview("tiny-imagenet", root=tmp_path / "empty", preset="ci")
    assert figure is None and "is not on disk" in text and "| `laptop` | CPU |" in text
    with zipfile.ZipFile(tiny_imagenet_zip(tmp_path / "tiny.zip")) as archive:
        archive.extractall(tmp_path / "shared")
    assert images_root("tiny-imagenet", root=tmp_path / "empty") == tmp_path / "shared"
    text, figure = dataset_overview("tiny-imagenet", root=tmp_path / "empty", preset="ci")
    assert figure is not None and "on disk** under `../shared/data/real (beside the repository)`" in text
    archive_root = tmp_path / "own"
    with zipfile.ZipFile(tiny_imagenet_zip(tmp_path / "own.zip")) as archive:
        archive.extractall(archive_root)
    assert images_root("tiny-imagenet", root=archive_root) == archive_root  # the data root comes first


def test_the_datasets_table_has_one_row_a_registered_dataset():
    lines = datasets_markdown().splitlines()
    assert lines[0] == "| name | kind | splits | what it is |" and len(lines) == 2 + len(DATASETS)
    assert all(f"| `{name}` | {info.kind} |" in lines[2 + i] for i, (name, info) in enumerate(DATASETS.items()))


def test_real_images_draw_one_row_a_dataset_on_disk_and_name_the_rest_once(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset_chapters, "shared_samples", lambda: tmp_path / "shared")
    figure, text = real_images(root=tmp_path / "empty")
    names = {spec.split(":")[0] for spec in REAL_SPECS}
    assert figure is None and all(text.count(f"`{name}`") == 1 for name in names)
    with zipfile.ZipFile(tiny_imagenet_zip(tmp_path / "tiny.zip")) as archive:
        archive.extractall(tmp_path / "empty")
    figure, text = real_images(root=tmp_path / "empty", columns=4)
    assert "`tiny-imagenet`" not in text and "`cifar100`" in text
    shown = [ax for ax in figure.axes if ax.get_visible()]
    assert len(shown) == len(TINY_WNIDS) and all(len(ax.images) == 1 for ax in shown)
    assert shown[0].get_ylabel() == "tiny-imagenet"


def test_the_gallery_draws_real_files_with_their_class_names(tmp_path):
    with zipfile.ZipFile(tiny_imagenet_zip(tmp_path / "tiny.zip")) as archive:
        archive.extractall(tmp_path / "root")
    fig = gallery("tiny-imagenet", root=tmp_path / "root", classes=8, per_class=2, preset="ci")
    names = [TINY_WORDS[wnid].split(",")[0] for wnid in TINY_WNIDS]
    titles = [ax.get_title().replace("\n", " ") for ax in fig.axes if ax.get_title()]
    assert titles == names  # fewer classes than asked: all of them, in wnids.txt order
    assert sum(len(ax.images) for ax in fig.axes) == 2 * len(names)
    caption = fig.canvas.print_png.keywords["metadata"]["Description"]
    assert "preset ci" in caption and "64 x 64 px" in caption
    status = data_status_markdown("tiny-imagenet", root=tmp_path / "root")
    assert "3 classes, 9 train and 6 val images" in status and names[0] in status


def test_sizes_and_the_paper_row_come_from_the_registry_presets_and_paper():
    sizes = sizes_markdown("tiny-imagenet")
    assert "64 px" in sizes and "held out: `val`" in sizes and "| `quick` | GPU | ViT-S (D = 384) | 64 | 8 | 65 |" in sizes
    assert "| `laptop` | CPU | ViT-Ti (D = 192) | 32 | 8 | 17 |" in sizes
    row = paper_row_markdown("tiny-imagenet")
    assert '29.5-31.5 % (L2-L4; paper: "about 30.5 %"; ±1 is our tolerance)' in row
    assert '91.5-93.5 % (highest of L9-L11; paper: "up to about 92.5 %"; ±1 is our tolerance)' in row
    assert "85" not in row  # the paper states no lower value for the late blocks
    assert "above 90 % at every block" in paper_row_markdown("uc-merced")
    assert paper_row_markdown("dtd").startswith("The paper did not study")


@laptop_real
def test_a_run_is_drawn_at_every_saved_epoch():
    run = dataset_runs("tiny-imagenet")[0]
    fig = plots.plot_run_epochs(run.run.profiles, run_caption(run), title=run.spec)
    curves, heatmap = fig.axes[:2]
    assert len(curves.get_lines()) == len(run.run.profiles)
    assert heatmap.images[0].get_array().shape == (12, len(run.run.profiles))
    assert "bundle laptop-real" in fig.canvas.print_png.keywords["metadata"][CAPTION_KEY]


@laptop_real
def test_a_run_section_says_what_the_run_learned_and_folds_its_records():
    tiny, dtd = dataset_runs("tiny-imagenet")[1], dataset_runs("dtd")[0]
    section = run_section(tiny)  # laptop-tier-48: learned by the rule, a ViT-Ti unlike the paper's network
    assert section.table.startswith(f"**{tiny.label}** learned by the book's rule: CLS k-NN +")
    assert "Guessing gives 5.0 %." in section.table  # 20 classes
    assert f"raw patches: {tiny.run.summary['raw_patch_n_eff']:.1f}" in section.table
    assert "Not like for like" in section.table and "paper's value, for reference" in section.table
    knn, epochs = section.figures
    assert len(epochs.axes[0].get_lines()) == len(tiny.run.profiles)
    assert shape_markdown(tiny) in section.details  # the lowest and highest block at every saved epoch
    assert "Trained on" in section.details and "raw pixel patches" in section.details
    other = run_section(dtd)  # laptop-real: did not learn; a dataset the paper did not study
    assert f"**{dtd.label}** did not learn" in other.table
    assert other.table.endswith("The paper did not study dtd, so there are no values to set this run against.")


@laptop_real
def test_longest_run_picks_the_objective_trained_longest_at_the_tiers_width(tmp_path):
    from ib_tutorial.book.dataset_runs import longest_run

    source = stored_results("laptop-real")
    summary = json.loads((source / "summary.json").read_text())
    supervised = "tiny-imagenet@objective=supervised"
    for name in ("long", "short"):
        shutil.copytree(source / supervised, tmp_path / name / supervised)
        (tmp_path / name / "summary.json").write_text(json.dumps(
            {"preset": "laptop", "datasets": {supervised: summary["datasets"][supervised]}}))
    for profile in (tmp_path / "short" / supervised / "profiles").glob("*.json"):
        if int(profile.stem) > 2:
            profile.unlink()
    bundles = [load_bundle(tmp_path / "short"), load_bundle(tmp_path / "long")]
    assert longest_run("tiny-imagenet", "supervised", bundles).bundle.name == "long"
    assert longest_run("tiny-imagenet", "dino", bundles) is None
    every = [load_bundle(source)]
    assert longest_run("tiny-imagenet", "dino", every).spec.text == "tiny-imagenet"  # not the ViT-S run of the same length
    assert longest_run("cifar100", "supervised", every) is None
    # Two DINO runs of 48 epochs: the tier's own run wins over one with settings of its own.
    tie = [load_bundle(stored_results(name)) for name in ("laptop-dino-48", "laptop-tier-48")]
    assert longest_run("tiny-imagenet", "dino", tie).bundle.name == "laptop-tier-48"
    assert longest_run("tiny-imagenet", "dino", tie[::-1]).bundle.name == "laptop-tier-48"


@pytest.mark.slow
@gpu_bundle
def test_a_gpu_run_that_changes_only_its_schedule_is_shown_not_named_as_missing():
    family = FAMILIES["tiny-imagenet"]
    runs = chapter_runs(family)
    gpu = [entry for entry in runs if entry.on_gpu]
    assert [entry.bundle.name for entry in gpu] == ["gpu-paper-subsets"] and not gpu[0].plain
    # The plain laptop runs alone: the tier's of before and of today.
    assert [entry.bundle.name for entry in runs if not entry.on_gpu] == ["laptop-real", "laptop-tier-48"]
    assert "gpu-paper-subsets" not in other_runs_markdown("tiny-imagenet")
    assert "laptop-dino-48" in other_runs_markdown("tiny-imagenet")  # a CPU run with settings of its own: named
    text = missing_runs_markdown(family, runs)
    assert "No GPU (quick or paper) run of `tiny-imagenet` is committed" not in text
    assert "No GPU (quick or paper) run of `tiny-imagenet` at its tier's own settings is committed" in text
    config = gpu[0].run.config
    assert f"gpu-paper-subsets, preset paper) trained {config.train.epochs} of the `paper` tier's 100 epochs" in text
    assert "warmup_epochs 1 (the tier: 10)" in text
    assert "ib-tutorial reproduce --preset quick --datasets tiny-imagenet" in text


@gpu_bundle
def test_a_gpu_run_copied_into_a_cpu_tiers_bundle_is_named_not_shown(tmp_path):
    shutil.copytree(stored_results("gpu-paper-subsets"), tmp_path / "bundle")
    summary = json.loads((tmp_path / "bundle" / "summary.json").read_text())
    (tmp_path / "bundle" / "summary.json").write_text(json.dumps({**summary, "preset": "laptop"}))
    bundles = [load_bundle(tmp_path / "bundle")]
    assert chapter_runs(FAMILIES["tiny-imagenet"], bundles) == []
    assert "(bundle)" in other_runs_markdown("tiny-imagenet", bundles)
    assert gpu_epochs(bundles) == []  # not a GPU tier's run


@pytest.mark.slow
@gpu_bundle
def test_the_gpu_measurement_is_read_from_the_committed_records():
    record = json.loads(stored_benchmark(GPU_BENCHMARK).read_text())
    assert record["machine"]["cuda"] == "NVIDIA H200"
    [timed] = gpu_epochs()
    epochs = RunDirectory(timed.run.bundle.path / timed.run.run.summary["run"]).read_metrics("epoch")
    assert timed.epochs == len(epochs) == timed.run.run.config.train.epochs and timed.device == "NVIDIA H200"
    assert timed.images_per_s == pytest.approx(len(epochs) * 10_000 / sum(r["epoch_s"] for r in epochs))
    for dataset in ("tiny-imagenet", "cifar100", "uc-merced"):
        text = gpu_timing_markdown(dataset)
        assert text.startswith("**Measured on one NVIDIA H200, not on Colab.**")
        assert f"on {dataset} (batch 256, bf16" in text and f"{record['results'][dataset]['images_per_s']:,.0f} images/s" in text
        assert f"{timed.images_per_s:,.0f} images/s" in text
    assert "Whole epochs, augmentation included, went slower" in gpu_timing_markdown("tiny-imagenet")
    assert "No whole epoch of cifar100 was timed on a GPU" in gpu_timing_markdown("cifar100")
    assert "not on dtd" in gpu_timing_markdown("dtd")


def test_the_papers_table_holds_every_dataset_once_with_what_its_numbers_are():
    table = paper_table_markdown(["cifar100", "tiny-imagenet", "uc-merced"])
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == ["| `cifar100`", "| `tiny-imagenet`", "| `uc-merced`"]
    assert "22.0-24.0 % (L2-L4" in rows[0] and "above 90 % at every block" in rows[2]
    assert "states no input or patch size" in table and table.count("The paper gives these") == 1


def test_a_run_summary_reads_one_run_and_is_empty_without_one():
    empty = run_summary(None)
    assert empty["run"] == "none" and empty["middle_change"] == "n/a" and empty["knn_first"] != empty["knn_first"]  # NaN
