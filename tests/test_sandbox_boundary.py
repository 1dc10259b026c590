"""The trust boundary: a sandboxed child holds nothing of the grader a student could use to pass
an exercise they did not solve.

Each attack replaces the graded functions with a "stealer": instead of computing the answer it
looks for the grader's own version of the same function (a reference, a substitute, a timing
reference: any callable of a grader module whose name contains the function's name) by one
route, and returns what that computes. Against a leaky child any route earns full marks (the
parent-side check below shows the loot exists); against ours every route must earn nothing.

The targets are the exercises that some other exercise is graded with a substitute of (their
substitute exists and is loaded in some child), plus every exercise whose reference sits in a
chapter module (read by the source route).
"""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import grader
from grader.catalog import catalog

PACKAGE = Path(grader.__file__).resolve().parent

# Each route is the body of a function `_steal(target)` returning a callable or None.
ROUTES = {
    # Modules already loaded in the child: whatever the zygote, the substitutes or drivers brought.
    "sys_modules": """
        import sys
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("grader"):
                for attr in dir(mod):
                    fn = getattr(mod, attr, None)
                    if target in attr and callable(fn) and getattr(fn, "__module__", "") != __name__:
                        return fn
        return None
    """,
    # Importing any module of the grader package by name.
    "import": """
        import importlib
        for name in MODULES:
            try:
                mod = importlib.import_module(name)
            except BaseException:
                continue
            for attr in dir(mod):
                fn = getattr(mod, attr, None)
                if target in attr and callable(fn):
                    return fn
        return None
    """,
    # Reading the grader's source files and compiling the function found there.
    "read_source": """
        import ast, math
        import torch
        import torch.nn.functional as F
        for path in FILES:
            try:
                with open(path) as f:
                    text = f.read()
            except BaseException:
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef) and target in node.name:
                    namespace = {"torch": torch, "F": F, "math": math}
                    exec(compile(ast.Module([node], []), path, "exec"), namespace)
                    return namespace[node.name]
        return None
    """,
    # Walking the globals of the substitutes placed in this module, and of what they reach.
    "globals_walk": """
        import types
        seen, todo = set(), [fn for fn in list(globals().values()) if isinstance(fn, types.FunctionType)]
        while todo:
            fn = todo.pop()
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            if fn.__module__.startswith("grader") and target in fn.__name__:
                return fn
            for value in list(fn.__globals__.values()):
                if isinstance(value, types.FunctionType):
                    todo.append(value)
                elif isinstance(value, types.ModuleType) and value.__name__.startswith("grader"):
                    todo += [v for v in vars(value).values() if isinstance(v, types.FunctionType)]
        return None
    """,
    # Every function object alive in the process.
    "gc": """
        import gc, types
        for obj in gc.get_objects():
            if isinstance(obj, types.FunctionType) and obj.__module__.startswith("grader") \\
                    and target in obj.__name__ and obj.__module__ != __name__:
                return obj
        return None
    """,
}


def _targets() -> list[str]:
    specs = catalog()
    by_function = {s.function: s.id for s in specs.values()}
    depended = {by_function[name] for s in specs.values() for name in s.depends if name in by_function}
    return sorted(depended | {"attention.causal_mask", "rnn.rnn_forward", "tokens.embedding_lookup"})


def _stealer(function: str, route: str, modules: list[str], files: list[str]) -> str:
    body = textwrap.indent(textwrap.dedent(ROUTES[route]).strip(), "    ")
    return (f"MODULES = {modules!r}\nFILES = {files!r}\n\n"
            f"def _steal(target):\n{body}\n\n\n"
            f"def {function}(*args, **kwargs):\n"
            f"    fn = _steal({function!r})\n"
            f"    if fn is None:\n"
            f"        raise RuntimeError('nothing to steal')\n"
            f"    return fn(*args, **kwargs)\n")


def _package_modules() -> tuple[list[str], list[str]]:
    files = sorted(str(p) for p in PACKAGE.rglob("*.py"))
    modules = []
    for f in files:
        rel = Path(f).relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules.append(".".join(parts))
    return modules, files


def test_the_loot_exists_in_the_parent():
    """Positive control: the grader's references are there to steal in the grading process, so an
    attack that fails in the child fails because of the boundary, not because it is broken."""
    modules, files = _package_modules()
    ns: dict = {}
    exec(_stealer("scaled_dot_product_attention", "import", modules, files), ns)
    assert ns["_steal"]("scaled_dot_product_attention") is not None
    exec(_stealer("multi_head_attention", "read_source", modules, files), ns)
    assert ns["_steal"]("multi_head_attention") is not None


@pytest.mark.slow
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_stealing_the_graders_own_functions_earns_nothing(route, make_submission, grade_dir):
    """Attack: every target function returns the grader's own version, found by `route`.
    Must hold: no target exercise earns a point."""
    modules, files = _package_modules()
    targets = _targets()
    overrides = {t: _stealer(t.split(".")[1], route, modules, files) for t in targets}
    sub = make_submission({})
    for target, source in overrides.items():
        module, function = target.split(".")
        path = sub / f"{module}.py"
        path.write_text(path.read_text() + "\n\n" + source.replace(f"def {function}(", f"def {function}(", 1))
    result = grade_dir(sub, *targets)
    earned = {e.id: e.points for e in result.exercises if e.points > 0}
    assert not earned, f"route {route!r} earned points: {earned}"


def test_child_cannot_import_or_read_the_catalog(make_submission, grade_dir):
    """Attack: import grader.catalog.attention, or open its file, from the graded function.
    Must hold: both fail inside the child (the function raises, so the case is an error whose
    message says which), while the student's other exercises grade normally."""
    probe = (
        "def causal_mask(T):\n"
        "    import importlib\n"
        "    problems = []\n"
        "    try:\n"
        "        importlib.import_module('grader.catalog.attention')\n"
        "    except ImportError as e:\n"
        "        problems.append('import refused')\n"
        "    try:\n"
        f"        open({str(PACKAGE / 'catalog' / '__init__.py')!r}).read()\n"
        "    except OSError:\n"
        "        problems.append('read refused')\n"
        "    raise RuntimeError(', '.join(problems))\n")
    result = grade_dir(make_submission({"attention.causal_mask": probe}), "attention.causal_mask")
    case = result.exercises[0].cases[0]
    assert "import refused" in case.message, case.message
    if os.geteuid() == 0 or _landlock_available():
        assert "read refused" in case.message, case.message


def _landlock_available() -> bool:
    import ctypes
    return ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1) >= 1
