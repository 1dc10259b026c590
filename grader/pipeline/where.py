"""Where in a student's module a name is: the top-level `def` Python keeps (the last), every top-level
`def` of it, the last top-level assignment of a value to it. From the tree grader.pipeline.static
parses once per grading process; by the text's lines when the source does not parse."""
from __future__ import annotations

import ast

from grader.pipeline.static import parsed


def function_line(source: str, function: str) -> int:
    """Line of the `def function` that Python keeps, the last at the top level (0 when absent)."""
    lines = function_lines(source, function)
    return lines[-1] if lines else 0


def function_lines(source: str, function: str) -> list[int]:
    """Line of each top-level `def function` of the source, in order (by text when unparseable)."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return [i for i, text in enumerate(source.splitlines(), 1) if text.startswith(f"def {function}(")]
    return [node.lineno for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function]


def assigned_line(source: str, name: str) -> int:
    """Line of the last top-level assignment of a value to `name` (`name = ...`), 0 when none."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return 0
    lines = [node.lineno for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             and any(isinstance(t, ast.Name) and t.id == name
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    return lines[-1] if lines else 0
