"""What the paper reports, as data, and a measured profile set against it.

Values are read off the paper's text for converged (100-epoch) DINO ViT-Small runs
(Awadhiya, arXiv 2512.07331). Where the paper gives a range ("about 58-60 %") we keep it; where
it gives one value ("about 30.5 %") the band is ours: the value plus or minus
:data:`ABOUT_TOLERANCE` points. Blocks are 0-based: L0 is the first transformer block.

EED% is a share of the width, and the input and patch sizes set the tokens a block sees, so a
profile is compared like for like (:func:`setting_difference`) only when its architecture and
input are the paper's as the ``paper`` preset reads them (``PAPER_OPEN_CHOICES`` in
:mod:`ib_tutorial.presets`); otherwise the paper's values stand beside it with no verdict.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..data import DATASETS
from ..models import ARCHITECTURES, MODEL_NAMES
from ..presets import get_preset
from ..training.run_config import RunConfig, RunSpec


@dataclass(frozen=True)
class ReportedProfile:
    """The paper's summary of one dataset's EED% profile: (low, high) EED% bands, None where
    not reported, and the blocks each refers to; ``flat_above`` the floor of a profile reported
    as flat; ``late_statistic`` "mean" of the late blocks, or "max" where the paper says "up to";
    ``quotes`` the paper's words by statistic; ``tolerance_bands`` the statistics whose band is
    ours (:func:`about`)."""

    early_blocks: tuple[int, ...]
    early_eed: tuple[float, float] | None
    middle_blocks: tuple[int, ...]
    minimum_eed: tuple[float, float] | None
    late_blocks: tuple[int, ...]
    late_eed: tuple[float, float] | None
    flat_above: float | None = None
    late_statistic: str = "mean"
    quotes: dict[str, str] = field(default_factory=dict)
    tolerance_bands: tuple[str, ...] = ()

    def band_note(self, statistic: str, values: tuple[float, float] | None) -> str:
        """The paper's words for ``statistic`` and, where the band is ours, that it is."""
        quote = self.quotes.get(statistic)
        if quote is None or values is None:
            return ""
        ours = statistic in self.tolerance_bands
        return f"paper: \"{quote}\"" + (f"; ±{ABOUT_TOLERANCE:g} is our tolerance" if ours else "")


#: The blocks the paper calls early, middle (where it finds the minimum) and late.
EARLY, MIDDLE, LATE = (0, 1), (2, 3, 4), (9, 10, 11)

#: Our tolerance, in EED points, around a value the paper states as "about x": the band
#: (x - 1, x + 1). It is not the paper's: the paper gives no interval.
ABOUT_TOLERANCE = 1.0


def about(value: float) -> tuple[float, float]:
    """Our band around a value the paper gives as "about ``value``" (:data:`ABOUT_TOLERANCE`)."""
    return (value - ABOUT_TOLERANCE, value + ABOUT_TOLERANCE)


#: What the paper reports for each dataset it studied.
REPORTED: dict[str, ReportedProfile] = {
    # The late blocks "rise again" (no number).
    "cifar100": ReportedProfile(EARLY, (58.0, 60.0), MIDDLE, about(23.0), LATE, None,
                                quotes={"early": "about 58-60 %", "minimum": "about 23 %"},
                                tolerance_bands=("minimum",)),
    # "Up to" names the highest late block; the paper states no lower value for them.
    "tiny-imagenet": ReportedProfile(EARLY, (58.0, 60.0), MIDDLE, about(30.5), LATE, about(92.5),
                                     late_statistic="max",
                                     quotes={"early": "about 58-60 %", "minimum": "about 30.5 %",
                                             "late": "up to about 92.5 %"},
                                     tolerance_bands=("minimum", "late")),
    "uc-merced": ReportedProfile(EARLY, None, MIDDLE, None, LATE, None, flat_above=90.0,
                                 quotes={"flat": "above 90 % at every depth"}),
}


def late_value(reported: ReportedProfile, eed_percent) -> float:
    """The late blocks' statistic the paper reports (their mean, or their highest block)."""
    values = [eed_percent[b] for b in reported.late_blocks]
    return max(values) if reported.late_statistic == "max" else sum(values) / len(values)


def late_label(reported: ReportedProfile) -> str:
    """How :func:`late_value` summarises the late blocks, e.g. "highest of L9-L11"."""
    blocks = f"L{reported.late_blocks[0]}-L{reported.late_blocks[-1]}"
    return f"highest of {blocks}" if reported.late_statistic == "max" else f"mean of {blocks}"


PAPER_DATASETS = tuple(REPORTED)
# Beyond the paper: every other dataset of the registry.
EXTRA_DATASETS = tuple(name for name in DATASETS if name not in PAPER_DATASETS)


@dataclass(frozen=True)
class Setting:
    """What a profile was measured on: the backbone, and the input and patch sides in pixels."""

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


def paper_setting(dataset: str) -> Setting:
    """The paper's setting for ``dataset``: ViT-S at the input the ``paper`` preset feeds it
    (our reading: the paper states no input or patch size)."""
    view = get_preset("paper").view(dataset)
    return Setting("vit_small", view.img_size, view.patch_size)


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


def _against_range(value: float, bounds: tuple[float, float] | None) -> tuple[str, str, str]:
    if bounds is None:
        return "not reported", "the paper gives no number", "-"
    low, high = bounds
    paper = f"{low:.1f}-{high:.1f} %" if low != high else f"{low:.1f} %"
    if value < low:
        return paper, "below", f"{value - low:+.1f} points below the range"
    if value > high:
        return paper, "above", f"{value - high:+.1f} points above the range"
    return paper, "within", "inside the reported range"


def compare_profile(dataset: str, eed_percent: list[float], setting: Setting) -> list[ComparisonRow]:
    """Early-block, minimum and late-block EED%, and flatness, of a profile measured at ``setting``,
    against the paper: the verdict "not reported" for a dataset it did not study, "reference only"
    for a setting unlike the paper's (:func:`setting_difference`)."""
    reported: ReportedProfile | None = REPORTED.get(dataset)
    ref = reported or REPORTED["tiny-imagenet"]  # block ranges are the same for every dataset
    early = sum(eed_percent[b] for b in ref.early_blocks) / len(ref.early_blocks)
    minimum = min(eed_percent)
    where = eed_percent.index(minimum)
    late = late_value(ref, eed_percent)
    rows = []
    early_blocks = f"L{ref.early_blocks[0]}-L{ref.early_blocks[-1]}"
    for key, statistic, ours, ours_text in (("early", f"early EED% (mean of {early_blocks})", early, f"{early:.1f} %"),
                                            ("minimum", "minimum EED%", minimum, f"{minimum:.1f} % at L{where}"),
                                            ("late", f"late EED% ({late_label(ref)})", late, f"{late:.1f} %")):
        bounds = getattr(reported, f"{key}_eed") if reported else None
        paper, verdict, deviation = _against_range(ours, bounds) if reported else ("not studied", "not reported", "-")
        note = reported.band_note(key, bounds) if reported else ""
        paper = f"{paper} ({note})" if note else paper
        rows.append(ComparisonRow(dataset, statistic, ours, ours_text, paper, verdict, deviation))
    if reported and reported.minimum_eed is not None:
        in_middle = where in reported.middle_blocks
        rows.insert(2, ComparisonRow(
            dataset, "block of the minimum", float(where), f"L{where}",
            f"L{reported.middle_blocks[0]}-L{reported.middle_blocks[-1]}",
            "within" if in_middle else "differs",
            "inside the reported blocks" if in_middle else f"minimum at L{where}, outside the reported blocks",
        ))
    if reported and reported.late_eed is None and reported.minimum_eed is not None:
        rises = where < min(ref.late_blocks) and late > minimum  # a minimum inside the late blocks is no rise
        rows[-1] = ComparisonRow(
            dataset, rows[-1].statistic, late, f"{late:.1f} %", "rises again after the minimum",
            "qualitative match" if rises else "differs",
            f"{late - minimum:+.1f} points above the minimum" if rises else "does not rise after the minimum",
        )

    if reported and reported.flat_above is not None:
        flat = minimum > reported.flat_above
        rows.append(ComparisonRow(
            dataset, "flatness (lowest block)", minimum,
            f"lowest {minimum:.1f} %, spread {max(eed_percent) - minimum:.1f} points",
            f"flat, above {reported.flat_above:.0f} % at every depth",
            "within" if flat else "below",
            "every block above the reported floor" if flat
            else f"{minimum - reported.flat_above:+.1f} points below the floor at L{where}",
        ))
    unlike = setting_difference(dataset, setting) if reported else None
    if unlike is None:
        return rows
    return [replace(row, verdict="reference only", deviation="-", unlike=unlike) for row in rows]


def run_comparison(spec: str, eed_percent: list[float], config: RunConfig) -> list[ComparisonRow]:
    """:func:`compare_profile` of one run at the setting its ``config`` records, its rows named
    by the run's spec (``tiny-imagenet@arch=vit_small``) rather than its dataset."""
    rows = compare_profile(RunSpec.parse(spec).dataset, eed_percent, Setting.of(config))
    return [replace(row, dataset=spec) for row in rows]
