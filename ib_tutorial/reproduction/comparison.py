"""Set a measured EED profile against what the paper reports, and state a deviation only
where the two are alike.

EED% is a share of the model's width, and the input's size and patch size set the tokens
a block sees: a ViT-Ti at 32 px set against the paper's ViT-S prints a "deviation" that
measures the difference of networks, not of results. So a profile is compared like for like
(:func:`setting_difference`) only when its architecture is the paper's and its input is the
paper's as the ``paper`` preset reads it (the paper states no input or patch size:
``PAPER_OPEN_CHOICES`` in :mod:`ib_tutorial.presets`); otherwise the paper's values stand beside
it as a reference, with no verdict and no deviation.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..models import ARCHITECTURES, MODEL_NAMES
from ..presets import get_preset
from ..training.run_config import RunConfig
from ..training.run_spec import RunSpec
from .paper import REPORTED, ReportedProfile, late_label, late_value


@dataclass(frozen=True)
class Setting:
    """What a profile was measured on: the backbone and the input it was trained and profiled at.

    Attributes:
        arch: the architecture's name (:data:`~ib_tutorial.models.ARCHITECTURES`).
        img_size: the input's side in pixels.
        patch_size: the patch's side in pixels.
    """

    arch: str
    img_size: int
    patch_size: int

    @classmethod
    def of(cls, config: RunConfig) -> "Setting":
        """The setting a run's ``config.json`` records."""
        return cls(config.model["arch"], config.view.img_size, config.view.patch_size)

    @property
    def text(self) -> str:
        """``"ViT-Ti (D = 192) at 32 px, patch 8"``."""
        dim = ARCHITECTURES[self.arch]["embed_dim"]
        return f"{MODEL_NAMES.get(dim, self.arch)} (D = {dim}) at {self.img_size} px, patch {self.patch_size}"


#: The paper's backbone.
PAPER_ARCH = "vit_small"


def paper_setting(dataset: str) -> Setting:
    """The paper's setting for ``dataset``: ViT-S at the input the ``paper`` preset feeds it
    (our reading: the paper states no input or patch size)."""
    view = get_preset("paper").view(dataset)
    return Setting(PAPER_ARCH, view.img_size, view.patch_size)


def setting_difference(dataset: str, setting: Setting) -> str | None:
    """None when ``setting`` is the paper's for ``dataset`` (:func:`paper_setting`); otherwise
    why the two are not alike, in one sentence."""
    paper = paper_setting(dataset)
    if setting == paper:
        return None
    return (f"Not like for like: {setting.text} against the paper's {paper.text} (the `paper` preset's reading; "
            "the paper states no input size), so the paper's values stand beside as a reference, with no deviation.")


@dataclass(frozen=True)
class ComparisonRow:
    """One summary statistic: ours, the paper's, and how they differ."""

    dataset: str
    statistic: str
    ours: float | None
    ours_text: str
    paper_text: str
    verdict: str  # "within", "above", "below", "qualitative match", "differs", "not reported", "reference only"
    deviation: str
    unlike: str | None = None  # why the profile is not compared like for like (setting_difference)


def _mean(values: list[float], blocks: tuple[int, ...]) -> float:
    return sum(values[b] for b in blocks) / len(blocks)


def _against_range(value: float, bounds: tuple[float, float] | None) -> tuple[str, str, str]:
    if bounds is None:
        return "not reported", "the paper gives no number", "-"
    low, high = bounds
    paper = f"{low:.1f}-{high:.1f} %" if low != high else f"{low:.1f} %"  # a band of ours where the paper gives one value (paper.about)
    if value < low:
        return paper, "below", f"{value - low:+.1f} points below the range"
    if value > high:
        return paper, "above", f"{value - high:+.1f} points above the range"
    return paper, "within", "inside the reported range"


def compare_profile(dataset: str, eed_percent: list[float], setting: Setting) -> list[ComparisonRow]:
    """Early-block, minimum and late-block EED%, and flatness, against the paper.

    ``eed_percent`` is the per-block profile (12 values, block 0 first), measured at
    ``setting``. Datasets the paper did not study get the same rows with the verdict "not
    reported"; a setting unlike the paper's (:func:`setting_difference`) gets the paper's
    values as a reference, the verdict "reference only" and no deviation.
    """
    unlike = setting_difference(dataset, setting) if dataset in REPORTED else None
    rows = _compare(dataset, eed_percent)
    if unlike is None:
        return rows
    return [replace(row, verdict="reference only", deviation="-", unlike=unlike) for row in rows]


def _compare(dataset: str, eed_percent: list[float]) -> list[ComparisonRow]:
    """:func:`compare_profile`'s rows, every verdict and deviation stated."""
    reported: ReportedProfile | None = REPORTED.get(dataset)
    ref = reported or REPORTED["tiny-imagenet"]  # block ranges are the same for every dataset
    rows = []

    def add(statistic, ours, ours_text, bounds, key):
        paper, verdict, deviation = _against_range(ours, bounds) if reported else ("not studied", "not reported", "-")
        note = reported.band_note(key, bounds) if reported else ""
        paper = f"{paper} ({note})" if note else paper
        rows.append(ComparisonRow(dataset, statistic, ours, ours_text, paper, verdict, deviation))

    early = _mean(eed_percent, ref.early_blocks)
    add(f"early EED% (mean of L{ref.early_blocks[0]}-L{ref.early_blocks[-1]})", early, f"{early:.1f} %",
        reported.early_eed if reported else None, "early")

    minimum = min(eed_percent)
    where = eed_percent.index(minimum)
    add("minimum EED%", minimum, f"{minimum:.1f} % at L{where}", reported.minimum_eed if reported else None, "minimum")
    if reported and reported.minimum_eed is not None:
        in_middle = where in reported.middle_blocks
        rows.append(ComparisonRow(
            dataset, "block of the minimum", float(where), f"L{where}",
            f"L{reported.middle_blocks[0]}-L{reported.middle_blocks[-1]}",
            "within" if in_middle else "differs",
            "inside the reported blocks" if in_middle else f"minimum at L{where}, outside the reported blocks",
        ))

    late = late_value(ref, eed_percent)  # the highest late block where the paper says "up to"
    add(f"late EED% ({late_label(ref)})", late, f"{late:.1f} %", reported.late_eed if reported else None,
        "late")
    if reported and reported.late_eed is None and reported.minimum_eed is not None:
        rises = where < min(ref.late_blocks) and late > minimum  # a minimum inside the late blocks is no rise
        rows[-1] = ComparisonRow(
            dataset, rows[-1].statistic, late, f"{late:.1f} %", "rises again after the minimum",
            "qualitative match" if rises else "differs",
            f"{late - minimum:+.1f} points above the minimum" if rises else "does not rise after the minimum",
        )

    if reported and reported.flat_above is not None:
        lowest = min(eed_percent)
        flat = lowest > reported.flat_above
        rows.append(ComparisonRow(
            dataset, "flatness (lowest block)", lowest,
            f"lowest {lowest:.1f} %, spread {max(eed_percent) - lowest:.1f} points",
            f"flat, above {reported.flat_above:.0f} % at every depth",
            "within" if flat else "below",
            "every block above the reported floor" if flat
            else f"{lowest - reported.flat_above:+.1f} points below the floor at L{eed_percent.index(lowest)}",
        ))
    return rows


def run_comparison(spec: str, eed_percent: list[float], config: RunConfig) -> list[ComparisonRow]:
    """:func:`compare_profile` of one run of a reproduction at the setting its ``config``
    records, its rows named by the run's spec (``tiny-imagenet@arch=vit_small``) rather than
    its dataset."""
    rows = compare_profile(RunSpec.parse(spec).dataset, eed_percent, Setting.of(config))
    return [replace(row, dataset=spec) for row in rows]


def comparison_records(rows: list[ComparisonRow]) -> list[dict]:
    return [asdict(r) for r in rows]
