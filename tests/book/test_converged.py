"""The chapter "Converged ViTs" on profiles of random-weight files of the right
architectures (DINO ViT-S/16 and DINOv2 ViT-S/14, both at 224 px) on data in the real
layout: every section renders, and what is missing is named with its command."""
import os
from pathlib import Path

import nbformat
import pytest
import timm
import torch
from archive_builders import real_subsets_root
from nbclient import NotebookClient
from profile_records import make_record

from ib_tutorial.book.converged import availability_markdown, measurement_markdown, ranges_markdown
from ib_tutorial.book.converged import (
    converged_profiles,
    objects_against_textures,
    range_checks,
    shape_claims,
    training_comparisons,
)
from ib_tutorial.book.pretrained import MEASUREMENTS, profile_published

REPO = Path(__file__).resolve().parents[2]
MODELS = {"vit_small_patch16_224.dino": None, "vit_small_patch14_dinov2.lvd142m": 224}
DATASETS = ("tiny-imagenet", "dtd:folder=dtd")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A data root with the two subsets and, under converged/, both models profiled on both."""
    folder = real_subsets_root(tmp_path_factory.mktemp("converged") / "data")
    torch.manual_seed(0)
    for model, size in MODELS.items():
        weights = folder / f"{model}.pth"
        torch.save(timm.create_model(model, pretrained=False, num_classes=0).state_dict(), weights)
        for spec in DATASETS:
            profile_published(model, spec, folder / "converged", weights=weights, preset="ci", images=8, root=folder,
                              progress=False, img_size=size)
    return folder


@pytest.mark.slow
def test_profiles_are_found_by_dataset_and_the_claims_and_comparisons_are_tested(root):
    profiles = converged_profiles(bundles=[], live=root / "converged")
    assert list(profiles) == ["tiny-imagenet", "dtd"] and all(len(models) == 2 for models in profiles.values())
    dinov2 = profiles["tiny-imagenet"]["vit_small_patch14_dinov2.lvd142m"]["all tokens, centred"]
    assert dinov2.provenance.input_size == 224 and dinov2.profile.n_tokens == 6 * 257
    assert len(profiles["dtd"]["vit_small_patch16_224.dino"]) == len(MEASUREMENTS)
    assert [check.statistic for check in range_checks("tiny-imagenet", dinov2)] == ["early", "minimum", "late"]
    assert range_checks("dtd", dinov2) == []  # the paper did not study textures
    assert len(shape_claims(profiles)) == 2 * 2 * 2 and len(objects_against_textures(profiles)) == 2
    assert {(c.dataset, c.second) for c in training_comparisons(profiles)} == {
        (dataset, "vit_small_patch14_dinov2.lvd142m") for dataset in ("tiny-imagenet", "dtd")}
    assert "comes nearest" in measurement_markdown(profiles) and "| tiny-imagenet | `vit_small_patch16" in ranges_markdown(profiles)


@pytest.mark.slow
def test_what_is_missing_is_named_with_the_command_that_makes_it(root):
    text = availability_markdown(converged_profiles(bundles=[], live=root / "converged"))
    # A row per model (the fixture profiled two, on tiny-imagenet and dtd), a column per dataset.
    assert text.splitlines()[0] == "| model | cifar100 | tiny-imagenet | uc-merced | dtd |"
    assert "| `vit_small_patch16_224.dino` | - | profiled | - | profiled |" in text
    assert "| `vit_small_patch8_224.dino` | - | - | - | - |" in text
    assert "**cifar100**: 5 of 5 models not profiled" in text and "**tiny-imagenet**: 3 of 5" in text
    assert ("ib-tutorial profile-pretrained vit_small_patch8_224.dino deit_small_patch16_224.fb_in1k "
            "vit_small_patch16_224.augreg_in21k_ft_in1k --dataset tiny-imagenet --download") in text
    assert "vit_small_patch14_dinov2.lvd142m --dataset cifar100 --download --img-size 224" in text


@pytest.mark.slow
def test_the_chapter_renders_every_section_from_the_profiles(root):
    notebook = nbformat.read(REPO / "book" / "converged.ipynb", as_version=4)
    env = {"IB_TUTORIAL_DATA": str(root), "IB_TUTORIAL_PRESET": "ci", "OMP_NUM_THREADS": "1"}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO / "book")}}).execute()
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    text = "\n".join(str(output.get("data", {}).get("text/markdown", "")) + output.get("text", "") for output in outputs)
    assert any("image/png" in output.get("data", {}) for output in outputs)  # the figure
    for section in ("| dataset | model | statistic", "| claim | tested on", "DINO minus it", "comes nearest",
                    "not profiled"):
        assert section in text, section
    assert "No published model has been profiled here" not in text


def test_range_checks_read_the_highest_late_block_where_the_paper_says_up_to():
    eed = [59.0, 59.0, 31.0, 30.0, 33.0, 40.0, 50.0, 60.0, 70.0, 70.0, 80.0, 92.0]
    checks = {check.statistic: check for check in range_checks("tiny-imagenet", make_record(dim=100, n_eff=eed))}
    assert checks["late"].value == 92.0 and checks["late"].reported == (91.5, 93.5) and checks["late"].inside
    assert checks["minimum"].value == 30.0 and checks["minimum"].inside
