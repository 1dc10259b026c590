"""The source of a function defined in a notebook, rebuilt as a module for the static checks.

    function_source(fn, "causal_mask") -> "\\n\\ndef causal_mask(T): ...\\n\\nimport torch\\n"

The function's own text (IPython registers every cell with linecache, so `inspect` finds it),
then the notebook functions it calls (as grader.pipeline.static follows module helpers), then one import
line per module or imported object it names, so `F.scaled_dot_product_attention` resolves to
`torch.nn.functional.scaled_dot_product_attention` as in a file. The function's `def` sits on
its line in the cell, so "line N" in feedback is the line in that cell. Read-only: nothing runs.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any, Callable

from grader.submission.reading import parse

MAX_HELPERS = 50


def function_source(fn: Callable[..., Any], name: str) -> str:
    """Module-like source with `fn` defined as `name`; "" when the source cannot be read."""
    own = _source(fn)
    if own is None:
        return ""
    text, first_line = own
    text = _renamed(text, fn.__name__, name)
    if text is None:
        return ""
    helpers, names = _helpers(fn)
    imports = _imports(getattr(fn, "__globals__", {}), names)
    return "\n" * (first_line - 1) + "\n\n".join([text, *helpers, *imports]) + "\n"


def _source(fn) -> tuple[str, int] | None:
    if not isinstance(fn, types.FunctionType):
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    return textwrap.dedent("".join(lines)), max(first, 1)


def _renamed(text: str, old: str, new: str) -> str | None:
    """`text` with its function renamed (a student may pass `check("...causal_mask", my_mask)`)."""
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return None
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return None                          # a lambda: no def to check
    if old == new:
        return text
    lines = text.splitlines()
    i = node.lineno - 1
    lines[i] = lines[i].replace(f"def {old}", f"def {new}", 1)
    return "\n".join(lines)


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _helpers(fn) -> tuple[list[str], set[str]]:
    """Sources of the same-namespace functions `fn` calls, transitively; and every global name used."""
    glob = getattr(fn, "__globals__", {})
    seen, todo, texts, names = {fn.__name__}, [fn], [], set()
    while todo and len(seen) < MAX_HELPERS:
        current = todo.pop()
        used = _names(current.__code__)
        names |= used
        for n in sorted(used):
            value = glob.get(n)
            if n in seen or not isinstance(value, types.FunctionType) or value.__globals__ is not glob:
                continue
            seen.add(n)
            own = _source(value)
            if own is not None:
                texts.append(own[0])
            todo.append(value)
    return texts, names


def _imports(glob: dict[str, Any], names: set[str]) -> list[str]:
    out = []
    for n in sorted(names):
        value = glob.get(n)
        if isinstance(value, types.ModuleType):
            out.append(f"import {value.__name__}" if value.__name__ == n else f"import {value.__name__} as {n}")
            continue
        module, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
        if isinstance(module, str) and isinstance(qual, str) and module != glob.get("__name__") \
                and "." not in qual and qual.isidentifier():
            out.append(f"from {module} import {qual}" + (f" as {n}" if n != qual else ""))
    return out
