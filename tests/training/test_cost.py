"""The FLOPs of a DINO step counted from its settings, and the run-time estimate built on them."""
import copy
import json

import pytest

from ib_tutorial.presets import get_preset
from ib_tutorial.files import stored_benchmark
from ib_tutorial.book.tables import estimate_markdown
from ib_tutorial.training.cost import COLAB_FREE_GPU, UTILISATION_RECORD, epochs_within, estimate_run_time
from ib_tutorial.training.run_config import get_objective, resolve_settings
from ib_tutorial.training.runs import saved_epochs

stored = stored_benchmark(UTILISATION_RECORD)
record = json.loads(stored.read_text()) if stored.exists() else None
needs_record = pytest.mark.skipif(record is None, reason="no benchmark records next to this package")


@needs_record
@pytest.mark.parametrize("tier", ["ci", "laptop"])
def test_the_count_matches_what_the_benchmark_counted(tier):
    """torch's flop counter on the CPU counts the matrix products but not the fused attention."""
    measured = record["results"][tier]
    train, view = resolve_settings(get_preset(tier), measured["dataset"], {})
    image_flops = get_objective(train.objective).image_flops
    assert image_flops(view, train, attention=False) * measured["batch"] == pytest.approx(measured["gflop_per_step"] * 1e9, rel=1e-6)
    assert image_flops(view, train) > image_flops(view, train, attention=False)


def test_a_supervised_step_is_not_counted_as_dino():
    train, view = resolve_settings(get_preset("ci"), "tiny-imagenet", {"objective": "supervised"})
    with pytest.raises(ValueError, match="supervised"):
        get_objective(train.objective).image_flops(view, train)


@needs_record
def test_the_estimate_is_the_slower_of_the_gpu_and_the_loader():
    estimate = estimate_run_time("tiny-imagenet", "quick")
    assert estimate.images == 10 * 100_000 and estimate.machine is COLAB_FREE_GPU
    flops = estimate.gflop_per_image * 1e9
    assert estimate.gpu_seconds == pytest.approx(estimate.images * flops / (65e12 * estimate.utilisation))
    slow, fast = estimate.loader_images_per_s
    assert slow < fast
    low, high = estimate.seconds
    assert low == max(estimate.gpu_seconds, estimate.images / fast) and high == max(estimate.gpu_seconds, estimate.images / slow)
    text = estimate_markdown(estimate)
    assert "not a measurement" in text and UTILISATION_RECORD in text


@needs_record
def test_a_record_of_other_crops_than_the_tier_is_refused():
    changed = copy.deepcopy(record)
    for measured in changed["results"].values():
        measured["img_size"] += 8
    with pytest.raises(ValueError, match="bench_utilisation"):
        estimate_run_time("cifar100", record=changed)


def test_epochs_within_fills_the_time_left_and_stays_between_one_and_the_recipe():
    assert epochs_within(300, images_per_s=5000, images_per_epoch=10_000, most=100) == 100  # 150 fit
    assert epochs_within(300, images_per_s=1000, images_per_epoch=10_000, most=100) == 30
    assert epochs_within(5, images_per_s=1000, images_per_epoch=10_000, most=100) == 1  # never zero epochs
    with pytest.raises(ValueError, match="positive rate"):
        epochs_within(300, images_per_s=0, images_per_epoch=10_000, most=100)


def test_epochs_within_leaves_time_to_measure_every_teacher_the_run_saves():
    assert saved_epochs(0, 12, 10) == [0, 10, 12] and saved_epochs(0, 10, 10) == [0, 10] and saved_epochs(0, 3, 1) == [0, 1, 2, 3]
    # 10 s an epoch and 115 s a saved teacher: 10 epochs save two (330 s); 11 save three (455 s)
    assert epochs_within(330, images_per_s=1000, images_per_epoch=10_000, most=100, per_saved_s=115,
                         checkpoint_every=10) == 10
    assert epochs_within(454, images_per_s=1000, images_per_epoch=10_000, most=100, per_saved_s=115,
                         checkpoint_every=10) == 10
    assert epochs_within(455, images_per_s=1000, images_per_epoch=10_000, most=100, per_saved_s=115,
                         checkpoint_every=10) == 11
    assert epochs_within(100, images_per_s=1000, images_per_epoch=10_000, most=100, per_saved_s=115,
                         checkpoint_every=10) == 1  # nothing fits: still one epoch, never zero
