"""The claims asked of groups of runs: one run, the seeds of a setting, a knob end's seeds."""
from profile_records import seeded

from ib_tutorial.measure.shape import Verdict
from ib_tutorial.book.claims import SeedSpread
from ib_tutorial.book.claims import knob_end_tests, run_tests, seed_tests

# A U with its lowest block in the middle (L3), in directions.
U = [60.0, 60.0, 20.0, 18.0, 20.0, 40.0, 50.0, 55.0, 60.0, 62.0, 64.0, 66.0]


def test_a_run_that_did_not_learn_gets_no_verdict_and_one_that_did_gets_its_own():
    learned = run_tests(seeded(0, U))
    assert [test.claim for test in learned] == ["mid-depth minimum", "deepens over training", "late re-expansion"]
    assert all(test.verdict is Verdict.HOLDS for test in learned)
    flat_knn = run_tests(seeded(0, U, top1=(20.0, 20.5)))
    assert all(test.verdict is Verdict.NOT_APPLICABLE for test in flat_knn)
    assert [test.difference for test in flat_knn] == [test.difference for test in learned]


def test_the_setting_holds_only_where_every_seed_learned_and_agrees():
    runs = [seeded(seed, U) for seed in (2, 0, 1)]
    per_seed, setting = seed_tests(SeedSpread.of(runs), runs)
    assert [subject for subject, _ in per_seed] == ["seed 0"] * 3 + ["seed 1"] * 3 + ["seed 2"] * 3
    assert [test.verdict for test in setting] == [Verdict.HOLDS] * 3
    runs[0] = seeded(2, U, top1=(20.0, 20.5))  # seed 2 did not learn
    _, setting = seed_tests(SeedSpread.of(runs), runs)
    assert all(test.verdict is Verdict.UNDETERMINED and test.reason == "seed 2 did not learn" for test in setting)


def test_a_knob_end_is_read_on_its_level_and_on_its_change_from_the_initialisation():
    runs = [seeded(0, U), seeded(1, U)]
    tested = knob_end_tests(SeedSpread.of(runs), runs)
    assert list(tested) == ["level", "change from init"]
    for per_seed, together in tested.values():
        assert [test.verdict for test in per_seed] == [Verdict.HOLDS] * 2 and together.verdict is Verdict.HOLDS
    hump = [seeded(0, U), seeded(1)]  # seed 1 ends as a hump: the seeds disagree
    per_seed, together = knob_end_tests(SeedSpread.of(hump), hump)["level"]
    assert [test.verdict for test in per_seed] == [Verdict.HOLDS, Verdict.FAILS]
    assert together.verdict is Verdict.UNDETERMINED and together.reason == "holds on seed 0; fails on seed 1"
