"""Run directories of the knob's DINO rows, written by hand with known values."""
import dataclasses
import json

from ib_tutorial.presets import get_preset
from ib_tutorial.book.recipes import recipe_settings
from ib_tutorial.training.run_config import RunConfig


def write_row(folder, knn, information, **settings):
    """A DINO run at the knob's object end: k-NN ``(epoch, top1)`` every 100 steps on 1,000
    images, the teacher's ``information`` logged every 50 steps from step 50, K = 64."""
    folder.mkdir(parents=True)
    config = RunConfig.resolve("synthetic-mix", get_preset("ci"), dict(out_dim=64, threads=1, arch="vit_tiny", **settings),
                               {"texture_weight": 0.0})
    config = dataclasses.replace(config, steps_per_epoch=100)
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    records = [{"kind": "knn", "epoch": e, "step": 100 * e, "top1": top1, "top1_mean": top1, "n_eval": 1000}
               for e, top1 in knn]
    records += [{"kind": "train", "epoch": (50 * (i + 1)) // 100, "step": 50 * (i + 1), "teacher_entropy": 4.0,
                 "teacher_information": nats, "images_per_s": 10.0} for i, nats in enumerate(information)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return recipe_settings(config.train, config.view)
