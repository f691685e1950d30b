"""The plateau rule on k-NN curves of known shape."""
import pytest

from ib_tutorial.reproduction.plateau import plateau


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
