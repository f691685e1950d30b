"""Profile records with known values, for the tests of files, figures and widgets."""
from ib_tutorial.block_profile import Profile
from ib_tutorial.results import profile_record, provenance


def make_profile(depth=12, dim=384):
    n_eff = [100.0 + 10 * abs(5 - block) for block in range(depth)]
    return Profile(n_eff=n_eff, eed_percent=[100 * n / dim for n in n_eff], dim=dim, tokens="all",
                   center=True, n_images=64, n_tokens=64 * 65,
                   companions={"participation_ratio": [n / 2 for n in n_eff]})


def make_record(epoch=3):
    profile = make_profile()
    prov = provenance(preset="ci", config={"lr": 1e-3, "epochs": 2}, dataset="synthetic-objects",
                      n_images=profile.n_images, n_tokens=profile.n_tokens, device="cpu")
    return profile_record(profile, label="teacher", epoch=epoch, provenance=prov)
