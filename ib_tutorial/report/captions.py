"""A figure's caption: one sentence of what the figure shows, and under it, on one smaller
line, its provenance (what was measured, on which data, by which code, and whether the run
was reduced). :func:`add_caption` draws both for every figure of the book; the functions
below write the provenance line of figures drawn from stored results.
"""
from __future__ import annotations

import functools
import textwrap

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Annotation

from ..models import MODEL_NAMES
from ..presets import PRESETS
from ..reproduction.bundles import Bundle
from ..reproduction.dataset_runs import DatasetRun
from ..reproduction.records import ProfileRecord


def _reduced(preset: str) -> str:
    """The caption's flag for a run of an illustrative preset (:attr:`~ib_tutorial.presets.Preset.illustrative`)."""
    illustrative = preset in PRESETS and PRESETS[preset].illustrative
    return " (reduced: a few steps, illustrative)" if illustrative else ""


def profile_caption(record: ProfileRecord) -> str:
    """The caption line of a figure drawn from a profile record: preset (flagged when
    reduced), model and width, images, tokens, centring, and the code that measured it."""
    p, profile = record.provenance, record.profile
    reduced = _reduced(p.preset)
    model = MODEL_NAMES.get(profile.dim, "ViT")
    centring = "centred" if profile.center else "uncentred"
    what = record.label if record.label.startswith(p.dataset) else f"{p.dataset}: {record.label}"
    return (f"preset {p.preset}{reduced}; {what}; {model} (D = {profile.dim}), {p.n_images} held-out images, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


def pruning_caption(record: dict) -> str:
    """The caption line of a figure drawn from a pruning record: what was pruned, on which
    images, by which code."""
    p = record["provenance"]
    reduced = _reduced(p["preset"])
    return (f"preset {p['preset']}{reduced}; {p['dataset']}: teacher of epoch {record['epoch']}, {record['pool']}-pooled "
            f"features; directions fitted on {record['blocks'][0]['n_tokens']:,} training tokens; k-NN over "
            f"{p['n_images']:,} images (train against held-out); code {p['code_version'][:10]}")


def bundle_caption(bundle: Bundle) -> str:
    """What made the bundle, from the newest profile of its first run (see
    :func:`profile_caption`), with each run's held-out images where the runs differ in them,
    and each run's width where they differ in it (the first run's model would otherwise name
    them all)."""
    newest = next(iter(bundle.runs.values())).profiles[-1]
    counts = {spec: run.profiles[-1].provenance.n_images for spec, run in bundle.runs.items()}
    images = ("" if len(set(counts.values())) == 1 else
              "; held-out images per dataset: " + ", ".join(f"{spec} {n}" for spec, n in counts.items()))
    widths = {spec: run.profiles[-1].profile.dim for spec, run in bundle.runs.items()}
    if len(set(widths.values())) > 1:
        runs = ", ".join(f"{spec} {MODEL_NAMES.get(dim, 'ViT')} (D = {dim})" for spec, dim in widths.items())
        return f"bundle {bundle.name}, runs of several widths ({runs}); its first run: {profile_caption(newest)}{images}"
    return f"bundle {bundle.name}: {profile_caption(newest)}{images}"


def run_caption(entry: DatasetRun) -> str:
    """What made a dataset run's figures: the bundle, the run, and its last profile's
    provenance (:func:`profile_caption`)."""
    return f"bundle {entry.bundle.name}, run {entry.spec}: {profile_caption(entry.run.profiles[-1])}"


def published_caption(record: ProfileRecord) -> str:
    """The caption line of a figure drawn from a published model's profile record: the
    model, its weights (file or hub, with their SHA-256), input, data, tokens, centring
    and the code that measured it."""
    p, profile = record.provenance, record.profile
    centring = "centred" if profile.center else "uncentred"
    return (f"{p.model} (D = {profile.dim}), weights {p.weights} (SHA-256 {p.weights_sha256[:12]}), "
            f"{p.input_size} px; {p.dataset_spec}: {p.n_images} held-out images of preset {p.preset}, "
            f"{p.n_tokens:,} tokens ({profile.tokens}, {centring}); code {p.code_version[:10]}, {p.date[:10]}")


#: The PNG text keyword (one the PNG standard defines) under which :func:`add_caption`
#: also saves a figure's caption: drawn into the pixels, it cannot be read from a built page.
CAPTION_KEY = "Description"


def add_caption(figure: plt.Figure, provenance: str, what: str | None = None) -> None:
    """Caption ``figure`` under its axes: ``what`` it shows, one sentence, and under it
    ``provenance`` (what was run) on a smaller grey line, wrapped only where it is wider than
    the figure. Without ``what`` the provenance line alone. The constrained layout leaves room
    for both without squeezing the axes.

    On an Agg canvas (pyplot's, and a notebook's inline display) every PNG of the figure
    also carries the caption as text under :data:`CAPTION_KEY`, so a check of the built
    book (``tests/book_pages.py``) can tell a captioned figure from one without."""
    width = figure.get_figwidth()
    lines = textwrap.wrap(provenance, width=int(width * 16), break_on_hyphens=False) or [""]
    if what is None:
        figure.supxlabel("\n".join(lines), fontsize="x-small", color="0.35")
    else:
        # The sentence is the figure's x label; blank lines under it keep the provenance's room,
        # and the provenance is anchored to the sentence, so the layout moves both together.
        said = textwrap.wrap(what, width=int(width * 13), break_on_hyphens=False)
        sentence = figure.supxlabel("\n".join(said + [" "] * len(lines)), fontsize="small")
        figure.add_artist(Annotation("\n".join(lines), xy=(0.5, 0), xycoords=sentence, xytext=(0, 1),
                                     textcoords="offset points", ha="center", va="bottom", fontsize="x-small",
                                     color="0.35", annotation_clip=False))
    text = provenance if what is None else f"{what} {provenance}"
    # Matplotlib takes PNG metadata only as an argument of each save: the figure's own
    # canvas supplies it by default (an explicit ``metadata=`` still wins). A Figure made
    # without pyplot has no such canvas; saving it borrows a new one, without the caption.
    if isinstance(figure.canvas, FigureCanvasAgg):
        figure.canvas.print_png = functools.partial(figure.canvas.print_png, metadata={CAPTION_KEY: text})
