"""The package's imports run one way, down its layers, and close no circle.

The layers, from the top: the entry points, ``book`` (the machinery that turns runs into
chapters: records, bundles, claims, verdicts, rendering), ``training`` and ``ib`` (side by
side: neither imports the other), ``presets``, ``data``, ``measure``, and the shared ground. A module may
import its own part and any part below it, never one above it or beside it. Every import
counts, those inside functions and under ``TYPE_CHECKING`` too: an import deferred to
run time is still an arrow up.
"""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ib_tutorial"

#: The layers, top first; each is a tuple of parts side by side. A part is a sub-package or a
#: top-level module; ``entry`` and ``ground`` name groups of top-level modules (GROUPS).
LAYERS = (
    ("entry",),
    ("book",),
    ("training", "ib"),
    ("presets",),
    ("data",),
    ("measure",),
    ("ground",),
)
GROUPS = {
    "entry": ("__init__", "__main__", "cli", "notebook"),
    "ground": ("models", "files", "seeding", "machine", "schema", "command_line", "compact"),
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path, package: str = PACKAGE) -> dict[str, set[str]]:
    """Each module of ``package`` under ``root`` -> the package's modules it imports."""
    files = {module_name(path, root): path for path in (root / package).rglob("*.py")}
    graph = {}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here.split(".")[:len(here.split(".")) - node.level + 1]) if node.level else ""
                source = ".".join(filter(None, [base, node.module]))
                # `from x import y` takes module x.y when there is one, else a name from x.
                targets.update(f"{source}.{alias.name}" if f"{source}.{alias.name}" in files else source
                               for alias in node.names)
        graph[name] = {target for target in targets if target in files and target != name}
    return graph


def part_of(module: str) -> str:
    """The part a module belongs to: its sub-package, its top-level module, or its group."""
    first = (module.split(".") + ["__init__"])[1]
    return next((group for group, members in GROUPS.items() if first in members), first)


def layer_of(part: str) -> int:
    found = [index for index, layer in enumerate(LAYERS) if part in layer]
    if not found:
        raise AssertionError(f"{part} is in no layer: add it to LAYERS (or to a group)")
    return found[0]


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a part above the importer's, or beside it in the same layer."""
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if part_of(module) != part_of(target) and layer_of(part_of(target)) <= layer_of(part_of(module)))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_import_runs_down_the_layers():
    assert wrong_way(imports(REPO)) == []


def test_no_modules_import_each_other_in_a_circle():
    assert circles(imports(REPO)) == []


def test_every_part_of_the_package_is_in_a_layer():
    for module in imports(REPO):
        layer_of(part_of(module))


def test_an_import_up_or_beside_or_round_a_circle_is_caught(tmp_path):
    for name, text in {"__init__.py": "", "cli.py": "", "files.py": "from . import cli\n",
                       "training/__init__.py": "", "training/loop.py": "from ..ib import model\n",
                       "ib/__init__.py": "", "ib/model.py": "def f():\n    from ..ib import other\n",
                       "ib/other.py": "from .model import f\n"}.items():
        (tmp_path / PACKAGE / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / PACKAGE / name).write_text(text)
    graph = imports(tmp_path)
    assert wrong_way(graph) == [f"{PACKAGE}.files -> {PACKAGE}.cli", f"{PACKAGE}.training.loop -> {PACKAGE}.ib.model"]
    assert circles(graph) == [[f"{PACKAGE}.ib.model", f"{PACKAGE}.ib.other"]]
    with pytest.raises(AssertionError, match="no layer"):
        layer_of(part_of(f"{PACKAGE}.newcomer"))
