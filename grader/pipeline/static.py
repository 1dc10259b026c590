"""Static checks on the student's source, done in the parent on text (nothing is executed).

The scan decides only what the source proves: a name that resolves, through imports and
aliases, to a forbidden object. A method called on a value whose type the source does not show
(`layer.backward(...)`, `v.relu()`, `z.sign()`) proves nothing, since the student's own classes
may have methods of those names; such calls are left to the run-time tripwires
(grader.sandbox.tripwires), which see the real call (`torch.Tensor.backward`, `aten::relu`).

- forbidden names reachable from the exercise's function: aliases are resolved
  (`import torch.nn.functional as F; F.conv2d` is `torch.nn.functional.conv2d`), module-level
  imports everywhere and a function's own imports inside it, and module-level helpers and classes
  the function names are followed (but not those the grader replaces with its substitutes);
- `getattr(module, "literal")` where the module resolves and module.literal is forbidden;
- none of it in code that provably never runs (grader.pipeline.dead_code);
- importing the grader or the worked solutions, forbidden everywhere.
Patterns: a dotted name (`torch.nn.functional.conv2d`, or a prefix such as `torch.func`), or
`kw:NAME`: the keyword NAME given a true constant in a call of a torch function
(`torch.zeros(3, requires_grad=True)`; `requires_grad=False`, a variable, or a call of the
student's own function prove nothing).
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from grader.catalog.spec import Forbidden
from grader.pipeline import dead_code
from grader.submission.loader import salvage
from grader.submission.reading import parse

ALWAYS = Forbidden(
    name="importing the grader or the solutions",
    rationale="the grader's references and the worked solutions compute the expected answers: "
              "remove the import and compute the answer yourself",
    static=("grader", "solutions"),
)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class StaticHit:
    rule: str
    what: str
    line: int


@dataclass(frozen=True)
class _Patterns:
    dotted: list[tuple[str, Forbidden]]
    keywords: list[tuple[str, Forbidden]]

    @classmethod
    def of(cls, rules: tuple[Forbidden, ...]) -> "_Patterns":
        dotted, keywords = [], []
        for rule in rules:
            for p in rule.static:
                if p.startswith("kw:"):
                    keywords.append((p[3:], rule))
                elif ":" in p:
                    raise ValueError(f"rule {rule.name!r}: static pattern {p!r} is neither a dotted name nor kw:NAME")
                else:
                    dotted.append((p, rule))
        return cls(dotted, keywords)


def _imports(nodes) -> dict[str, str]:
    """Alias -> dotted name for the imports among `nodes` (walked in full)."""
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _module_level(tree: ast.Module):
    """Every node of the module outside function and class bodies (imports under `if`/`try` too)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _DEFS):
            todo.extend(ast.iter_child_nodes(node))


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`F.conv2d` -> 'torch.nn.functional.conv2d' when the chain starts at an imported name; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        parts.append(aliases[node.id])
        return ".".join(reversed(parts))
    return None


def _strip_docstring(fn: ast.AST) -> list[ast.stmt]:
    body = list(getattr(fn, "body", []))
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


@dataclass(frozen=True)
class _Def:
    """What the scan reads of one top-level function or class, found once per source."""
    names: tuple[str, ...]          # the names it uses that name a top-level definition, in ast.walk order
    aliases: dict[str, str]         # its own imports (a function's `import torch.nn.functional as F`)
    nodes: tuple[ast.AST, ...]      # its body walked, a docstring left out: what the patterns are checked on
    always: tuple[StaticHit, ...]   # ALWAYS in its body


@dataclass(frozen=True)
class _Index:
    """A module's source read once for the scan: every exercise of the module asks the same questions
    of it, each with its own rules (the tree was walked again for each: 0.5 ms an exercise)."""
    aliases: dict[str, str]         # module-level imports, those under `if`/`try` too
    defs: dict[str, _Def]           # top-level functions and classes by name (a later one of a name wins)
    always: tuple[StaticHit, ...]   # ALWAYS at the top level


@functools.lru_cache(maxsize=64)
def _index(source: str) -> _Index:
    tree = parsed(source)
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    known = dead_code.flags(tree)
    return _Index(_imports(_module_level(tree)), {name: _read_def(node, top, known) for name, node in top.items()},
                  tuple(_always_hits(tree.body)))


def _read_def(node: ast.AST, top: dict[str, ast.AST], known: dict[str, bool]) -> _Def:
    """Of the code that can run (grader.pipeline.dead_code: `known`, the module's flags)."""
    every = list(dead_code.walk(node, known))
    # A docstring holds no import: the walk of the body without it finds every import of the body.
    body = tuple(n for stmt in dead_code.reached(_strip_docstring(node)) for n in dead_code.walk(stmt, known))
    return _Def(tuple(n.id for n in every if isinstance(n, ast.Name) and n.id in top), _imports(every), body,
                tuple(_always_hits(body)))


def _reachable(index: _Index, function: str, replaced: tuple[str, ...]) -> list[_Def]:
    """`function` and the module's functions and classes it names, directly or not; those the
    grader replaces (`replaced`) are not followed."""
    seen, todo, out = set(), [function], []
    while todo:
        name = todo.pop()
        if name in seen or name not in index.defs or (name != function and name in replaced):
            continue
        seen.add(name)
        out.append(index.defs[name])
        todo.extend(index.defs[name].names)
    return out


@functools.lru_cache(maxsize=64)
def parsed(source: str) -> ast.Module:
    """The student's module parsed once per grading process, not once per exercise and question (the
    scan, the line of a function, the imports): callers read the tree, never change it. Raises
    SyntaxError (ValueError for null bytes) as grader.submission.reading.parse does."""
    return parse(source)


def imported_modules(module: str, files: dict[str, str]) -> list[str]:
    """The student's other modules that `module` imports anywhere in its source (static: a name
    that `import X` or `from X import ...` names, X one of `files`)."""
    found: list[str] = []
    for name in _imported_names(files.get(module, "")):
        if name in files and name != module and name not in found:
            found.append(name)
    return found


def import_closure(module: str, files: dict[str, str]) -> list[str]:
    """`module` and the student's modules it imports, directly or through another (static): those
    a child that imports `module` compiles, unless its code imports one by a route no text names."""
    found = [module]
    for name in found:
        found += [m for m in imported_modules(name, files) if m not in found]
    return found


@functools.lru_cache(maxsize=64)
def _imported_names(source: str) -> tuple[str, ...]:
    """Every top-level module name `source` imports, in order: found once per source and grading
    process (every exercise of a module asks, and walking a module's tree took 2 ms a time)."""
    try:
        tree = parsed(source)
    except SyntaxError:
        tree = parsed(salvage(source)[0])
    except ValueError:          # null bytes: nothing to read imports from
        return ()
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return tuple(names)


def forbidden_hits(source: str, function: str, rules: tuple[Forbidden, ...],
                   replaced: tuple[str, ...] = ()) -> list[StaticHit]:
    """Forbidden uses in `function` (and the module helpers it calls). A source that does not parse
    is read as its salvage, the code the child grades then (a syntax error anywhere in a module
    turned the static scan off for all of it: a red team's finding); null bytes: none.

    `replaced`: the helpers the grader puts its own substitute in place of while grading this
    exercise (the spec's `depends`); the student's versions never run there, so they are not
    followed (their own exercises charge them)."""
    try:
        index = _index(source)
    except SyntaxError:
        try:
            index = _index(salvage(source)[0])
        except (SyntaxError, ValueError):
            return []
    except ValueError:
        return []
    patterns = _Patterns.of(rules)
    reachable = _reachable(index, function, replaced)
    hits = [*index.always, *(h for fn in reachable for h in fn.always)]
    for fn in reachable:
        aliases = {**index.aliases, **fn.aliases}
        for node in fn.nodes:
            hits.extend(_check_node(node, aliases, patterns))
    unique, seen = [], set()
    for h in hits:
        if (h.rule, h.what) not in seen:
            seen.add((h.rule, h.what))
            unique.append(h)
    return unique


def _always_hits(nodes) -> list[StaticHit]:
    """ALWAYS among `nodes`: the module's top-level statements (an import inside a function counts
    only where the function is reachable), or a function's body walked."""
    hits = []
    for node in nodes:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for n in names:
            if n.split(".")[0] in ALWAYS.static:
                hits.append(StaticHit(ALWAYS.name, f"import {n}", node.lineno))
    return hits


def _matches(name: str, patterns: _Patterns) -> list[Forbidden]:
    return [rule for pattern, rule in patterns.dotted if name == pattern or name.startswith(pattern + ".")]


def _check_node(node: ast.AST, aliases: dict[str, str], patterns: _Patterns) -> list[StaticHit]:
    out = []
    line = getattr(node, "lineno", 0)
    if isinstance(node, (ast.Attribute, ast.Name)):
        name = _dotted(node, aliases)
        if name:
            out += [StaticHit(rule.name, name, line) for rule in _matches(name, patterns)]
    if not isinstance(node, ast.Call):
        return out
    fname = _dotted(node.func, aliases) or ""
    # Rationale: a keyword is proof only in a call of torch's own (the student's Value(...,
    # requires_grad=True) is their own engine) and only with a true constant (False turns it off).
    if fname == "torch" or fname.startswith("torch."):
        for kw in node.keywords:
            if isinstance(kw.value, ast.Constant) and kw.value.value:
                out += [StaticHit(rule.name, f"{kw.arg}={kw.value.value!r}", line)
                        for name, rule in patterns.keywords if kw.arg == name]
    # Rationale: getattr(F, "relu") is F.relu when F resolves; getattr(layer, "relu") proves nothing.
    is_getattr = fname == "builtins.getattr" or (isinstance(node.func, ast.Name) and node.func.id == "getattr")
    if is_getattr and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
            and isinstance(node.args[1].value, str):
        owner = _dotted(node.args[0], aliases)
        if owner:
            name = f"{owner}.{node.args[1].value}"
            out += [StaticHit(rule.name, f"getattr(..., {node.args[1].value!r})", line)
                    for rule in _matches(name, patterns)]
    return out
