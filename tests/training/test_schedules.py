"""A run's schedules: their values by hand, the warm-up's and the freeze's floors in steps,
what a run says about them, and the watch on the teacher's information."""
import dataclasses
import math

import pytest

from ib_tutorial.command_line import spoken_as_options
from ib_tutorial.presets import FREEZE_ANCHOR_STEPS, PRESETS, WARMUP_ANCHOR_STEPS, TrainSettings
from ib_tutorial.training.dino import InformationWatch
from ib_tutorial.training.schedules import (
    Phases,
    Schedules,
    cosine_schedule,
    phase_notes,
    phase_warnings,
    teacher_temperature_schedule,
)

DINO_48 = TrainSettings(epochs=48, batch_size=64, warmup_epochs=1, freeze_last_layer=0)  # 78 steps an epoch


def warnings_of(train, steps_per_epoch):
    return phase_warnings(train, Schedules.of(train, steps_per_epoch))


def test_cosine_schedule_by_hand():
    # warm-up over epoch 0 (2 steps): linspace(0, 1, 2); then cos over 2 steps: 1, 0.5.
    assert cosine_schedule(1.0, 0.0, epochs=2, steps_per_epoch=2, warmup_steps=2).tolist() == pytest.approx(
        [0.0, 1.0, 1.0, 0.5]
    )
    # no warm-up, 4 steps from 2 to 0: 0 + 0.5 * 2 * (1 + cos(pi * i / 4))
    expected = [1 + math.cos(math.pi * i / 4) for i in range(4)]
    assert cosine_schedule(2.0, 0.0, epochs=1, steps_per_epoch=4).tolist() == pytest.approx(expected)
    # momentum 0.996 -> 1 over 3 steps: 0.996, 1 - 0.002 (cos(pi/3) = 1/2 -> 0.997), 1 - 0.001
    assert cosine_schedule(0.996, 1.0, epochs=3, steps_per_epoch=1).tolist() == pytest.approx([0.996, 0.997, 0.999])


def test_teacher_temperature_schedule_by_hand():
    assert teacher_temperature_schedule(0.04, 0.07, warmup_epochs=3, epochs=5).tolist() == pytest.approx(
        [0.04, 0.055, 0.07, 0.07, 0.07]
    )
    assert teacher_temperature_schedule(0.04, 0.07, warmup_epochs=30, epochs=2).tolist() == pytest.approx([0.04, 0.07])


def test_schedules_scale_the_learning_rate_with_the_batch():
    train = TrainSettings(epochs=4, batch_size=512, lr=5e-4, min_lr=1e-6, warmup_epochs=1, weight_decay=0.04,
                          weight_decay_end=0.4, momentum_teacher=0.996, warmup_teacher_temp=0.04, teacher_temp=0.06,
                          warmup_teacher_temp_epochs=2)
    schedules = Schedules.of(train, 3)
    assert schedules.lr[0] == 0.0 and schedules.lr[2] == pytest.approx(1e-3)  # 5e-4 * 512 / 256
    assert schedules.lr[3] == pytest.approx(1e-3) and schedules.lr[-1] > 1e-6
    assert schedules.weight_decay[0] == pytest.approx(0.04)
    assert schedules.momentum[0] == pytest.approx(0.996)
    assert schedules.teacher_temp.tolist() == pytest.approx([0.04, 0.06, 0.06, 0.06])
    assert len(schedules.lr) == len(schedules.weight_decay) == len(schedules.momentum) == 12
    assert schedules.steps_per_epoch == 3
    assert schedules.matches(schedules.state_dict())
    changed = schedules.state_dict()
    changed["lr"] = changed["lr"] * 2
    assert not schedules.matches(changed)


def test_a_phase_is_the_longer_of_its_epochs_and_its_floor():
    assert Phases.of(DINO_48, 78) == Phases(warmup_steps=78, freeze_steps=0)
    floored = dataclasses.replace(DINO_48, warmup_min_steps=800, freeze_min_steps=400)
    assert Phases.of(floored, 78) == Phases(warmup_steps=800, freeze_steps=400)
    assert Phases.of(dataclasses.replace(floored, warmup_epochs=12), 78).warmup_steps == 936
    # A floor never makes the warm-up longer than the run (it is all warm-up then).
    assert Phases.of(dataclasses.replace(floored, epochs=5), 78).warmup_steps == 390
    # The supervised control's phases: its warm-up's epochs, no floors and no freeze.
    assert Phases.of(floored, 78, floored=False) == Phases(warmup_steps=78, freeze_steps=0)


def test_the_tiers_that_learn_keep_the_floors_and_outlast_them():
    # Each GPU tier on CIFAR-100's 50,000 training images, the laptop tier on its own 5,000: the
    # floors hold, the learning rate reaches its peak before the run ends, and the run starts
    # without a warning. (A run too short for the floor is all warm-up, and says so:
    # test_a_short_warm_up_is_named_with_its_fix.)
    for name, images in (("laptop", PRESETS["laptop"].train.train_images), ("quick", 50_000), ("paper", 50_000)):
        train = PRESETS[name].train
        steps_per_epoch = images // train.batch_size
        phases = Phases.of(train, steps_per_epoch)
        assert phases.warmup_steps >= WARMUP_ANCHOR_STEPS and phases.freeze_steps >= FREEZE_ANCHOR_STEPS, name
        assert phases.warmup_steps < train.epochs * steps_per_epoch, name
        assert not warnings_of(train, steps_per_epoch), name


def test_a_short_warm_up_is_named_with_its_fix():
    with spoken_as_options():
        warnings = warnings_of(DINO_48, 78)
    assert len(warnings) == 2
    assert "warm-up lasts 78 steps, under the 800" in warnings[0]
    assert "--warmup-min-steps to 800 (or --warmup-epochs to 11)" in warnings[0]
    assert "freeze lasts 0 steps, under the 400" in warnings[1] and "--freeze-min-steps" in warnings[1]
    assert not warnings_of(dataclasses.replace(DINO_48, warmup_min_steps=800, freeze_min_steps=400), 78)
    short = warnings_of(dataclasses.replace(DINO_48, epochs=5, warmup_min_steps=800, freeze_min_steps=400), 78)
    assert "train for at least 800 steps" in short[0]


def test_a_floor_that_lengthens_a_phase_is_noted():
    floored = dataclasses.replace(DINO_48, warmup_min_steps=800, freeze_min_steps=400)
    with spoken_as_options():
        notes = phase_notes(floored, Schedules.of(floored, 78))
    assert notes[0] == ("--warmup-epochs 1 is 78 steps at 78 steps an epoch; --warmup-min-steps 800 makes it "
                        "800 steps (10.3 epochs).")
    assert "--freeze-last-layer 0 is 0 steps" in notes[1]
    assert not phase_notes(DINO_48, Schedules.of(DINO_48, 78))


def information_warnings(values, phases=Phases(warmup_steps=300, freeze_steps=450), every=10):
    watch = InformationWatch(phases)
    return [(step, message) for step, value in zip(range(every, every * (len(values) + 1), every), values)
            if (message := watch.update(step, value))]


def test_the_watch_warns_once_when_a_sharpened_teacher_goes_back_to_uniform():
    # The laptop run: 0.60 -> 1.28 nats by step 330, then 0.52 by step 600, after the release at 450.
    rising = [0.6 + 0.02 * i for i in range(35)]   # steps 10-350: up to 1.28
    falling = [1.28 - 0.03 * i for i in range(26)]  # steps 360-610: down to 0.53
    warned = information_warnings(rising + falling + [0.5] * 10)
    assert len(warned) == 1  # after the release; the fall while frozen (350-450) stayed above 60 %
    step, message = warned[0]
    assert 450 < step <= 610 and "after the last layer's release at step 450" in message
    assert "--lr" in message


def test_the_watch_is_quiet_for_a_teacher_that_holds_or_rises():
    noisy = [0.7, 0.6, 0.8, 0.75, 1.0, 1.2, 0.8, 1.3, 1.1, 1.25, 0.9, 1.3]  # one low batch is not a fall
    assert not information_warnings(noisy)
    assert not information_warnings([0.2, 0.1, 0.05, 0.1])  # never informative: the collapse warning's job
    assert information_warnings([1.0, 1.0, 1.0, 0.4, 0.4, 0.4])  # a fall in one phase is seen
