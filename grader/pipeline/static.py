"""Static checks on the student's source, done in the parent on text (nothing is executed).

- forbidden names reachable from the exercise's function: aliases are resolved
  (`import torch.nn.functional as F; F.conv2d` is `torch.nn.functional.conv2d`), and module-level
  helpers the function calls are followed;
- `getattr(obj, "literal")` naming a forbidden attribute;
- importing the grader or the worked solutions, forbidden everywhere.
Patterns: a dotted name (`torch.nn.functional.conv2d`), `attr:NAME` (any attribute of that
name, e.g. `.backward`), `kw:NAME` (a keyword argument, e.g. `requires_grad=True`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from grader.catalog.spec import Forbidden

ALWAYS = Forbidden(
    name="importing the grader or the solutions",
    rationale="the grader's references and the worked solutions compute the expected answers",
    static=("grader", "solutions"),
)


@dataclass(frozen=True)
class StaticHit:
    rule: str
    what: str
    line: int


def _aliases(tree: ast.AST) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(aliases.get(node.id, node.id))
        return ".".join(reversed(parts))
    return None


def _strip_docstring(fn: ast.AST) -> list[ast.stmt]:
    body = list(getattr(fn, "body", []))
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _reachable(tree: ast.Module, function: str) -> list[ast.AST]:
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    seen, todo, out = set(), [function], []
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        out.append(defs[name])
        for node in ast.walk(defs[name]):
            if isinstance(node, ast.Name) and node.id in defs:
                todo.append(node.id)
    return out


def forbidden_hits(source: str, function: str, rules: tuple[Forbidden, ...]) -> list[StaticHit]:
    """Forbidden uses in `function` (and the module helpers it calls). Unparseable source: none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    aliases = _aliases(tree)
    hits: list[StaticHit] = []
    reachable = _reachable(tree, function)
    # ALWAYS: imports at the top level count for every exercise, those in functions where reachable.
    for scope in [tree.body, *[fn.body for fn in reachable]]:
        for stmt in scope:
            for node in ast.walk(stmt) if scope is not tree.body else [stmt]:
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                for n in names:
                    if n.split(".")[0] in ALWAYS.static:
                        hits.append(StaticHit(ALWAYS.name, f"import {n}", node.lineno))
    dotted_rules = [(p, r) for r in rules for p in r.static if ":" not in p]
    leaf_rules = [(p.rsplit(".", 1)[-1], r) for p, r in dotted_rules]
    attr_rules = [(p[5:], r) for r in rules for p in r.static if p.startswith("attr:")]
    kw_rules = [(p[3:], r) for r in rules for p in r.static if p.startswith("kw:")]
    for fn in reachable:
        for stmt in _strip_docstring(fn):
            for node in ast.walk(stmt):
                hits.extend(_check_node(node, aliases, dotted_rules, leaf_rules, attr_rules, kw_rules))
    unique, seen = [], set()
    for h in hits:
        if (h.rule, h.what) not in seen:
            seen.add((h.rule, h.what))
            unique.append(h)
    return unique


def _check_node(node, aliases, dotted_rules, leaf_rules, attr_rules, kw_rules) -> list[StaticHit]:
    out = []
    line = getattr(node, "lineno", 0)
    if isinstance(node, (ast.Attribute, ast.Name)):
        name = _dotted(node, aliases)
        if name:
            for pattern, rule in dotted_rules:
                if name == pattern or name.startswith(pattern + "."):
                    out.append(StaticHit(rule.name, name, line))
        if isinstance(node, ast.Attribute):
            for attr, rule in attr_rules:
                if node.attr == attr:
                    out.append(StaticHit(rule.name, f".{attr}", line))
    if isinstance(node, ast.Call):
        for kw in node.keywords:
            for name, rule in kw_rules:
                if kw.arg == name:
                    out.append(StaticHit(rule.name, f"{name}=...", line))
        fname = _dotted(node.func, aliases) or ""
        if fname in ("getattr", "builtins.getattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            lit = node.args[1].value
            for leaf, rule in leaf_rules + attr_rules:
                if lit == leaf:
                    out.append(StaticHit(rule.name, f"getattr(..., {lit!r})", line))
    return out


def function_line(source: str, function: str) -> int:
    """Line of `def function` in the source (0 when absent or unparseable)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        for i, text in enumerate(source.splitlines(), 1):
            if text.startswith(f"def {function}("):
                return i
        return 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            return node.lineno
    return 0
