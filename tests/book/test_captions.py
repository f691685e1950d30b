"""Figure captions name what made the figure."""
from profile_records import bundle_run

from ib_tutorial.book.plots import bundle_caption
from ib_tutorial.book.bundles import Bundle


def test_a_bundle_of_two_widths_names_each_runs_width():
    one = Bundle("b", None, "laptop", {"tiny-imagenet": bundle_run("tiny-imagenet", 192)})
    assert "ViT-Ti (D = 192" in bundle_caption(one) and "several widths" not in bundle_caption(one)
    mixed = Bundle("b", None, "laptop", {"tiny-imagenet": bundle_run("tiny-imagenet", 192),
                                         "tiny-imagenet@arch=vit_small": bundle_run("tiny-imagenet@arch=vit_small", 384)})
    caption = bundle_caption(mixed)
    assert "runs of several widths (tiny-imagenet ViT-Ti (D = 192), tiny-imagenet@arch=vit_small ViT-S" in caption
    assert "(D = 384)" in caption
