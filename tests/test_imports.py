"""The package has no import circle: every import of a smdissect module by another, at module level, inside a
function or under TYPE_CHECKING, read with `ast`, makes a graph without a cycle."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "smdissect"


def module_name(path: Path, package: Path) -> str:
    """A source file's dotted name ('smdissect.core.tables'; a package's __init__.py is the package's)."""
    parts = (package.name, *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of `modules` that module `name` (a package's __init__ where `is_package`) imports anywhere in it."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parent = here[: len(here) - node.level + 1] if node.level else []
            base = ".".join([*parent, *([node.module] if node.module else [])])
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            for i in range(2, len(parts) + 1):  # the module and each package above it below the top one
                found = ".".join(parts[:i])
                if found in modules and found != name and not name.startswith(found + "."):
                    out.add(found)
    return out


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of a package -> the package's modules it imports."""
    files = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    return {
        name: imported(ast.parse(path.read_text()), name, path.name == "__init__.py", set(files))
        for name, path in files.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (a -> b -> ... -> a) through each strongly connected part of a graph that has one (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = set(stack[stack.index(v) :])
            del stack[stack.index(v) :]
            parts.append(part)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [circle(graph, part) for part in parts if len(part) > 1 or min(part) in graph.get(min(part), ())]


def circle(graph: dict[str, set[str]], part: set[str]) -> list[str]:
    """A shortest path inside `part` from its first module back to itself."""
    start = min(part)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph.get(v, set()) & part):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    following.append(w)
        frontier = following
    return [start]


def test_the_package_has_no_import_circle() -> None:
    found = cycles(import_graph(PACKAGE))
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_figure_model_imports_no_stage() -> None:
    assert import_graph(PACKAGE)["smdissect.analysis.figure_model"] <= {"smdissect.core", "smdissect.core.stats"}


def test_a_circle_is_found_and_printed() -> None:
    graph = {"figures": {"checks", "tables"}, "checks": {"derived"}, "derived": {"figures"}, "tables": set()}
    assert cycles(graph) == [["checks", "derived", "figures", "checks"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_relative_imports_are_edges(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("from . import b\n")
    (package / "sub" / "b.py").write_text("import pkg.c\n")
    (package / "c.py").write_text("from .sub.b import x\nfrom pkg import a\n")
    graph = import_graph(package)
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg.sub", "pkg.sub.b"},
        "pkg.sub": {"pkg.sub.b"},
        "pkg.sub.b": {"pkg.c"},
        "pkg.c": {"pkg.sub", "pkg.sub.b", "pkg.a"},
    }
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]


LAYERS = ("core", "measure", "analysis", "pages", "stages")  # each imports only from itself and those before it


def layer_of(module: str) -> int | None:
    """The place of a module's layer in LAYERS (None: the package itself, cli, __main__)."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a layer after its own ('a -> b')."""
    return sorted(
        f"{a} -> {b}"
        for a, deps in graph.items()
        for b in deps
        if layer_of(a) is not None and layer_of(b) is not None and layer_of(b) > layer_of(a)
    )


def test_each_layer_imports_only_itself_and_the_layers_before_it() -> None:
    assert not upward(import_graph(PACKAGE)), upward(import_graph(PACKAGE))
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


def test_an_upward_import_is_found() -> None:
    graph = {"smdissect.core.tables": {"smdissect.pages.markup"}, "smdissect.pages.markup": {"smdissect.core.tables"}}
    assert upward(graph) == ["smdissect.core.tables -> smdissect.pages.markup"]


def test_a_gpu_or_tables_stage_loads_no_page_code() -> None:
    code = (
        "import sys; from smdissect import cli; cli.parser(['run', 'profile', 'crossval', 'figures']); "
        "print(sorted(m for m in sys.modules if m.startswith('smdissect.pages')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(PACKAGE.parent)},
    )
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


READS_MANIFESTS = re.compile(r"\bKERNELS\b|/ \"cases\.yaml\"|glob\(\"\*/cases\.yaml\"\)")


def test_only_the_manifest_loader_reads_kernels() -> None:
    """No module but catalog opens a manifest or falls back to the checkout's kernels/: the others are given it."""
    readers = sorted(
        str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if READS_MANIFESTS.search(p.read_text())
    )
    assert readers == ["core/catalog.py"], readers
