"""The catalog's side of the trust boundary: what a sandboxed child imports (grader.sandbox.trusted).

- every `depends`/`driver` reference of every spec resolves to a callable in grader.sandbox.trusted,
  so a typo fails here instead of killing the child with "the process ended while importing";
- trusted modules import nothing of the parent (grader.catalog, grader.pipeline, ...): read from
  their source, and seen in a fresh interpreter that imports them all;
- the modules a child imports for exercise X (its substitutes' and driver's modules, and what those
  import) never define X: grading multi_head_attention cannot reach a multi_head_attention;
- each substitute agrees with the reference of the exercise it stands in for, on that exercise's
  public cases: the child's switch-free copies of the equations are right.
"""
from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from conftest import ROOT
from grader import threads
from grader.catalog import catalog
from grader.pipeline.compare import compare_outputs

TRUSTED = ROOT / "grader" / "sandbox" / "trusted"
PACKAGE = "grader.sandbox.trusted"
# What a trusted module may import from the grader: its siblings and the tree helpers.
ALLOWED_GRADER = ("grader.trees",)
ALLOWED_OTHERS = ("torch", *sys.stdlib_module_names)


def _refs(spec) -> list[tuple[str, str]]:
    """(what, "module:function") for each trusted reference of a spec."""
    out = [(f"depends[{name!r}]", ref) for name, ref in spec.depends.items()]
    return out + ([("driver", spec.driver)] if spec.driver else [])


def _imports(path: Path) -> set[str]:
    """Every module a source file imports (anywhere in it, lazy imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import (write grader.sandbox.trusted.<module>)"
            names.add(node.module or "")
    return names


def _trusted_modules() -> dict[str, Path]:
    return {f"{PACKAGE}.{p.stem}": p for p in sorted(TRUSTED.glob("*.py")) if p.stem != "__init__"}


def _closure(modules: set[str]) -> set[str]:
    """The trusted modules that importing `modules` loads (siblings are their only grader imports)."""
    paths, seen, todo = _trusted_modules(), set(), list(modules)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [i for i in _imports(paths[m]) if i.startswith(PACKAGE + ".")]
    return seen


@pytest.mark.parametrize("exercise_id", sorted(catalog()))
def test_every_depends_and_driver_reference_resolves_into_the_trusted_package(exercise_id):
    for what, ref in _refs(catalog()[exercise_id]):
        module, _, function = ref.partition(":")
        assert module.startswith(PACKAGE + ".") and function, \
            f"{exercise_id}: {what} = {ref!r} is not 'grader.sandbox.trusted.<module>:<function>'"
        fn = getattr(importlib.import_module(module), function, None)
        assert callable(fn), f"{exercise_id}: {what} = {ref!r}: {module} has no callable {function}"


def test_the_package_init_imports_nothing():
    """Importing one trusted module must not bring in its siblings (and their substitutes)."""
    assert not _imports(TRUSTED / "__init__.py")


@pytest.mark.parametrize("module", sorted(_trusted_modules()))
def test_trusted_modules_import_nothing_of_the_parent(module):
    for name in _imports(_trusted_modules()[module]):
        top = name.split(".")[0]
        ok = name.startswith(PACKAGE + ".") or name in ALLOWED_GRADER or (top != "grader" and top in ALLOWED_OTHERS)
        assert ok, f"{module} imports {name}: a trusted module imports only torch, the standard library, " \
                   f"{', '.join(ALLOWED_GRADER)} and other modules of {PACKAGE}"


def test_importing_every_trusted_module_loads_no_other_grader_module():
    code = ("import importlib, json, sys\n"
            f"for m in {sorted(_trusted_modules())!r}:\n"
            "    importlib.import_module(m)\n"
            "print(json.dumps(sorted(n for n in sys.modules if n == 'grader' or n.startswith('grader.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    loaded = set(json.loads(out.stdout))
    expected = {"grader", "grader.sandbox", PACKAGE, *ALLOWED_GRADER, *_trusted_modules()}
    assert loaded <= expected, f"importing the trusted package also loads {sorted(loaded - expected)}"


@pytest.mark.parametrize("exercise_id", sorted(catalog()))
def test_the_child_of_an_exercise_holds_nothing_named_like_it(exercise_id):
    """Attack surface of `sys.modules[...]` and `fn.__globals__` walks: whatever grading X imports,
    no module of it defines (or imports) a function named X."""
    spec = catalog()[exercise_id]
    loaded = _closure({ref.partition(":")[0] for _, ref in _refs(spec)})
    holding = sorted(m for m in loaded if hasattr(importlib.import_module(m), spec.function))
    assert not holding, f"grading {exercise_id} imports {holding}, which define {spec.function}"


def _standing_in() -> dict[str, str]:
    """Curriculum function -> the reference to its trusted substitute (one per function)."""
    refs: dict[str, str] = {}
    for spec in catalog().values():
        for name, ref in spec.depends.items():
            assert refs.setdefault(name, ref) == ref, f"two substitutes for {name}: {refs[name]} and {ref}"
    return refs


@pytest.mark.parametrize("function", sorted(_standing_in()))
def test_each_substitute_agrees_with_the_reference_it_stands_in_for(function):
    """A substitute is what a correct student would write: it passes its own exercise's public cases."""
    spec = next(s for s in catalog().values() if s.function == function)
    module, _, name = _standing_in()[function].partition(":")
    substitute = getattr(importlib.import_module(module), name)
    student = types.SimpleNamespace(**{function: substitute})
    call = substitute
    if spec.driver:
        driver_module, _, driver_name = spec.driver.partition(":")
        driver = getattr(importlib.import_module(driver_module), driver_name)
        call = lambda *a, **k: driver(student, function, *a, **k)  # noqa: E731
    with threads.pinned(1):
        for case in spec.cases(torch.Generator().manual_seed(0)):
            if "capstone" in case.kwargs:          # trains for seconds: tests/test_catalog_transformer.py
                continue
            ref = spec.reference(*case.args, **case.kwargs)
            value = call(*case.args, **case.kwargs)
            tol = lambda dtype, case=case: spec.tol(dtype, case)  # noqa: E731
            if spec.judge is not None:
                verdict = spec.judge(case, value, ref, tol)
                assert verdict.ok, f"{module}:{name} fails {spec.id} on {case.name}: {verdict.message}"
            else:
                bad = [c for c in compare_outputs(value, ref, spec.outputs, tol, spec.exact) if not c.ok]
                assert not bad, f"{module}:{name} fails {spec.id} on {case.name}: {bad[0].problem}"


def test_a_call_beyond_the_contract_is_the_students_own_functions():
    """CURRICULUM.md allows extra keyword arguments with defaults: a student's mlp_backward may call its
    own mlp_forward(X, params, return_cache=True), which the grader's cannot answer (it returned the
    logits alone, and the student's unpacking failed: 0 / 3). Such a call, and one the substitute raises
    on (conv1d through the student's conv2d with (H, W) pairs), goes to the student's own function; a
    call within the contract gets the substitute, and only that is recorded."""
    from grader.sandbox.substitutes import recorded
    from grader.sandbox.trusted.positional_encoding import positional_encoding
    mine = []

    def own(T, d_model, dtype=torch.float32):
        mine.append(dtype)
        return positional_encoding(T, d_model).to(dtype)
    called: set[str] = set()
    substitute = recorded("positional_encoding", positional_encoding, called, own)
    assert substitute(4, 8, dtype=torch.float64).dtype == torch.float64 and mine == [torch.float64]
    assert not called
    with pytest.raises(TypeError):          # the substitute raised, then the student's own on the same call
        substitute((4,), 8)
    assert mine == [torch.float64, torch.float32] and not called
    assert torch.equal(substitute(T=4, d_model=8), positional_encoding(4, 8)) and called == {"positional_encoding"}
    assert len(mine) == 2
    alone = recorded("positional_encoding", positional_encoding, set())      # no function of the student's
    assert torch.equal(alone(4, 8, dtype=torch.float64), positional_encoding(4, 8))
