"""What a GPU run's files say about why it did not learn, and the floors test of two CPU runs."""
import dataclasses
import math

import pytest
from profile_records import bundle_run

from ib_tutorial.book.walkthrough import floors_test, gpu_run_facts


def with_records(run, knn, entropies=()):
    """``run`` with these k-NN records and teacher entropies logged."""
    train = [{"teacher_entropy": value, "teacher_information": 1.0, "step": 10 * index}
             for index, value in enumerate(entropies)]
    return dataclasses.replace(run, knn=knn, train=train)


def knn(first, last, step=100, n_eval=1000):
    return [{"epoch": 0, "step": 0, "top1": first, "n_eval": n_eval}, {"epoch": 4, "step": step, "top1": last, "n_eval": n_eval}]


def test_the_facts_are_read_from_the_runs_settings_and_metrics():
    run = bundle_run("tiny-imagenet@epochs=12,warmup_epochs=1,freeze_last_layer=1,out_dim=65536")
    log_k = math.log(65536)
    run = with_records(run, knn(23.2, 19.4, step=12 * run.config.steps_per_epoch), [0.9 * log_k, 0.94 * log_k])
    facts = gpu_run_facts(run)
    per_epoch = run.config.steps_per_epoch
    assert (facts.epochs, facts.steps, facts.out_dim) == (4, 12 * per_epoch, 65536)
    assert facts.warmup_steps == per_epoch and facts.freeze_steps >= per_epoch  # stated in epochs: one epoch each
    assert facts.teacher_share == pytest.approx((0.9, 0.94))
    assert facts.outputs_per_image == pytest.approx(65536 / run.config.train_images_used)
    assert not facts.learned and facts.knn_se == pytest.approx(100 * math.sqrt(0.194 * 0.806 / 1000))


def test_the_floors_test_sets_two_gains_against_the_noise_of_their_gap():
    without = with_records(bundle_run("tiny-imagenet@warmup_min_steps=0"), knn(21.0, 25.4))
    floored = with_records(bundle_run("tiny-imagenet@warmup_min_steps=800"), knn(21.0, 24.0))
    test = floors_test(without, floored)
    assert test.gain_without == pytest.approx(4.4) and test.gain_with == pytest.approx(3.0)
    assert test.difference == pytest.approx(1.4) and test.difference_se == pytest.approx(1.93, abs=0.01)
    assert test.within_noise and test.warmup_steps[1] > test.warmup_steps[0]  # the floor, capped by the run
    apart = with_records(bundle_run("tiny-imagenet"), knn(21.0, 32.0))
    assert not floors_test(apart, floored).within_noise


@pytest.mark.parametrize("other", [knn(22.0, 24.0), knn(21.0, 24.0, step=200)])
def test_runs_of_another_start_or_length_are_refused(other):
    without = with_records(bundle_run("tiny-imagenet"), knn(21.0, 25.4))
    with pytest.raises(ValueError, match="one length from one initialisation"):
        floors_test(without, with_records(bundle_run("tiny-imagenet"), other))
