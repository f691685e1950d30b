"""Each sub-package's map (its ``__init__`` docstring) names every module it holds."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ib_tutorial"
SUBPACKAGES = sorted(path.parent for path in PACKAGE.glob("*/__init__.py"))


@pytest.mark.parametrize("folder", SUBPACKAGES, ids=lambda folder: folder.name)
def test_the_package_map_names_every_module(folder):
    docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    modules = sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__")
    missing = [name for name in modules if f"ib_tutorial.{folder.name}.{name}`" not in docstring]
    assert not missing, f"ib_tutorial/{folder.name}/__init__.py does not name: {', '.join(missing)}"
