"""The package's shape, checked: no import cycles, small modules, front-ends only over grader.api.

The import graph is read from the source (ast), not by importing: an edge A -> B means module A
imports B when A itself is imported (module level, class bodies, module-level if/try; not inside
functions, and not under `if TYPE_CHECKING:`). A cycle there makes the import order matter and
breaks the first engineer who moves an import; a lazy import inside a function is not an edge.
Nor is an import by name through importlib (grader.cli's command discovery, grader.reports.FORMATS,
grader.config.EXTRA_SECTIONS): those run on use, after every module involved has loaded.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "grader"
MAX_LINES = 300

# Modules allowed over MAX_LINES, each with the reason it stays whole (an entry that is gone or
# short again fails test_long_module_allow_list_is_current: take it out).
LONG_MODULES: dict[str, str] = {}

# Front-end modules allowed to import grader.pipeline.engine themselves (instead of grader.api).
ENGINE_USERS: dict[str, str] = {}

# Modules outside grader/frontends that may import a front-end (the front-ends sit on top).
FRONTEND_IMPORTERS: dict[str, str] = {
    "grader.cli": "the `grader` command discovers its subcommands in grader.frontends.commands",
    "grader.notebook": "public shim: `from grader.notebook import check` in students' notebooks",
    "grader.pytest_plugin": "public shim: the pytest11 entry point named in pyproject.toml",
    "grader.api": "check_function grades through the notebook front-end's in-process stand-in for the "
                  "sandbox (grader.frontends.notebooks.inprocess), which has no other user",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_time_nodes(node: ast.AST):
    """Every node that runs when the module is imported: function bodies and TYPE_CHECKING blocks left out."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from _import_time_nodes(other)
            continue
        yield child
        yield from _import_time_nodes(child)


def imported(node: ast.stmt, module: str, is_package: bool, known: set[str]) -> set[str]:
    """grader modules that one import statement loads."""
    names: set[str] = set()
    if isinstance(node, ast.Import):
        names = {a.name for a in node.names}
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        names = {base} | {f"{base}.{a.name}" for a in node.names}
    return {n for n in names if n in known}


def import_graph(all_imports: bool = False) -> dict[str, set[str]]:
    """module -> the grader modules it imports at import time (every import, with all_imports)."""
    mods = modules()
    known = set(mods)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        nodes = ast.walk(tree) if all_imports else _import_time_nodes(tree)
        edges: set[str] = set()
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= imported(node, name, path.name == "__init__.py", known)
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}            # 1: on the current path, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_graph_sees_real_imports():
    graph = import_graph()
    assert "grader.errors" in graph["grader.cli"]
    assert "grader.catalog.spec" in graph["grader.catalog"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle at import time: " + " -> ".join(cycle)


def test_modules_are_short():
    too_long = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES and rel not in LONG_MODULES:
            too_long[rel] = lines
    assert not too_long, f"modules over {MAX_LINES} lines (split them, or add a reason to LONG_MODULES): {too_long}"


def test_long_module_allow_list_is_current():   # passes vacuously while the list is empty
    stale = [rel for rel in LONG_MODULES if not (ROOT / rel).is_file()
             or len((ROOT / rel).read_text(encoding="utf-8").splitlines()) <= MAX_LINES]
    assert not stale, f"LONG_MODULES names modules that are gone or short now: {stale}"


def test_front_ends_grade_through_the_api():
    graph = import_graph(all_imports=True)
    reaching = sorted(m for m, edges in graph.items()
                      if m.startswith("grader.frontends") and "grader.pipeline.engine" in edges
                      and m not in ENGINE_USERS)
    assert not reaching, f"front-ends importing grader.pipeline.engine (use grader.api): {reaching}"
    assert "grader.pipeline.engine" in graph["grader.api"]


def test_only_the_listed_modules_reach_up_into_the_front_ends():
    graph = import_graph(all_imports=True)
    reaching = sorted(m for m, edges in graph.items() if not m.startswith("grader.frontends")
                      and any(e.startswith("grader.frontends") for e in edges) and m not in FRONTEND_IMPORTERS)
    assert not reaching, f"modules below the front-ends importing one (call grader.api from the front-end): {reaching}"


def test_version_and_the_api_do_not_load_torch():
    """`grader --version` imports every command module (to build the parser): they, grader.api and
    grader.reports import torch, the catalog and the engine only inside the functions that grade."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "grader", "--version"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("grader ")
    assert "torch" not in p.stderr, [line for line in p.stderr.splitlines() if "torch" in line][:3]
    p = subprocess.run([sys.executable, "-c", "import sys, grader.api, grader.reports, grader.notebook; "
                        "print(sorted(m for m in ('torch', 'grader.catalog', 'grader.pipeline.engine') "
                        "if m in sys.modules))"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "[]", p.stdout + p.stderr


def test_every_report_format_resolves_without_a_prior_import():
    """FORMATS names every format; each renderer is imported on first use (no registration by import)."""
    from grader.reports import FORMATS, renderer
    for fmt in FORMATS:
        assert callable(renderer(fmt)), fmt
    code = ("import sys; from grader.reports import render; from grader.results import SubmissionResult; "
            "assert 'grader.reports.junit' not in sys.modules; "
            "print(render(SubmissionResult(submission='s', exercises=()), 'junit').splitlines()[1])")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("<testsuites"), p.stdout + p.stderr


def test_an_unknown_format_lists_every_format():
    from grader.reports import FORMATS, render
    with pytest.raises(ValueError) as info:
        render(None, "pdf")
    assert all(f in str(info.value) for f in FORMATS)
    p = subprocess.run([sys.executable, "-m", "grader", "check", "attention", "--format", "pdf"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "unknown --format 'pdf': choose from " + ", ".join(FORMATS) in p.stderr
