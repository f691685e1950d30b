"""One address for the repository: `repository.url` in _config.yml (the book's launch and
repository buttons read it). A chapter opened in Colab must install the package before it
can import anything, with no _config.yml beside it, so its install cell spells the address
out; these tests hold every such copy, and the README's links, to the configured one."""
import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def repository_url() -> str:
    return yaml.safe_load((REPO / "_config.yml").read_text())["repository"]["url"]


def pages_url(repository: str) -> str:
    """Where GitHub Pages publishes a github.com repository: https://<owner>.github.io/<name>/."""
    owner, name = repository.removeprefix("https://github.com/").split("/")
    return f"https://{owner}.github.io/{name}/"


def test_every_chapter_installs_the_configured_repository_in_colab():
    notebooks = sorted((REPO / "book").glob("*.ipynb"))
    assert notebooks
    for notebook in notebooks:
        sources = ["".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
                   if cell["cell_type"] == "code"]
        install = [source for source in sources if '"google.colab" in sys.modules' in source]
        assert len(install) == 1, f"{notebook.name}: {len(install)} Colab install cells"
        # The cell clones the repository (so that its committed results come too) and installs from the clone.
        assert re.findall(r'"clone", "-q", "--depth", "1", "([^"]+)"', install[0]) == [repository_url()], notebook.name
        # It installs the tested versions (constraints.txt; PyTorch stays Colab's) and lets Colab draw ipywidgets 8.
        assert '"install", "-q", "-c", "ib-tutorial/constraints.txt", "-e", "ib-tutorial"' in install[0], notebook.name
        assert "output.enable_custom_widget_manager()" in install[0], notebook.name
    assert len({install_block(notebook) for notebook in notebooks}) == 1, "the chapters' Colab blocks differ"


def install_block(notebook: Path) -> str:
    """The `if "google.colab" in sys.modules:` block of a chapter's set-up cell."""
    cell = next("".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
                if cell["cell_type"] == "code" and '"google.colab" in sys.modules' in "".join(cell["source"]))
    block = cell[cell.index('if "google.colab" in sys.modules'):]
    return block[:re.search(r"\n(?=\S)", block).start()].rstrip()


def test_the_colab_constraints_are_the_tested_pins_less_pytorch():
    """constraints.txt: every pin of requirements.txt but torch and torchvision (Colab brings
    its own, built for its CUDA), and nothing else."""
    def pins(path: Path) -> dict[str, str]:
        return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", path.read_text(), re.M))

    constraints = REPO / "constraints.txt"
    assert pins(constraints) == {name: version for name, version in pins(REPO / "requirements.txt").items()
                                 if name not in ("torch", "torchvision")}
    lines = [line for line in constraints.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == len(pins(constraints)), lines


def test_the_readme_links_the_configured_repository_and_its_book():
    readme = (REPO / "README.md").read_text()
    assert repository_url() in readme and pages_url(repository_url()) in readme


def test_every_chapter_folds_its_set_up_cell_in_the_built_pages():
    """A built chapter opens with its ideas: the set-up cell (the Colab install and the imports)
    is folded behind a toggle (Jupyter Book's ``hide-input`` tag), its output still shown."""
    for notebook in sorted((REPO / "book").glob("*.ipynb")):
        cell = next(cell for cell in json.loads(notebook.read_text())["cells"]
                    if cell["cell_type"] == "code" and '"google.colab" in sys.modules' in "".join(cell["source"]))
        assert "hide-input" in cell["metadata"].get("tags", []), f"{notebook.name}: set-up cell not folded"
