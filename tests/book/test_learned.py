"""The book's learned rule: a k-NN gain beyond noise and, for DINO, a teacher that did not collapse."""
import math
from types import SimpleNamespace

import pytest

from ib_tutorial.book.bundles import load_bundle
from ib_tutorial.book.knob import DINO_HUE_SWEEP, recipe_sweep
from ib_tutorial.book.learned import learned_rule, run_learned, teacher_information
from ib_tutorial.training.dino import INFORMATION_FRACTION
from ib_tutorial.training.runs import RunDirectory


def fake_run(gain: float, n_eval: int, information: list[float] | None = None, out_dim: int = 1024):
    """A run's records: k-NN at 40 % then 40 % + gain on n_eval images; a teacher's information
    at each logged step when given (a DINO run), none otherwise (supervised)."""
    knn = [{"epoch": 0, "top1": 40.0, "n_eval": n_eval}, {"epoch": 10, "top1": 40.0 + gain, "n_eval": n_eval}]
    train = [{"step": step, "loss": 1.0} | ({} if information is None else {"teacher_information": value})
             for step, value in enumerate(information or [0.0] * 20)]
    return SimpleNamespace(knn=knn, train=train, config=SimpleNamespace(train=SimpleNamespace(out_dim=out_dim)))


def test_without_a_teacher_the_rule_is_the_k_nn_gain_one_point_or_two_standard_errors():
    # 1,000 images: one standard error near 40 % is about 1.55 points, so the bar is about 3.1.
    assert not run_learned(fake_run(3.0, 1000)) and run_learned(fake_run(3.2, 1000))
    # A million images: two standard errors are 0.1 point, and the one-point floor decides.
    assert not run_learned(fake_run(0.9, 1_000_000)) and run_learned(fake_run(1.0, 1_000_000))
    rule = learned_rule(fake_run(5.0, 1000))
    assert rule.teacher_information is None and rule.teacher_kept and "teacher" not in rule.reason()


def test_a_dino_run_also_needs_its_teacher_above_the_collapse_threshold_over_the_last_tenth():
    floor = INFORMATION_FRACTION * math.log(1024)  # about 0.35 nats
    # 100 logged steps: only the last ten count, whatever came before.
    kept = [0.0] * 90 + [floor + 0.01] * 10
    collapsed = [2.0] * 90 + [floor - 0.01] * 10
    assert teacher_information([{"teacher_information": v} for v in kept]) == pytest.approx(floor + 0.01)
    assert run_learned(fake_run(10.0, 1000, kept))
    rule = learned_rule(fake_run(10.0, 1000, collapsed))
    assert rule.knn.learned_beyond_noise and not rule.teacher_kept and not rule.learned
    assert rule.teacher_floor == pytest.approx(floor) and "under the collapse threshold" in rule.reason()
    # The floor follows K: the same information is enough at K = 256, not at K = 65,536.
    mid = [INFORMATION_FRACTION * math.log(4096)] * 10
    assert run_learned(fake_run(10.0, 1000, mid, out_dim=256)) and not run_learned(fake_run(10.0, 1000, mid, out_dim=65536))
    # A teacher that held on does not make up for a k-NN accuracy that did not rise.
    assert not run_learned(fake_run(0.5, 1000, kept))


def test_the_committed_colour_row_is_not_learned_and_the_texture_end_is():
    """The case the teacher's condition is for: the knob's colour row gained ten k-NN points with a
    teacher that collapsed (``results/laptop-knob-dino``)."""
    bundle = load_bundle("laptop-knob-dino")
    colour = next(run for spec, run in bundle.runs.items() if "invert=0.5" in spec)
    rule = learned_rule(colour)
    assert rule.knn.learned_beyond_noise and rule.teacher_information < 0.05 and not rule.learned
    sweep = recipe_sweep(DINO_HUE_SWEEP)
    assert sweep.learned() == [1.0]


def test_a_run_directory_is_read_as_its_bundle_run():
    """A run committed with its settings and metrics only is judged on the same records."""
    bundle = load_bundle("laptop-knob-dino")
    for spec, run in bundle.runs.items():
        folder = RunDirectory(bundle.path / run.summary["run"])
        assert learned_rule(folder) == learned_rule(run), spec
