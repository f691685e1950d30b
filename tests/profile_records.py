"""Profile records with known values, for the tests of files, figures and widgets."""
import dataclasses
import json
from pathlib import Path

import torch

from ib_tutorial.measure.block_profile import Profile
from ib_tutorial.measure.bootstrap import BootstrapProfile, StoredReplicates
from ib_tutorial.book.bundles import BundleRun
from ib_tutorial.book.records import ProfileRecord, provenance
from ib_tutorial.training.run_config import RunConfig
from ib_tutorial.training.run_config import RunSpec

# A committed run's settings: a real configuration to vary.
CONFIG = Path(__file__).resolve().parents[1] / "results" / "laptop-real" / "tiny-imagenet" / "config.json"


def make_profile(depth=12, dim=384, n_eff=None):
    """A profile of width ``dim``: ``n_eff`` per block, else a U over ``depth`` blocks."""
    n_eff = n_eff if n_eff is not None else [100.0 + 10 * abs(5 - block) for block in range(depth)]
    return Profile(n_eff=n_eff, eed_percent=[100 * n / dim for n in n_eff], dim=dim, tokens="all",
                   center=True, n_images=64, n_tokens=64 * 65,
                   companions={"participation_ratio": [n / 2 for n in n_eff]})


def make_record(epoch=3, dim=384, n_eff=None):
    profile = make_profile(dim=dim, n_eff=n_eff)
    prov = provenance(preset="ci", config={"lr": 1e-3, "epochs": 2}, dataset="synthetic-objects",
                      n_images=profile.n_images, n_tokens=profile.n_tokens, device="cpu")
    return ProfileRecord(label="teacher", epoch=epoch, profile=profile, provenance=prov)


def bootstrapped(n_eff, spread, moved=range(5)):
    """A profile with replicates spread evenly by ``spread`` directions around it (the blocks
    ``moved`` together, the rest fixed)."""
    shifts = torch.linspace(-spread, spread, 101, dtype=torch.float64)[:, None]
    mask = torch.tensor([float(block in moved) for block in range(len(n_eff))], dtype=torch.float64)
    replicates = torch.tensor(n_eff, dtype=torch.float64) + shifts * mask
    return BootstrapProfile(list(n_eff), replicates, dim=100, level=0.9, method="percentile", variant="tokens", seed=0)


def bundle_run(spec, width=384):
    """A run of ``spec`` (its ``@`` settings applied to a committed configuration) with
    profiles of ``width`` at epochs 0 and 2 and two k-NN records."""
    spec = RunSpec.parse(spec)
    config = RunConfig.from_dict(json.loads(CONFIG.read_text()))
    train = {key: value for key, value in spec.overrides.items() if key != "seed"}  # the seed is the run's own
    config = dataclasses.replace(config, seed=spec.overrides.get("seed", config.seed),
                                 train=dataclasses.replace(config.train, **train))
    knn = [{"epoch": 0, "top1": 20.0, "top1_mean": 21.0}, {"epoch": 2, "top1": 25.0, "top1_mean": 24.0}]
    return BundleRun(spec, config, {}, [make_record(0, width), make_record(2, width)], knn, [], [], {})


# A random initialisation and a trained hump, in directions of a width of 384.
INIT = [10.0] * 12
HUMP = [40.0, 42.0, 50.0, 56.0, 60.0, 62.0, 64.0, 60.0, 55.0, 48.0, 44.0, 42.0]


def seeded(seed, last=HUMP, spread=0.5, top1=(20.0, 40.0)):
    """A run of ``seed`` whose two profiles carry replicates: the measured values plus the same
    noise of standard deviation ``spread`` directions in every block (one draw of images)."""
    noise = spread * torch.randn(200, 1, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)

    def record(epoch, n_eff):
        replicates = (torch.tensor([n_eff], dtype=torch.float64) + noise).tolist()
        return dataclasses.replace(make_record(epoch, 384, n_eff), bootstrap=StoredReplicates("tokens", 7, replicates))

    run = bundle_run("tiny-imagenet@objective=supervised")
    knn = [{"epoch": 0, "top1": top1[0], "n_eval": 1000}, {"epoch": 15, "top1": top1[1], "n_eval": 1000}]
    return dataclasses.replace(run, config=dataclasses.replace(run.config, seed=seed), knn=knn,
                               profiles=[record(0, INIT), record(15, list(last))])
