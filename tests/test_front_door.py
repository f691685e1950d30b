"""What a new reader meets first: the README's set-up installs what the README then runs,
the chapters find the committed results wherever they run (or say truthfully that they
cannot), the licence, and the published book's workflow and Binder configuration."""
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
import yaml

from ib_tutorial.models import PUBLISHED_VIT_SMALL

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # this environment's executables, as the README's set-up made them


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_readme_local_notebook_command_starts_jupyterlab(tmp_path):
    """README, "Running the notebooks": `jupyter lab book/` after the set-up. The server must
    start and answer on its port (no browser, no token, a throw-away config folder)."""
    readme = (REPO / "README.md").read_text()
    assert "`jupyter lab book/`" in readme
    jupyter = BIN / "jupyter"
    assert jupyter.exists(), "the set-up installed no `jupyter` command"
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "run")}
    server = subprocess.Popen(
        [str(jupyter), "lab", "book/", "--no-browser", f"--port={port}", "--ServerApp.token=", "--ServerApp.password=",
         "--ServerApp.ip=127.0.0.1", *(["--allow-root"] if os.geteuid() == 0 else [])], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, status = time.monotonic() + 90, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=5) as response:
                    status = response.status
                    page = response.read().decode()
                break
            except OSError:
                time.sleep(1)
        assert server.poll() is None, f"`jupyter lab` exited:\n{server.stdout.read()[-3000:]}"
        assert status == 200 and "JupyterLab" in page
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_python(code: str, pythonpath: Path) -> str:
    """``code`` in a fresh interpreter that imports ``ib_tutorial`` from ``pythonpath`` only."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    result = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(pythonpath)!r})\n{code}"],
                            env=env, capture_output=True, text=True, cwd=pythonpath.parent)
    assert result.returncode == 0, result.stderr
    return result.stdout


CHAPTER_VIEW = """
import ib_tutorial
from ib_tutorial.book.bundles import stored_bundles
from ib_tutorial.book.dataset_runs import FAMILIES, dataset_runs
from ib_tutorial.book.dataset_chapters import missing_runs_markdown
print(ib_tutorial.__file__)
print(stored_bundles())
print(missing_runs_markdown(FAMILIES["tiny-imagenet"], dataset_runs("tiny-imagenet")))
"""


def test_an_installed_copy_says_it_has_no_committed_results(tmp_path):
    """A copy installed into site-packages has no results/ beside it: the Results chapters
    must say so and how to get them, not that no run was ever committed."""
    site = tmp_path / "site-packages"
    shutil.copytree(REPO / "ib_tutorial", site / "ib_tutorial", ignore=shutil.ignore_patterns("__pycache__"))
    out = run_python(CHAPTER_VIEW, site)
    assert str(site) in out and "[]" in out
    assert "not a checkout of the repository" in out and "git clone" in out
    assert "is committed under" not in out


@pytest.mark.slow
def test_the_colab_set_up_finds_the_committed_results(tmp_path):
    """What the chapters' Colab cell does: clone the repository, import the package from the
    clone. The clone holds results/, so the chapters show the committed runs."""
    clone = tmp_path / "ib-tutorial"
    subprocess.run(["git", "clone", "-q", "--depth", "1", REPO.as_uri(), str(clone)], check=True)
    committed = sorted(p.parent.name for p in (clone / "results").glob("*/summary.json"))
    assert committed, "the repository commits no bundle"
    assert (clone / "constraints.txt").is_file()  # the pins the cell installs with
    out = run_python(CHAPTER_VIEW, clone)
    assert str(clone / "ib_tutorial") in out and str(committed) in out
    assert "not a checkout" not in out


def test_the_run_lock_works_where_fcntl_does_not_exist(tmp_path):
    """On Windows there is no fcntl: the command line must still start, and the run lock
    (msvcrt's byte lock there, emulated here on top of flock) must still refuse a second holder."""
    code = f"""
import fcntl as real, subprocess, sys, types
import torch  # what imports subprocess-like Windows checks runs before the stand-in below exists
msvcrt = types.ModuleType("msvcrt")
msvcrt.LK_NBLCK, msvcrt.LK_UNLCK = 2, 0
def locking(fd, mode, nbytes):
    try:
        real.flock(fd, (real.LOCK_EX | real.LOCK_NB) if mode == msvcrt.LK_NBLCK else real.LOCK_UN)
    except BlockingIOError:
        raise PermissionError(13, "locked") from None
msvcrt.locking = locking
sys.modules["msvcrt"], sys.modules["fcntl"] = msvcrt, None
import ib_tutorial.cli
from ib_tutorial.training import runs
from ib_tutorial.training.runs import RunDirectory, RunLockedError
assert runs.fcntl is None
with RunDirectory({str(tmp_path / 'run')!r}).lock():
    other = subprocess.run([sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a+'); "
                            "fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)", {str(tmp_path / 'run' / 'run.lock')!r}])
    assert other.returncode != 0, "a second process took the lock"
    try:
        with RunDirectory({str(tmp_path / 'run')!r}).lock():
            pass
    except RunLockedError as error:
        print("refused:", error)
with RunDirectory({str(tmp_path / 'run')!r}).lock():
    print("taken again")
"""
    out = run_python(code, REPO)
    assert "refused:" in out and "pid" in out and "taken again" in out


def test_licence_and_its_spdx_form():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    licence = (REPO / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "their own terms" in licence
    readme = (REPO / "README.md").read_text()
    assert "MIT-licensed (`LICENSE`)" in readme and "keep their own\nterms" in readme
    # Each data set's source and licence: the table of the book's appendix, which the README points to.
    assert "| licence |" in (REPO / "book" / "appendix_running.md").read_text()
    assert "book/appendix_running.md" in readme


README_BUILD = "IB_TUTORIAL_PRESET=ci jupyter-book build . --warningiserror --keep-going"
README_TESTS = "IB_TUTORIAL_PRESET=ci pytest -n 2"


def shell_blocks(markdown: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", markdown, re.S)


def test_the_readme_is_short_and_its_two_commands_are_what_ci_and_the_workflow_run():
    """The README a newcomer reads to the end: the CPU install, command (a) and command (b),
    exactly as .ci/run and the workflow run them; the rest lives in the appendix and the
    results' and benchmarks' READMEs, which exist and are in the book's table of contents."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    install = "python3.11 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt"
    blocks = shell_blocks(readme)
    assert f"{install} && {README_BUILD}\n" in blocks and f"{install} && {README_TESTS}\n" in blocks
    cpu = "pip install torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cpu"
    assert any(cpu in block and block.index(cpu) < block.index("pip install -r requirements.txt") for block in blocks)
    pinned = pins(REPO / "requirements.txt")
    assert f"torch=={pinned['torch']} torchvision=={pinned['torchvision']}" in cpu
    ci = (REPO / ".ci" / "run").read_text()
    assert "pytest -n 2" in ci and "export IB_TUTORIAL_PRESET=ci" in ci
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert any(run.endswith(f"&& {README_TESTS}") and cpu in run for run in runs)
    assert any(run.endswith(f"&& {README_BUILD}") for run in runs)
    toc = (REPO / "_toc.yml").read_text()
    assert "file: book/appendix_running" in toc
    for path in ("results/README.md", "benchmarks/README.md", "book/appendix_running.md", "CHANGELOG.md",
                 "CITATION.cff", "constraints.txt", "binder/postBuild"):
        assert (REPO / path).is_file() and f"`{path}`" in readme, path


def test_every_bundle_and_benchmark_has_its_entry():
    """results/README.md names every committed bundle, with its command; benchmarks/README.md
    every benchmark script and every stored result."""
    results = (REPO / "results" / "README.md").read_text()
    for bundle in sorted(p.name for p in (REPO / "results").iterdir() if p.is_dir()):
        assert f"## `{bundle}`" in results, bundle
    assert len(shell_blocks(results)) >= 5
    benchmarks = (REPO / "benchmarks" / "README.md").read_text()
    for script in sorted((REPO / "benchmarks").glob("bench_*.py")):
        assert f"## `{script.name}`" in benchmarks, script.name
    for stored in sorted((REPO / "benchmarks" / "results").glob("*.json")):
        assert f"benchmarks/results/{stored.name}" in benchmarks, stored.name


def test_one_version_in_the_package_and_its_citation():
    """pyproject.toml holds the version; the package reads it from its installed metadata,
    and CITATION.cff (which cites the paper it reproduces) states the same."""
    import ib_tutorial

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert ib_tutorial.__version__ == version == citation["version"]
    assert f'"{version}"' not in (REPO / "ib_tutorial" / "__init__.py").read_text()  # no second copy
    assert citation["repository-code"] == yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]
    paper = citation["references"][0]
    assert paper["authors"][0]["family-names"] == "Awadhiya" and paper["url"] == "https://arxiv.org/abs/2512.07331"
    assert f"## {version}" in (REPO / "CHANGELOG.md").read_text()


def test_the_command_line_states_its_version_and_runs_the_subset_command(capsys):
    import ib_tutorial
    from ib_tutorial.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out == f"ib-tutorial {ib_tutorial.__version__}\n"
    main(["subset", "list"])
    assert "tin20: tiny-imagenet:subset=tin20" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["subset", "--help"])
    assert exited.value.code == 0 and "usage: ib-tutorial subset" in capsys.readouterr().out


def pins(path: Path) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s+]+)", path.read_text(), re.M))


def test_the_workflow_installs_cpu_wheels_of_the_pinned_torch():
    """GitHub's runners have no GPU: every job installs the CPU wheels of the versions that
    requirements.txt pins, before requirements.txt (whose pins they then satisfy)."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    pinned = pins(REPO / "requirements.txt")
    installs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"]
                if "pip install -r requirements.txt" in step.get("run", "")]
    assert "jupyter-book build" not in installs[0]  # the online steps come between install and build
    assert len(installs) == 2
    for run in installs:
        cpu = re.search(r"pip install torch==(\S+) torchvision==(\S+) --index-url https://download.pytorch.org/whl/cpu", run)
        assert cpu and cpu.groups() == (pinned["torch"], pinned["torchvision"]), run
        assert run.index("whl/cpu") < run.index("pip install -r requirements.txt")


def test_the_workflows_tests_job_installs_chromium_and_fails_without_one(tmp_path):
    """The book's page checks skip on a machine without Chromium: the tests job installs it
    with apt before README command (b), and its check, which reads the names the tests look
    for, fails when none of them is on PATH."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    runs = [step.get("run", "") for step in workflow["jobs"]["tests"]["steps"]]
    chromium = next(i for i, run in enumerate(runs) if "apt-get install" in run and "chromium" in run)
    assert chromium < next(i for i, run in enumerate(runs) if run.endswith("pytest -n 2"))
    check = next(line.strip() for line in runs[chromium].splitlines() if line.strip().startswith("python3 -c "))
    code = shlex.split(check)[2]
    (tmp_path / "bin").mkdir()

    def passes(path: str) -> bool:
        return subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PATH": path},
                              capture_output=True).returncode == 0

    assert not passes(str(tmp_path / "bin"))
    browser = tmp_path / "bin" / "chromium"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    assert passes(str(tmp_path / "bin"))


def test_the_workflows_online_steps_call_the_packages_own_commands():
    """The downloads and profiles of the online build are `ib-tutorial` commands this
    package's command line accepts (its own download code, checksums included), gated by
    IB_TUTORIAL_ONLINE, and the chapter reads where they write. A command that fails warns
    and the build goes on (the chapter says what is missing)."""
    from ib_tutorial.cli import build_parser

    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    online = [step for step in workflow["jobs"]["build"]["steps"] if step.get("if", "").startswith("env.IB_TUTORIAL_ONLINE == '1'")]
    lines = [line.strip() for step in online for line in step.get("run", "").splitlines() if line.strip().startswith("ib-tutorial ")]
    assert len(lines) == 2 and all(' || echo "::warning::' in line for line in lines), lines
    commands = [shlex.split(line.split(" || ")[0].replace('"$dataset"', "cifar100")) for line in lines]
    for command in commands:
        args = build_parser().parse_args(command[1:])  # exits (fails the test) on an unknown command or flag
        assert args.command == "profile-pretrained" and args.download and args.out is None  # the chapter's folder
    profiled = {model for command in commands for model in build_parser().parse_args(command[1:]).models}
    assert profiled == set(PUBLISHED_VIT_SMALL)
    assert "IB_TUTORIAL_ONLINE" in workflow["jobs"]["build"]["env"]


@pytest.mark.slow
def test_the_online_cache_holds_archives_and_weights_keyed_by_their_checksums(tmp_path):
    """actions/cache on its Node 24 major; what it restores and saves are the archives where
    the loaders look for them and the hub's folders of the published weights, nothing else
    (no extracted copy, no profiles), under a key that changes with their checksums."""
    workflow = (REPO / ".github" / "workflows" / "book.yml").read_text()
    uses = re.findall(r"uses: (actions/cache\S*)@(\S+)", workflow)
    assert sorted(uses) == [("actions/cache/restore", "v5"), ("actions/cache/save", "v5")]
    script = [sys.executable, str(REPO / ".github" / "online_cache.py")]
    env = {**os.environ, "IB_TUTORIAL_DATA": str(tmp_path / "data"), "HF_HUB_CACHE": str(tmp_path / "hub")}
    plan = subprocess.run([*script, "plan"], env=env, capture_output=True, text=True, check=True).stdout
    paths = plan.split("paths<<END\n")[1].split("\nEND")[0].splitlines()
    assert sorted(Path(path).name for path in paths if path.startswith(str(tmp_path / "data"))) == sorted(
        ["cifar-100-python.tar.gz", "tiny-imagenet-200.zip", "UCMerced_LandUse.zip", "dtd-r1.0.1.tar.gz"])
    assert [path for path in paths if not path.startswith(str(tmp_path / "data"))] == [
        str(tmp_path / "hub" / f"models--timm--{model}") for model in PUBLISHED_VIT_SMALL]
    base = re.search(r"^base=(online-\w+)$", plan, re.M).group(1)

    def key() -> str:
        return subprocess.run([*script, "present"], env=env, capture_output=True, text=True, check=True).stdout.strip()

    empty = key()
    assert empty.startswith(f"key={base}-")
    (tmp_path / "data" / "tiny-imagenet-200").mkdir(parents=True)  # an extracted copy: not part of the key
    assert key() == empty
    (tmp_path / "data" / "tiny-imagenet-200.zip").write_bytes(b"")
    with_archive = key()
    assert with_archive != empty
    blobs = tmp_path / "hub" / f"models--timm--{PUBLISHED_VIT_SMALL[0]}" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "0123abcd").write_bytes(b"")
    assert key() not in (empty, with_archive)


def requirement_names(text: str) -> set[str]:
    return {re.split(r"[=<>!~\[ ]", line.strip())[0].lower() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "-"))}


def test_binder_installs_cpu_wheels_and_the_project_pins():
    """Binder's requirements.txt is self-contained (no -r, no -e: repo2docker installs such a
    file before it copies the repository, so the layer survives commits that leave it alone):
    the CPU wheels of the pinned PyTorch and, at requirements.txt's pins, every runtime
    dependency of the package, and no book or test tool. postBuild installs the package
    itself, without its dependencies."""
    binder = (REPO / "binder" / "requirements.txt").read_text()
    pinned = pins(REPO / "requirements.txt")
    assert f"torch=={pinned['torch']}+cpu" in binder and f"torchvision=={pinned['torchvision']}+cpu" in binder
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in binder
    lines = [line.strip() for line in binder.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert not [line for line in lines if line.startswith(("-r", "-e", "-c", ".")) or "../" in line], lines
    binder_pins = pins(REPO / "binder" / "requirements.txt")
    assert {name: version for name, version in binder_pins.items() if name not in ("torch", "torchvision")} == {
        name: pinned[name] for name in binder_pins if name not in ("torch", "torchvision")}
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert requirement_names("\n".join(project["dependencies"])) == set(binder_pins)
    tools = requirement_names("\n".join(sum(project["optional-dependencies"].values(), [])))
    assert not tools & set(binder_pins), tools & set(binder_pins)
    post_build = REPO / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK) and "pip install --no-deps -e ." in post_build.read_text()
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
