"""Where the paper's claims stand: every chapter's tests in one table, and the sentences the
introduction states of it, on the committed results (skipped without them)."""
import pytest

from ib_tutorial.measure.shape import Verdict
from ib_tutorial.book.claims import status_markdown
from ib_tutorial.book.status import (ClaimStatus, claim_status, knn_gains, learned_summary, longest_runs,
                                      seed_group, seed_group_values, status_summary, status_values, u_profiles)
from ib_tutorial.book.claims import ClaimTest
from ib_tutorial.book.bundles import stored_entry


def test_the_summary_counts_each_verdict_and_names_what_holds():
    tests = [("net A", ClaimTest("mid-depth minimum", Verdict.HOLDS, 2.0, 1.0)),
             ("net A", ClaimTest("late re-expansion", Verdict.FAILS, 0.0, 1.0)),
             ("net B", ClaimTest("mid-depth minimum", Verdict.NOT_APPLICABLE, 3.0, 1.0))]
    summary = status_summary(ClaimStatus(tests, []))
    assert summary.startswith("Of 3 tests, 1 hold, 1 fail and 0 are undetermined on networks that learned; 1 read")
    assert summary.endswith("The ones that hold: mid-depth minimum on net A.")


@pytest.fixture(scope="module")
def status() -> ClaimStatus:
    if not stored_entry("supervised-seeds").exists():
        pytest.skip("the committed results/ are not next to this package")
    return claim_status()


def test_the_table_holds_the_knobs_sweep_with_its_three_tests_that_hold(status):
    table = status_markdown(status.tests)  # raises if a (network, claim) were tested twice
    sweep = [subject for subject, _ in status.tests if subject.startswith("supervised knob, ")
             and ("seed 0, epoch" in subject or "every weight" in subject)]
    assert len(sweep) == 19  # the knob chapter's "Of 19 tests"
    assert {subject for subject, _ in status.held()} == {"supervised knob, w = 0.05, seed 0, epoch 24"}
    assert table.count("| holds") == len(status.held()) == 3
    assert f"{len(status.tests)} tests, 3 hold" in status_summary(status)


def test_no_network_that_did_not_learn_gets_a_verdict(status):
    unlearned = {network.label for network in status.networks if not network.rule.learned}
    assert unlearned, "every network learned: the test reads nothing"
    for subject, test in status.tests:
        if any(subject.startswith(label) for label in unlearned):
            assert test.verdict is Verdict.NOT_APPLICABLE, subject


def test_the_dino_networks_that_learned_are_named(status):
    dino = [network.label for network in status.networks if network.objective == "dino" and network.rule.learned]
    assert dino == ["dino, tiny-imagenet (objects), seed 0, 48 epochs", "dino, tiny-imagenet (objects), seed 1, 48 epochs",
                    "dino, tiny-imagenet (objects), 48 epochs, before the warm-up floors",
                    "DINO knob (every hue drawn), w = 1, seed 0", "DINO knob (every hue drawn), w = 1, seed 1"]
    assert f"{len(dino)} of the 12 DINO networks learned: " + "; ".join(dino) in learned_summary(status)


def test_the_u_profiles_are_dino_seed_1_and_the_knob_at_w_005(status):
    assert [network.label for network in u_profiles(status)] == [
        "dino, tiny-imagenet (objects), seed 1, 48 epochs", "supervised knob, w = 0.05, seed 0"]


def test_the_gains_of_the_longest_runs_on_the_objects(status):
    sentence = knn_gains(longest_runs(), "tiny-imagenet")
    assert "supervised +18.8 points (21.3 % -> 40.1 % in 30 epochs" in sentence
    assert "dino +3.0 points (21.0 % -> 24.0 % in 48 epochs; one standard error 1.4 points on 1,000 images)" in sentence


def test_the_values_the_chapter_glues(status):
    values = status_values(status)
    assert values["status_tests"] == len(status.tests) and values["status_holds"] == 3
    assert values["trained_u_runs"].startswith("dino, tiny-imagenet (objects), seed 1, 48 epochs, middle dip +1.0")
    assert values["trained_networks"] == len(status.networks) and values["trained_early_max"] < 40
    seeds = seed_group_values(seed_group("dino-tier-48-seeds", "tiny-imagenet"), "dino")
    assert seeds["dino_seed0_shape"].startswith("rising (middle dip -1.4") and seeds["dino_seed1_lowest"] == "L3"
    assert seeds["dino_seed1_shape"] == "U (middle dip +1.0 directions, 90 % interval +0.7 to +1.7)"
