"""What a reader of the built book must never meet, found in its HTML pages.

:func:`find_defects` scans every ``*.html`` under a Sphinx ``_build/html`` folder for:

- ``traceback``: an error output (myst-nb's ``output traceback``, or ``output error``),
  or ``Traceback (most recent call last)`` in a cell's output;
- ``stderr``: a stderr block (``output stderr``);
- ``home path``: the builder's home folder anywhere in the page source (``/root/``,
  ``/home/<user>/``, ``/Users/``, ``C:\\Users``);
- ``markdown table``: a table printed as Markdown text instead of rendered
  (``| a | b |`` over ``| --- | --- |``) in a cell's output;
- ``uncaptioned figure``: an image in a cell's output with neither a ``<figcaption>`` nor
  a caption saved in the PNG by :func:`ib_tutorial.book.plots.add_caption` (the book draws its
  captions into the image, where HTML cannot see them);
- ``unfinished progress bar``: tqdm text short of its total (``45%|`` or ``2000/2001 [``)
  in a cell's output, or a progress widget whose saved state is short of its maximum or
  marked failed;
- ``network script``: a ``<script src>`` from another host (a CDN's MathJax, say), which an
  offline reader's browser cannot load.

:func:`rendered_math` and :func:`rendered_widgets` open a page in headless Chromium with the
network shut off and count the formulas MathJax typeset and the widgets the widget manager drew.

The reading budget: :func:`chapter_budget` reads one chapter as a reader meets it, its
rendered words (prose, code and outputs, what sits in a folded toggle not counted) from the
built page, and its code cells' lengths from the notebook (the folded set-up cell aside).

``python tests/book_pages.py _build/html`` prints the defects and exits 1 if there are any;
``python tests/book_pages.py --words _build/html [REPO]`` prints each chapter's reading budget
(the code cells read from ``REPO/book``, by default this repository's) and exits 1 if a
chapter or the book is over it.
"""
from __future__ import annotations

import html
import json
import re
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from bs4 import BeautifulSoup, Tag
from PIL import Image

from ib_tutorial.book.plots import CAPTION_KEY

EXCERPT_CHARS = 120
TRACEBACK = "Traceback (most recent call last)"
# A home folder starts a path: not a segment inside a URL such as https://host/root/.
HOME_PATH = re.compile(r"(?<![\w.-])(?:/root/|/home/[^/\s\"'<>]+/|/Users/|[A-Za-z]:(?:\\+|/)Users\b)")
# tqdm's bar text: "desc:  45%|####5     | 45/100 [00:01<00:01, 45.0it/s]". Its percentage
# is rounded (2000/2001 shows 100%), so the count is checked as well.
TQDM_PERCENT = re.compile(r"(\d{1,3})%\|")
TQDM_COUNT = re.compile(r"(\d+)/(\d+)\s*\[[\d:]+<")
PROGRESS_MODELS = ("FloatProgressModel", "IntProgressModel")


@dataclass(frozen=True)
class Defect:
    page: str  # relative to the html folder
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.page}: {self.kind}: {self.excerpt}"


def find_defects(html_folder: str | Path) -> list[Defect]:
    """Every defect of every HTML page under ``html_folder``, page by page."""
    html_folder = Path(html_folder)
    return [
        Defect(page.relative_to(html_folder).as_posix(), kind, excerpt)
        for page in sorted(html_folder.rglob("*.html"))
        for kind, excerpt in page_defects(page)
    ]


def page_defects(page: Path) -> list[tuple[str, str]]:
    """``(kind, excerpt)`` for each defect of one page."""
    source = page.read_text(encoding="utf-8")
    soup = BeautifulSoup(source, "html.parser")
    outputs = soup.select("div.cell_output")
    return [
        *tracebacks(outputs),
        *stderr_blocks(outputs),
        *home_paths(source),
        *markdown_tables(outputs),
        *uncaptioned_figures(outputs, page.parent),
        *unfinished_progress_bars(outputs, soup),
        *network_scripts(soup),
    ]


def network_scripts(soup: BeautifulSoup) -> Iterator[tuple[str, str]]:
    for script in soup.find_all("script", src=True):
        if re.match(r"(https?:)?//", script["src"]):
            yield "network script", script["src"]


CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def offline_dom(page: Path, seconds: float = 15, window_width: int = 1280) -> str:
    """The DOM of ``page`` after its scripts ran in headless Chromium with no network
    (every host resolves nowhere), in a window ``window_width`` px wide. Raises
    ``FileNotFoundError`` without a Chromium."""
    import shutil
    import subprocess
    import tempfile

    browser = next((found for name in CHROMIUM if (found := shutil.which(name))), None)
    if browser is None:
        raise FileNotFoundError("no Chromium on this machine (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}",
             f"--window-size={window_width},1000", f"--virtual-time-budget={int(seconds * 1000)}", "--dump-dom",
             page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120).stdout


def rendered_math(page: Path) -> tuple[int, int]:
    """``(formulas in the page's source, MathJax output elements)`` of ``page`` offline."""
    formulas = len(BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select(".math"))
    return formulas, offline_dom(page).count("<mjx-container")


TABLE_WIDTHS = """<script>window.addEventListener("load", () => {
  const article = document.querySelector(".bd-article"), tables = [...article.querySelectorAll("table")];
  document.body.dataset.tables = tables.length;
  document.body.dataset.wideTables = tables.filter(t => t.scrollWidth > article.clientWidth + 1).length;
});</script>"""


def wide_tables(page: Path) -> tuple[int, int]:
    """``(tables in the page's text, tables wider than the text)`` of ``page`` laid out
    offline in :func:`offline_dom`'s window: a wider table makes its reader scroll sideways
    to its last columns."""
    probe = page.with_name(f".{page.stem}-table-widths.html")  # beside the page: same styles
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", TABLE_WIDTHS + "</body>"), encoding="utf-8")
    try:
        body = BeautifulSoup(offline_dom(probe), "html.parser").body
    finally:
        probe.unlink()
    return int(body["data-tables"]), int(body["data-wide-tables"])


def rendered_widgets(page: Path) -> tuple[int, int]:
    """``(widget views saved in the page, views the widget manager drew without error)`` of
    ``page`` offline. The manager draws each saved view (a ``widget-view+json`` script) into
    a ``widget-subarea`` just before it; a view it could not make shows an error widget."""
    view = "application/vnd.jupyter.widget-view+json"
    saved = len(BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find_all("script", type=view))
    dom = BeautifulSoup(offline_dom(page), "html.parser")
    drawn = 0
    for script in dom.find_all("script", type=view):
        area = script.find_previous_sibling()
        if (area is not None and "widget-subarea" in area.get("class", [])
                and area.select_one(".jupyter-widgets") and not area.select_one(".jupyter-widgets-error-widget")):
            drawn += 1
    return saved, drawn


def excerpt(text: str, start: int = 0) -> str:
    """``EXCERPT_CHARS`` of ``text`` from ``start``, on one line."""
    return " ".join(text[start:start + EXCERPT_CHARS].split())


def tracebacks(outputs: list[Tag]) -> Iterator[tuple[str, str]]:
    """One per output that holds a traceback; the excerpt is its last line, the error itself."""
    for output in outputs:
        block = output.select_one(".output.traceback, .output.error")
        text = output.get_text()
        if block is not None or TRACEBACK in text:
            lines = (block or output).get_text().splitlines()
            yield "traceback", excerpt(next(line for line in reversed(lines) if line.strip()))


def stderr_blocks(outputs: list[Tag]) -> Iterator[tuple[str, str]]:
    for output in outputs:
        for block in output.select(".output.stderr"):
            yield "stderr", excerpt(block.get_text())


def home_paths(source: str) -> Iterator[tuple[str, str]]:
    text = html.unescape(source)
    for match in HOME_PATH.finditer(text):
        yield "home path", excerpt(text, max(0, match.start() - 40))


def is_table_rule(line: str) -> bool:
    """A Markdown table's header rule: ``| --- | :-: |``, only pipes, dashes and colons."""
    return "|" in line and "---" in line and not line.strip(" \t|-:")


def markdown_tables(outputs: list[Tag]) -> Iterator[tuple[str, str]]:
    for output in outputs:
        lines = output.get_text().splitlines()
        for header, rule in zip(lines, lines[1:]):
            if "|" in header and header.strip(" \t|") and is_table_rule(rule):
                yield "markdown table", excerpt(f"{header} {rule}")


def png_caption(path: Path) -> str:
    """The caption :func:`ib_tutorial.book.plots.add_caption` saved in the image, or ``""``."""
    try:
        with Image.open(path) as image:
            return getattr(image, "text", {}).get(CAPTION_KEY, "").strip()
    except OSError:  # missing, or not an image PIL reads: no caption to be found
        return ""


def uncaptioned_figures(outputs: list[Tag], page_folder: Path) -> Iterator[tuple[str, str]]:
    for output in outputs:
        for image in output.find_all("img"):
            figure = image.find_parent("figure")
            caption = figure.find("figcaption") if figure is not None else None
            if caption is not None and caption.get_text(strip=True):
                continue
            if not png_caption(page_folder / unquote(image.get("src", ""))):
                yield "uncaptioned figure", image.get("src", "")


def unfinished_progress_bars(outputs: list[Tag], soup: BeautifulSoup) -> Iterator[tuple[str, str]]:
    for output in outputs:
        for line in re.split(r"[\r\n]", output.get_text()):
            short_percent = any(int(p) < 100 for p in TQDM_PERCENT.findall(line))
            short_count = any(int(n) < int(total) for n, total in TQDM_COUNT.findall(line))
            if short_percent or short_count:
                yield "unfinished progress bar", excerpt(line)
    for script in soup.find_all("script", type="application/vnd.jupyter.widget-state+json"):
        yield from unfinished_widgets(json.loads(script.string)["state"])


def unfinished_widgets(models: dict) -> Iterator[tuple[str, str]]:
    """Progress widgets (tqdm.notebook's) whose saved state is short of its maximum, or
    that tqdm marked ``danger`` (closed before the end)."""
    for model_id, model in models.items():
        if model["model_name"] not in PROGRESS_MODELS:
            continue
        state = model["state"]
        if state.get("bar_style") == "danger" or state.get("value", 0) < state.get("max", 100):
            yield "unfinished progress bar", excerpt(
                f"widget at {state.get('value')} of {state.get('max')}, bar_style {state.get('bar_style')!r}: "
                + bar_text(models, model_id))


def bar_text(models: dict, progress_id: str) -> str:
    """What tqdm writes beside a progress widget: the other widgets of its box."""
    reference = f"IPY_MODEL_{progress_id}"
    for box in models.values():
        children = box["state"].get("children", [])
        if reference in children:
            texts = [models.get(child.removeprefix("IPY_MODEL_"), {}).get("state", {}).get("value", "")
                     for child in children if child != reference]
            return html.unescape(" ".join(map(str, texts)))
    return ""


#: Rendered words a chapter may hold (about twenty minutes of reading), and the whole book.
CHAPTER_WORDS = 6_000
BOOK_WORDS = 45_000
#: Lines a code cell may hold, and the median a chapter's cells may reach.
CELL_LINES = 20
MEDIAN_CELL_LINES = 8
#: What a reader opens on demand: a folded cell input or output (myst-nb's ``<details>``),
#: a dropdown admonition, a toggled block.
FOLDED = "details, .dropdown, .toggle-hidden"
WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class ChapterBudget:
    """One chapter as a reader meets it.

    Attributes:
        chapter: the page's path under ``book/``, without its suffix (``"claims"``).
        words: rendered words outside folded toggles: prose, code and outputs.
        prose_words: the part of ``words`` outside code cells (their inputs and outputs).
        cell_lines: the lines of each code cell of the notebook, in order, the folded set-up
            cell aside; empty for a Markdown page.
    """

    chapter: str
    words: int
    prose_words: int
    cell_lines: tuple[int, ...]

    @property
    def longest_cell(self) -> int:
        return max(self.cell_lines, default=0)

    @property
    def median_cell(self) -> float:
        return statistics.median(self.cell_lines) if self.cell_lines else 0

    def over_budget(self) -> list[str]:
        """What of this chapter is over the budget, in words; empty when nothing is."""
        over = [f"{self.words:,} rendered words (budget {CHAPTER_WORDS:,})"] if self.words > CHAPTER_WORDS else []
        over += [f"a code cell of {self.longest_cell} lines (at most {CELL_LINES})"] if self.longest_cell > CELL_LINES else []
        over += ([f"median code cell {self.median_cell:g} lines (at most {MEDIAN_CELL_LINES})"]
                 if self.median_cell > MEDIAN_CELL_LINES else [])
        return over


def page_words(page: Path) -> tuple[int, int]:
    """``(rendered words, prose words)`` of a built page's article, what sits in a folded
    toggle (:data:`FOLDED`) not counted; prose is what lies outside code cells."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    article = soup.select_one("article.bd-article") or soup.select_one("main") or soup
    for folded in article.select(FOLDED):
        folded.decompose()
    for hidden in article.select("script, style, .headerlink"):
        hidden.decompose()
    words = len(WORD.findall(article.get_text(" ")))
    for cell in article.select("div.cell"):
        cell.decompose()
    return words, len(WORD.findall(article.get_text(" ")))


def is_setup_cell(cell: dict) -> bool:
    """The chapter's set-up cell: its first code cell, folded (``hide-input``)."""
    return "hide-input" in cell.get("metadata", {}).get("tags", [])


def code_cell_lines(notebook: Path) -> tuple[int, ...]:
    """The number of lines of each code cell of ``notebook``, in order, the folded set-up
    cell (:func:`is_setup_cell`, the first code cell) aside."""
    cells = [cell for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == "code"]
    if cells and is_setup_cell(cells[0]):
        cells = cells[1:]
    return tuple(len("".join(cell["source"]).strip("\n").splitlines()) for cell in cells)


def chapter_budget(html_folder: Path, repo: Path, source: Path) -> ChapterBudget:
    """The budget of the chapter whose source is ``source`` (``book/claims.ipynb``, relative
    to ``repo``), read from its page under ``html_folder`` (a Sphinx ``_build/html``) and
    from the notebook."""
    words, prose = page_words(html_folder / source.with_suffix(".html"))
    lines = code_cell_lines(repo / source) if source.suffix == ".ipynb" else ()
    return ChapterBudget(source.with_suffix("").relative_to("book").as_posix(), words, prose, lines)


def chapter_sources(repo: Path) -> list[Path]:
    """Every chapter of the book, relative to ``repo``: the notebooks and Markdown pages
    directly under ``book/`` (the API reference's pages are generated, not read)."""
    return sorted(path.relative_to(repo) for path in (repo / "book").glob("*")
                  if path.suffix in (".ipynb", ".md"))


def budget_table(budgets: list[ChapterBudget]) -> str:
    """One line per chapter (longest first) and the book's total, as plain text."""
    rows = [f"{'chapter':<24}{'words':>8}{'prose':>8}{'cells':>7}{'longest':>9}{'median':>8}  over budget"]
    for budget in sorted(budgets, key=lambda budget: -budget.words):
        rows.append(f"{budget.chapter:<24}{budget.words:>8,}{budget.prose_words:>8,}{len(budget.cell_lines):>7}"
                    f"{budget.longest_cell:>9}{budget.median_cell:>8g}  {'; '.join(budget.over_budget())}")
    total = sum(budget.words for budget in budgets)
    rows.append(f"{'book':<24}{total:>8,}{sum(b.prose_words for b in budgets):>8,}"
                f"{sum(len(b.cell_lines) for b in budgets):>7}"
                + ("" if total <= BOOK_WORDS else f"{'':>17}  {total:,} words (budget {BOOK_WORDS:,})"))
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--words"]:  # --words HTML_FOLDER [REPOSITORY whose book/ was built; default this one]
        html_folder = Path(argv[1])
        repo = Path(argv[2]) if len(argv) > 2 else Path(__file__).resolve().parents[1]
        budgets = [chapter_budget(html_folder, repo, source) for source in chapter_sources(repo)
                   if (html_folder / source.with_suffix(".html")).is_file()]
        print(budget_table(budgets))
        over = any(budget.over_budget() for budget in budgets) or sum(b.words for b in budgets) > BOOK_WORDS
        return 1 if over else 0
    found = find_defects(argv[0])
    print("\n".join(map(str, found)) or "no defects")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
