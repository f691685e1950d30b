"""The page checker (tests/book_pages.py) on crafted pages, then on the real book."""
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from book_pages import (BOOK_WORDS, CELL_LINES, CHAPTER_WORDS, MEDIAN_CELL_LINES, budget_table, chapter_budget,
                        chapter_sources, code_cell_lines, find_defects, page_words, rendered_math, rendered_widgets,
                        wide_tables)

from ib_tutorial.book.plots import add_caption

REPO = Path(__file__).resolve().parents[1]
OUTPUT = '<div class="cell_output docutils container">{}</div>'
STREAM = '<div class="output stream highlight-myst-ansi notranslate"><div class="highlight"><pre><span></span>{}</pre></div></div>'


def write_page(folder: Path, body: str, head: str = "") -> Path:
    """A page shaped like myst-nb's, at ``folder/book/page.html``."""
    page = folder / "book" / "page.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"<!DOCTYPE html><html><head>{head}</head><body><main>{body}</main></body></html>",
                    encoding="utf-8")
    return page


def save_figure(path: Path, caption: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, ax = plt.subplots(figsize=(3, 2), layout="constrained")
    ax.plot([0, 1], [1, 0])
    if caption is not None:
        add_caption(figure, caption)
    figure.savefig(path)
    plt.close(figure)


def widget_state(value: float, total: float, bar_style: str) -> str:
    """The widget state myst-nb embeds for one tqdm.notebook bar: a box of text, bar, text."""
    models = {
        "label": {"model_name": "HTMLModel", "state": {"value": "training (tanh): 100%"}},
        "bar": {"model_name": "FloatProgressModel", "state": {"value": value, "max": total, "bar_style": bar_style}},
        "count": {"model_name": "HTMLModel", "state": {"value": f" {value:.0f}/{total:.0f} [00:03&lt;00:00]"}},
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_label", "IPY_MODEL_bar", "IPY_MODEL_count"]}},
    }
    state = json.dumps({"state": models, "version_major": 2, "version_minor": 0})
    return f'<script type="application/vnd.jupyter.widget-state+json">{state}</script>'


def clean_page(folder: Path) -> Path:
    """What the book's pages hold: printed text, a rendered table, a captioned figure,
    finished progress bars, prose and code that mention what the checks look for."""
    save_figure(folder / "_images" / "captioned.png", "preset ci: random-init ViT-S, 64 images")
    body = "".join([
        "<p>Data goes to <code>~/.cache/ib_tutorial</code>; see https://example.org/root/docs and "
        "<a href='https://github.com/home/project/'>the project</a>.</p>",
        '<div class="cell_input"><pre>print("| a | b |")\nprint("| --- | --- |")</pre></div>',
        OUTPUT.format(STREAM.format("data   : ~/.cache/ib_tutorial (set IB_TUTORIAL_DATA to move it)\n"
                                    "accuracy | 12.5 %\nepoch 3/10 [loss 0.42]")),
        OUTPUT.format('<div class="output text_html"><table><tr><th>a</th><th>b</th></tr>'
                      "<tr><td>1</td><td>2</td></tr></table></div>"),
        OUTPUT.format('<img alt="../_images/captioned.png" src="../_images/captioned.png" />'),
        OUTPUT.format('<figure><img src="../_images/missing.png" /><figcaption><p>Figure 1: the spectrum.</p>'
                      "</figcaption></figure>"),
        OUTPUT.format(STREAM.format("DINO synthetic-objects: 100%|##########| 40/40 [00:20&lt;00:00, 2.0step/s]\n"
                                    "profiling blocks: 4it [00:01, 2.86it/s]")),
    ])
    return write_page(folder, body, head=widget_state(2001, 2001, "success"))


def kinds_and_excerpts(folder: Path) -> list[tuple[str, str]]:
    return [(defect.kind, defect.excerpt) for defect in find_defects(folder)]


def test_a_clean_page_has_no_defect(tmp_path):
    clean_page(tmp_path)
    assert find_defects(tmp_path) == []


@pytest.mark.parametrize("block, shown", [
    ('<div class="output traceback highlight-ipythontb notranslate"><pre>------\nValueError    Traceback (most recent call last)\n'
     "----&gt; 1 get_preset('fast')\nValueError: bad preset</pre></div>", "ValueError: bad preset"),
    ('<div class="output error"><pre>NameError: name x is not defined</pre></div>', "NameError"),
    (STREAM.format("Traceback (most recent call last):\n  File \"run.py\", line 3\nKeyError: 'eed'\n"), "KeyError: 'eed'"),
], ids=["traceback output", "error output", "traceback text"])
def test_a_traceback_is_found(tmp_path, block, shown):
    write_page(tmp_path, OUTPUT.format(block))
    [(kind, excerpt)] = kinds_and_excerpts(tmp_path)
    assert kind == "traceback" and shown in excerpt


def test_a_stderr_block_is_found(tmp_path):
    write_page(tmp_path, OUTPUT.format(
        '<div class="output stderr highlight-myst-ansi notranslate"><pre>UserWarning: 20 of 200 classes</pre></div>'))
    assert kinds_and_excerpts(tmp_path) == [("stderr", "UserWarning: 20 of 200 classes")]


@pytest.mark.parametrize("path", ["/root/.cache/ib_tutorial", "/home/alice/data", "/Users/bob/data",
                                  "C:\\Users\\carol\\data", "C:\\\\Users\\\\carol (JSON)"])
def test_a_home_path_is_found_anywhere_in_the_page(tmp_path, path):
    # In prose, not an output: the check covers the whole page source.
    write_page(tmp_path, f"<p>the runs are in {path}</p>")
    [(kind, excerpt)] = kinds_and_excerpts(tmp_path)
    assert kind == "home path" and path in excerpt


def test_a_markdown_table_printed_as_text_is_found(tmp_path):
    write_page(tmp_path, OUTPUT.format(STREAM.format(
        "| dataset | ours | paper |\n| --- | :-: | --- |\n| cifar100 | 12.5 | 10-15 |")))
    assert kinds_and_excerpts(tmp_path) == [("markdown table", "| dataset | ours | paper | | --- | :-: | --- |")]


def test_a_figure_without_caption_is_found(tmp_path):
    save_figure(tmp_path / "_images" / "plain.png", caption=None)
    write_page(tmp_path, OUTPUT.format('<img alt="../_images/plain.png" src="../_images/plain.png" />')
               + OUTPUT.format('<figure><img src="../_images/plain.png" /><figcaption></figcaption></figure>'))
    assert kinds_and_excerpts(tmp_path) == [("uncaptioned figure", "../_images/plain.png")] * 2


@pytest.mark.parametrize("bar, shown", [
    ("training (tanh): 100%|#########9| 2000/2001 [00:03&lt;00:00, 564.47it/s]", "2000/2001"),
    ("extracting dtd.tar.gz:  45%|####5     | 45/100 [00:01&lt;00:01, 45.0file/s]", "45%"),
    ("cifar-100-python.tar.gz:  12%|\u2588\u258f  | 20.0M/169M [00:04&lt;00:30, 5.0MB/s]", "12%"),
], ids=["count short of total", "percentage", "block characters"])
def test_an_unfinished_text_progress_bar_is_found(tmp_path, bar, shown):
    write_page(tmp_path, OUTPUT.format(STREAM.format(f"before\n{bar}\nafter")))
    [(kind, excerpt)] = kinds_and_excerpts(tmp_path)
    assert kind == "unfinished progress bar" and shown in excerpt


@pytest.mark.parametrize("value, total, bar_style", [(2000, 2001, "danger"), (2000, 2001, ""), (2001, 2001, "danger")],
                         ids=["closed early", "still running", "marked failed"])
def test_an_unfinished_progress_widget_is_found(tmp_path, value, total, bar_style):
    view = '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "box"}</script>'
    write_page(tmp_path, OUTPUT.format(view), head=widget_state(value, total, bar_style))
    [(kind, excerpt)] = kinds_and_excerpts(tmp_path)
    assert kind == "unfinished progress bar"
    assert f"widget at {value} of {total}" in excerpt and f"{value}/{total}" in excerpt


def test_a_script_from_another_host_is_found(tmp_path):
    write_page(tmp_path, "<p>x</p>", head='<script src="https://cdn.example.org/mathjax/tex-chtml.js"></script>')
    [(kind, excerpt)] = kinds_and_excerpts(tmp_path)
    assert kind == "network script" and "cdn.example.org" in excerpt


def widget_page(folder: Path, scripts: list[str]) -> Path:
    """A page with an epoch slider linked to a stack of two images, as the profile explorer
    saves it, loading the widget manager from ``scripts``."""
    import ipywidgets as widgets
    from ipywidgets.embed import embed_snippet

    stack = widgets.Stack([widgets.HTML("epoch 0"), widgets.HTML("epoch 1")], selected_index=0)
    slider = widgets.IntSlider(0, min=0, max=1, description="epoch")
    widgets.jslink((slider, "value"), (stack, "selected_index"))
    snippet = embed_snippet(views=[widgets.VBox([slider, stack])], requirejs=False)
    loaders = "".join(f'<script src="{src}"></script>' for src in scripts)
    return write_page(folder, snippet, head=loaders)


def test_widgets_are_drawn_offline_from_the_books_own_widget_manager(tmp_path):
    """The widget manager that _config.yml names is served from book/_static and draws a
    saved view with no network; the CDN's, which myst-nb would use by default, cannot."""
    import yaml

    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]
    local = [(REPO / "book" / "_static" / src).as_uri() for src in config["nb_ipywidgets_js"]]
    cdn = ["https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js",
           "https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.15/dist/embed-amd.js"]
    try:
        assert rendered_widgets(widget_page(tmp_path / "local", local)) == (1, 1)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    assert rendered_widgets(widget_page(tmp_path / "cdn", cdn)) == (1, 0)


def test_every_module_of_the_package_is_in_the_api_reference():
    """The docstrings cross-reference modules by name; one left out of book/api/ fails the
    book's build (warnings are errors) only after every notebook has run, so say it here."""
    modules = {".".join(path.relative_to(REPO).with_suffix("").parts)
               for path in (REPO / "ib_tutorial").rglob("*.py") if path.stem not in ("__init__", "__main__")}
    documented = {line.split("automodule::")[1].strip()
                  for page in (REPO / "book" / "api").glob("*.md")
                  for line in page.read_text(encoding="utf-8").splitlines() if "automodule::" in line}
    assert not modules - documented, f"modules missing from book/api/: {sorted(modules - documented)}"


@dataclass(frozen=True)
class Build:
    """One build of the book: the process's result and its HTML folder."""

    process: subprocess.CompletedProcess
    html: Path


@pytest.fixture(scope="module")
def built_book(tmp_path_factory) -> Build:
    """README command (a), into a temporary folder: the whole book on the `ci` preset with
    warnings as errors (minutes: every notebook runs), built once for the tests of its pages."""
    folder = tmp_path_factory.mktemp("book")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")  # this environment's
    started = time.monotonic()
    process = subprocess.run(
        [str(jupyter_book), "build", str(REPO), "--path-output", str(folder), "--warningiserror", "--keep-going"],
        env={**os.environ, "IB_TUTORIAL_PRESET": "ci"}, capture_output=True, text=True)
    print(f"book built in {time.monotonic() - started:.0f} s")
    return Build(process, folder / "_build" / "html")


def test_the_built_book_has_no_defects(built_book):
    """Every page checked, and the formulas of the Beyond chapter and the measurement
    reference typeset, the results chapter's widgets drawn, and the tables of the chapters
    with the widest ones within the text's width, with no network."""
    build = built_book.process
    assert build.returncode == 0, f"jupyter-book build failed:\n{build.stdout[-6000:]}\n{build.stderr[-6000:]}"
    html_folder = built_book.html
    assert (html_folder / "index.html").is_file()
    defects = find_defects(html_folder)
    assert not defects, f"{len(defects)} defect(s) in the built pages:\n" + "\n".join(map(str, defects))
    for page in ("book/beyond.html", "book/api/measure.html"):
        try:
            formulas, typeset = rendered_math(html_folder / page)
        except FileNotFoundError as missing:
            pytest.skip(str(missing))
        assert formulas > 0 and typeset >= formulas, f"{page}: {typeset} of {formulas} formulas typeset offline"
    saved, drawn = rendered_widgets(html_folder / "book" / "reproduce.html")
    assert saved > 0 and drawn == saved, f"book/reproduce.html: {drawn} of {saved} widgets drawn offline"
    for page in ("book/trained.html", "book/knob.html", "book/claims.html", "book/reproduce.html", "book/dino.html",
                 "book/beyond.html", "book/converged.html", "book/appendix_running.html"):
        tables, wide = wide_tables(html_folder / page)
        assert tables > 0 and wide == 0, f"{page}: {wide} of {tables} tables wider than the text at 1280 px"


CHAPTERS = chapter_sources(REPO)
NOTEBOOKS = [source for source in CHAPTERS if source.suffix == ".ipynb"]


def test_rendered_words_leave_out_folded_toggles_and_count_prose_apart(tmp_path):
    """Words of prose, of a code cell's input and output, and none of what a reader opens on
    demand: a folded input, a folded output, a dropdown."""
    page = write_page(tmp_path, '<article class="bd-article">'
                      "<h1>Title two<a class='headerlink' href='#'>#</a></h1><p>three prose words</p>"
                      '<div class="cell docutils container"><div class="cell_input"><pre>x = 1</pre></div>'
                      + OUTPUT.format(STREAM.format("four words of output")) + "</div>"
                      '<div class="cell tag_hide-input docutils container"><details class="hide above-input">'
                      "<summary>Show code cell source</summary><pre>import many things here</pre></details>"
                      + OUTPUT.format("shown") + "</div>"
                      '<div class="admonition dropdown"><p>a folded hint of seven words</p></div></article>'
                      "<nav>not the article</nav>")
    assert page_words(page) == (2 + 3 + 3 + 4 + 1, 2 + 3)


def test_the_set_up_cell_is_set_aside_and_each_cell_counted_in_lines(tmp_path):
    def cell(source: str, tags=()) -> dict:
        return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": source.splitlines(True)}

    notebook = tmp_path / "chapter.ipynb"
    notebook.write_text(json.dumps({"cells": [
        cell("import os\nimport sys\nsetup()\n", tags=["hide-input"]),
        {"cell_type": "markdown", "metadata": {}, "source": ["# many\n", "lines\n", "here\n"]},
        cell("show_source(plateau)"), cell("a = 1\nb = 2\n\nprint(a + b)\n")]}), encoding="utf-8")
    assert code_cell_lines(notebook) == (1, 4)


def test_the_budget_names_what_is_over_it(tmp_path):
    """A chapter over the budget in words, in its longest cell and in its median cell is
    named in the table with each; one within it is not."""
    html = tmp_path / "_build" / "html"
    for stem, words in (("long", CHAPTER_WORDS + 1), ("short", 10)):
        for folder in (html / "book", tmp_path / "book"):
            folder.mkdir(parents=True, exist_ok=True)
        (html / "book" / f"{stem}.html").write_text(f"<main><p>{' word' * words}</p></main>", encoding="utf-8")
        cells = [CELL_LINES + 1, MEDIAN_CELL_LINES + 1, MEDIAN_CELL_LINES + 1] if stem == "long" else [3]
        (tmp_path / "book" / f"{stem}.ipynb").write_text(json.dumps({"cells": [
            {"cell_type": "code", "metadata": {}, "source": ["x\n"] * lines} for lines in cells]}), encoding="utf-8")
    long, short = (chapter_budget(html, tmp_path, Path("book") / f"{stem}.ipynb") for stem in ("long", "short"))
    assert long.words == CHAPTER_WORDS + 1 and len(long.over_budget()) == 3
    assert short.over_budget() == [] and short.cell_lines == (3,)
    table = budget_table([short, long]).splitlines()
    assert table[1].startswith("long") and f"{CHAPTER_WORDS + 1:,} rendered words" in table[1]
    assert table[-1].startswith("book") and f"{CHAPTER_WORDS + 11:,}" in table[-1]


@pytest.mark.reading_budget
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_code_cell_of_a_chapter_is_short(notebook):
    """At most CELL_LINES lines a code cell and a median of MEDIAN_CELL_LINES, the folded
    set-up cell aside: a chapter calls the library, it does not hold the analysis."""
    lines = code_cell_lines(REPO / notebook)
    assert max(lines, default=0) <= CELL_LINES and statistics.median(lines or [0]) <= MEDIAN_CELL_LINES, \
        f"{notebook}: code cells of {list(lines)} lines"


@pytest.mark.reading_budget
@pytest.mark.parametrize("source", CHAPTERS, ids=lambda path: path.stem)
def test_every_chapter_is_within_its_reading_budget(built_book, source):
    """At most CHAPTER_WORDS rendered words a chapter (prose, code and outputs on `ci`,
    folded toggles not counted); ``python tests/book_pages.py --words _build/html`` prints
    the whole table."""
    budget = chapter_budget(built_book.html, REPO, source)
    assert budget.words <= CHAPTER_WORDS, f"{budget.chapter}: {budget.words:,} rendered words"


@pytest.mark.reading_budget
def test_the_book_is_within_its_budget(built_book):
    """The book's rendered words at most BOOK_WORDS: an afternoon's reading."""
    budgets = [chapter_budget(built_book.html, REPO, source) for source in CHAPTERS]
    total = sum(budget.words for budget in budgets)
    assert total <= BOOK_WORDS, f"{total:,} rendered words in the book (budget {BOOK_WORDS:,}):\n{budget_table(budgets)}"
