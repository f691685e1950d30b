"""How long a reader waits for each chapter: every notebook of the book run on the `ci`
preset, as a reader who opens that one chapter would run it.

    python benchmarks/bench_chapters.py [--busy] [--chapters eed dino ...] [--data DIR]
    python benchmarks/bench_chapters.py --book

Each chapter runs in a fresh kernel (nbclient, the engine of `jupyter nbconvert --execute`
and of the book's build) with a data folder of its own, so it trains whatever live runs it
needs instead of finding those of a chapter before it. `--busy` keeps one other process
spinning on a core for the whole benchmark: the machine a reader shares with one other
job. `--data DIR` uses one data folder for every chapter instead (the book's build, where
chapters share their runs). Prints and writes (to
benchmarks/results/bench_chapters[_busy].json) every chapter's wall time, its slowest cell,
and whether any cell ran into the book's cell time limit (`execute.timeout` in
`_config.yml`).

`--book` times the book's cold build instead, README command (a) from nothing:
`jupyter-book build . -W` into a new folder, with an empty data folder, so every live run
is trained; it writes the build's wall time and each notebook's execution time as the
build reports it (benchmarks/results/bench_book_build.json). `--book --keep DIR` leaves the
built pages in DIR/_build/html, for `python tests/book_pages.py --words DIR/_build/html`.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import yaml
from common import load_average, machine, write_json
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

REPO = Path(__file__).resolve().parent.parent


def chapters() -> list[str]:
    """The book's notebooks, in the order of `_toc.yml`."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]
    return [Path(name).name for name in files if (REPO / f"{name}.ipynb").exists()]


def cell_limit() -> int:
    """The book build's limit on one cell, in seconds."""
    return int(yaml.safe_load((REPO / "_config.yml").read_text())["execute"]["timeout"])


def run_chapter(name: str, data: Path, timeout: int) -> dict:
    """Run ``book/<name>.ipynb`` in a fresh kernel; its wall time and slowest cell."""
    notebook = nbformat.read(REPO / "book" / f"{name}.ipynb", as_version=4)
    cell_times: list[float] = []
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO / "book")}})

    started = {}
    client.on_cell_execute = lambda cell, cell_index: started.__setitem__(cell_index, time.perf_counter())
    client.on_cell_executed = lambda cell, cell_index, execute_reply: cell_times.append(
        time.perf_counter() - started[cell_index])
    os.environ["IB_TUTORIAL_DATA"] = str(data)
    start = time.perf_counter()
    try:
        client.execute()
        outcome = "finished"
    except CellTimeoutError:
        outcome = f"a cell ran past {timeout} s"
    except CellExecutionError as error:  # recorded, so that one broken chapter does not lose the others' times
        outcome = f"error: {str(error).strip().splitlines()[-1][:200]}"
    wall = time.perf_counter() - start
    print(f"{name:24s} {wall:7.1f} s  slowest cell {max(cell_times, default=0):6.1f} s  {outcome}", flush=True)
    return {"chapter": name, "wall_s": round(wall, 1), "slowest_cell_s": round(max(cell_times, default=0.0), 1),
            "outcome": outcome}


def cold_build(keep: str | None = None) -> dict:
    """README command (a) from nothing: the build's wall time, its outcome, and each
    notebook's execution time as the build reports it. The pages go to ``keep`` when given."""
    with tempfile.TemporaryDirectory(prefix="bench-book-") as scratch:
        env = {**os.environ, "IB_TUTORIAL_PRESET": "ci", "IB_TUTORIAL_DATA": str(Path(scratch) / "data")}
        start = time.perf_counter()
        build = subprocess.run(["jupyter-book", "build", ".", "-W", "--path-output", keep or str(Path(scratch) / "book")],
                               cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
    executed = {Path(name).stem: float(seconds) for name, seconds in
                re.findall(r"(\S+\.ipynb): Executed notebook in ([0-9.]+) seconds", build.stdout + build.stderr)}
    outcome = "built" if build.returncode == 0 else f"failed (exit {build.returncode}): {build.stderr.strip()[-300:]}"
    print(f"cold build {wall:7.1f} s ({sum(executed.values()):.1f} s executing {len(executed)} notebooks)  {outcome}")
    return {"wall_s": round(wall, 1), "executing_s": round(sum(executed.values()), 1),
            "notebooks_s": {name: round(seconds, 1) for name, seconds in sorted(executed.items())}, "outcome": outcome}


def spin() -> None:
    """Keep one core busy."""
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", action="store_true", help="keep one other process spinning on a core")
    parser.add_argument("--chapters", nargs="+", default=None, help="chapter names (default: every notebook)")
    parser.add_argument("--data", default=None, help="one data folder for all chapters (default: one each)")
    parser.add_argument("--book", action="store_true", help="time the book's cold build instead")
    parser.add_argument("--keep", default=None, metavar="DIR", help="with --book: build the pages into DIR and keep them")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    os.environ["IB_TUTORIAL_PRESET"] = "ci"
    if args.book:
        write_json(args.out or "benchmarks/results/bench_book_build.json",
                   {"preset": "ci", "cores": os.cpu_count(), "load_average": load_average(), "machine": machine(),
                    "build": cold_build(args.keep)})
        return
    timeout = cell_limit()
    busy = multiprocessing.Process(target=spin, daemon=True) if args.busy else None
    if busy:
        busy.start()
    records = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-chapters-") as scratch:
            for name in args.chapters or chapters():
                data = Path(args.data) if args.data else Path(scratch) / name
                records.append(run_chapter(name, data, timeout))
    finally:
        if busy:
            busy.terminate()
    total = sum(record["wall_s"] for record in records)
    print(f"{'all chapters':24s} {total:7.1f} s")
    out = args.out or f"benchmarks/results/bench_chapters{'_busy' if args.busy else ''}.json"
    write_json(out, {"preset": "ci", "cores": os.cpu_count(), "busy_process": args.busy,
                     "shared_data_folder": args.data is not None, "cell_limit_s": timeout,
                     "load_average": load_average(), "machine": machine(), "chapters": records,
                     "total_s": round(total, 1)})


if __name__ == "__main__":
    main()
