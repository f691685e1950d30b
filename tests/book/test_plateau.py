"""The plateau rule on k-NN curves of known shape."""
import pytest

from ib_tutorial.book.learned import knn_standard_error, plateau


def curve(values: list[float], every: int = 3) -> list[dict]:
    return [{"epoch": i * every, "top1": v, "top1_mean": v / 2} for i, v in enumerate(values)]


def test_a_flat_last_quarter_is_a_plateau():
    result = plateau(curve([20, 30, 35, 38, 39, 39.5, 39.6, 39.8, 39.9, 40.0, 40.1]))  # epochs 0..30
    assert result.reached and (result.since_epoch, result.last_epoch) == (21, 30)
    assert result.gained == pytest.approx(40.1 - 39.8) and result.learned == pytest.approx(20.1)


def test_a_curve_still_rising_is_not():
    result = plateau(curve([20, 22, 24, 26, 28, 30, 32, 34, 36]))
    assert not result.reached and result.gained == pytest.approx(36 - 32)


def test_the_threshold_and_the_token_are_options():
    rising = curve([20, 25, 30, 32, 33])  # 12 epochs: compares epoch 9 (32) with 12 (33)
    assert not plateau(rising, gain=0.5).reached
    assert plateau(rising, gain=1.5).reached
    assert plateau(rising, key="top1_mean").gained == pytest.approx(0.5)


def test_a_fall_counts_as_flat():
    assert plateau(curve([20, 40, 38])).reached


@pytest.mark.parametrize("knn, fraction, message", [
    (curve([20]), 0.25, "at least two"),
    (curve([20, 30]), 1.0, "between 0 and 1"),
])
def test_bad_input_is_named(knn, fraction, message):
    with pytest.raises(ValueError, match=message):
        plateau(knn, fraction)


def test_the_threshold_is_at_least_the_noise_of_the_held_out_images():
    # 40 % on 144 images: one standard error is 4.1 points, so a 3-point rise is noise
    noisy = [{**record, "n_eval": 144} for record in curve([20, 30, 35, 37, 40])]
    result = plateau(noisy)
    assert result.threshold == pytest.approx(2 * knn_standard_error(noisy[-1])) == pytest.approx(8.165, abs=1e-3)
    assert result.reached and result.gained == pytest.approx(3)
    # on 10,000 images two standard errors are under a point: the rule's own gain applies
    precise = [{**record, "n_eval": 10_000} for record in curve([20, 30, 35, 37, 40])]
    assert plateau(precise).threshold == 1.0 and not plateau(precise).reached


def test_a_run_learned_only_beyond_the_noise():
    assert plateau([{"epoch": 0, "top1": 30.0, "n_eval": 144}, {"epoch": 6, "top1": 36.0, "n_eval": 144}]).learned_beyond_noise is False
    assert plateau([{"epoch": 0, "top1": 30.0, "n_eval": 1000}, {"epoch": 6, "top1": 36.0, "n_eval": 1000}]).learned_beyond_noise
    assert knn_standard_error({"top1": 50.0, "n_eval": 100}) == pytest.approx(5.0)
    assert knn_standard_error({"top1": 36.1, "n_eval": 144}) == pytest.approx(4.0, abs=0.05)


def test_the_smallest_detectable_gain_is_two_standard_errors_or_the_floor():
    from ib_tutorial.book.learned import smallest_detectable_gain

    # 1,000 held-out images: 2 x 100 sqrt(p (1 - p) / 1000) is 2.53 points at 20 %, 3.10 at 40 %.
    assert smallest_detectable_gain(1000, 20.0) == pytest.approx(2.530, abs=1e-3)
    assert smallest_detectable_gain(1000, 40.0) == pytest.approx(3.098, abs=1e-3)
    # DTD's 144 images at 50 %: 8.3 points; a million images: the one-point floor.
    assert smallest_detectable_gain(144, 50.0) == pytest.approx(8.333, abs=1e-3)
    assert smallest_detectable_gain(1_000_000, 40.0) == 1.0
    # The plateau rule's threshold is the same number, at its last accuracy.
    knn = [{"epoch": 0, "top1": 21.0, "n_eval": 1000}, {"epoch": 48, "top1": 24.0, "n_eval": 1000}]
    assert plateau(knn).threshold == smallest_detectable_gain(1000, 24.0)
