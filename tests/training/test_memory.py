"""Running out of GPU memory, injected on the CPU: one message with the batch and what to
try, never PyTorch's traceback; and the estimate of the largest batch that fits."""
import pytest
import torch
from training_runs import DATASET, TINY_ARGS

from ib_tutorial import cli
from ib_tutorial.training import dino
from ib_tutorial.training.loop import largest_batch, tried_bytes

GIB = 2**30


def test_the_largest_batch_scales_what_the_step_needed_above_the_weights():
    # 2 GiB of weights; the step of 256 images held 50 GiB and asked for 50 more: 98 GiB for
    # 256 images above the weights, so 78 GiB hold 203 of them.
    assert largest_batch(256, fixed=2 * GIB, peak=50 * GIB, tried=50 * GIB, total=80 * GIB) == 203
    assert largest_batch(64, fixed=GIB, peak=GIB, tried=80 * GIB, total=80 * GIB) == 63  # 1 GiB short: one image fewer


def test_the_failed_allocation_is_read_from_the_message():
    assert tried_bytes(RuntimeError("CUDA out of memory. Tried to allocate 2.50 GiB (GPU 0; ...)")) == int(2.5 * GIB)
    assert tried_bytes(RuntimeError("something else")) == 0


def test_an_out_of_memory_step_gives_one_message_naming_the_batch(tmp_path, monkeypatch):
    def exhausted(self, views, labels, epoch):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(dino.DINOTraining, "forward", exhausted)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["train", "--dataset", DATASET, "--preset", "ci", "--out", str(tmp_path / "run"), "--no-progress",
                  *TINY_ARGS, "--epochs", "1"])
    message = str(stopped.value)
    assert message.startswith("error: cpu ran out of memory in a training step of 8 images per process (global batch 8)")
    assert "Lower --batch-size" in message and "--batch-size 4" in message and "--resume" in message
