"""Code the source proves never runs, which the static scan (grader.pipeline.static) passes over.

A forbidden name in code that cannot run is no use of it. Students leave such code behind: an old
version after the `return` of the new one, a check against the library kept under `if DEBUG:` with
DEBUG = False. The scan calling that FORBIDDEN would take every point from a function that never
calls the library. Only what the source itself proves is passed over:
- the statements after a `return`, `raise`, `break` or `continue` in the same block;
- the body of an `if` (the first arm of `a if test else b`) whose test is provably false, and the
  `else` of one whose test is provably true. The test itself always runs, and is scanned. A test is
  proved by a constant (`if False:`), by a module flag, and by `not`, `and`, `or` of those. A module
  flag is a name the module binds once, at its top level, to a constant (`DEBUG = False`), and that
  no other line binds, declares global, takes as a parameter, imports, sets as an attribute or
  spells as a string (`globals()["DEBUG"] = True`).
A flag rebound by a route the text does not show (another module's `mod.DEBUG = True`) makes the
branch run: what it calls there is for the run-time nets, as any call the text does not show.
"""
from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

_ENDS_BLOCK = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def flags(tree: ast.Module) -> dict[str, bool]:
    """The module's flags (see above) and their truth."""
    bound: dict[str, int] = {}
    for node in ast.walk(tree):
        for name in _bound(node):
            bound[name] = bound.get(name, 0) + 1
    out = {}
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            else stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and isinstance(stmt.value, ast.Constant) and bound.get(target.id) == 1:
            out[target.id] = bool(stmt.value.value)
    return out


def _bound(node: ast.AST) -> list[str]:
    """The names `node` binds, or could bind by a route a flag must not have (a string of its name)."""
    if isinstance(node, ast.Name):
        return [node.id] if isinstance(node.ctx, (ast.Store, ast.Del)) else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, ast.Attribute):
        return [node.attr] if isinstance(node.ctx, (ast.Store, ast.Del)) else []
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
        return [node.value]
    return []


def truth(test: ast.AST, known: dict[str, bool]) -> bool | None:
    """What the source proves of `test`'s truth (None: nothing)."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.Name):
        return known.get(test.id)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = truth(test.operand, known)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [truth(v, known) for v in test.values]
        decisive = isinstance(test.op, ast.Or)         # any true `or` operand is true; any false `and` one false
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    return None


def reached(block: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a block up to the first that ends it (return, raise, break, continue)."""
    for i, stmt in enumerate(block):
        if isinstance(stmt, _ENDS_BLOCK):
            return block[:i + 1]
    return block


def walk(node: ast.AST, known: dict[str, bool]) -> Iterator[ast.AST]:
    """ast.walk's nodes in its order, less those of code that provably never runs."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(_live_children(node, known))
        yield node


def _live_children(node: ast.AST, known: dict[str, bool]) -> Iterator[ast.AST]:
    if isinstance(node, (ast.If, ast.IfExp)):
        test = truth(node.test, known)
        yield node.test
        arms = ([node.body] if test is not False else []) + ([node.orelse] if test is not True else [])
        for arm in arms:
            yield from reached(arm) if isinstance(arm, list) else [arm]
        return
    for _, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            if value and isinstance(value[0], ast.stmt):
                value = reached(value)
            yield from (item for item in value if isinstance(item, ast.AST))
