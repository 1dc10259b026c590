"""nbgrader source notebooks from the worked solutions: one notebook per module.

    write_source_notebooks("solutions", "course/source/ps1", config) -> ["course/source/ps1/attention.ipynb", ...]

For each top-level function of solutions/<module>.py that is an exercise of the catalog:
  1. a locked markdown cell: its docstring (explanation, shapes, math) as Markdown;
  2. a solution cell: the function, its `### BEGIN SOLUTION` / `### END SOLUTION` regions kept
     for `nbgrader generate_assignment` to replace (its docstring cut to the first line: the
     cell above holds the rest);
  3. a locked autograder test cell worth the exercise's points of autograde.toml, which calls
     `grader.notebook.check(...).award()`: it returns the points (nbgrader's partial credit
     reads the float of the cell's execute_result) or raises with the grader's diagnosis.
The module docstring, its imports and any other code come first, in locked cells. Before them,
a locked setup cell, `%load_ext grader.frontends.notebooks.course_imports`: course modules import
each other (transformer.py `from attention import ...`, moe.py `from transformer import ...`) and
a notebook has no attention.py beside it, so the extension lets the kernel import attention.ipynb,
the student's notebook of that module, as `grader check` imports the student's attention.py (see
course_imports.py: why the student's own module and not the grader's reference, and which folder
under nbgrader's autograde). It is in every notebook, whether its solution imports another
module or not, so a student's own reuse of an earlier module works in both routes alike. The
submission loader comments the magic out, so `grader check` on the .ipynb never runs it.

nbgrader cell metadata (schema version 3, nbgrader/nbgraderformat/v3.json) restricts a
grade_id to `^[a-zA-Z0-9_\\-]*$`: no dots. The test cell of `attention.causal_mask` therefore
has grade_id `attention-causal_mask` (`.` -> `-`; ids have no `-` of their own, so the map is
one to one: grade_id_of / exercise_of_grade_id). Other locked cells get suffixed ids
(`attention-causal_mask-solution`, `-description`), never mistaken for a test cell since
only test cells are grade cells.

Notebooks are built with nbformat (`nbformat.v4.new_*`), checked with `nbformat.validate` before
they are written, and written with `nbformat.write`. nbgrader runs `alembic` (its database
migrations) by name, so `write_nbgrader_config` gives a new course directory an
`nbgrader_config.py` that puts the running interpreter's folder on PATH: `.venv/bin/nbgrader
generate_assignment` then works without activating the virtual environment.
"""
from __future__ import annotations

import ast
import inspect
import os
import re
import textwrap
from pathlib import Path

import nbformat

from grader.config import Config
from grader.reports.filters import points

GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")        # nbgrader's v3 schema, "grade_id" pattern
SCHEMA_VERSION = 3
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

HOW_GRADED = """\
### How this notebook is graded

Write your code where it says `# YOUR CODE HERE` (remove the `raise NotImplementedError()`).
After each exercise, a locked test cell runs

    from grader.notebook import check
    check("{example}", {function}, points=...).award()

which grades your function on the course grader's cases: the same inputs, PyTorch references,
tolerances and known-mistake diagnoses as `grader check`. It shows which cases failed, by how much,
and what the mistake looks like. Partial credit is by cases passed: the cell's value is the points
earned, which is what nbgrader records; with no case passed the cell raises an error that says why.

**Trust model.** `check` runs your function inside this notebook's kernel, not in the grader's
sandbox. That is how nbgrader's autograde works too (it runs the whole notebook in a kernel). When
your instructor grades with `grader check` or `grader batch` on the `.ipynb` file instead, your code
cells are imported in the grader's sandbox and every decision is made outside it; cells of the
grader's own (these test cells, `check` calls) and IPython magics are left out there.

**Other modules of the course.** The first code cell (locked) lets `from attention import ...`
import your `attention.ipynb` from this notebook's folder (its code cells, not its test cells), as
`grader check` imports your `attention.py`. Each exercise is still graded with the grader's own
versions of the course functions it calls, so a mistake is charged once, where it is.
"""


def grade_id_of(exercise_id: str) -> str:
    """nbgrader grade_id of an exercise's test cell: `attention.causal_mask` -> `attention-causal_mask`."""
    gid = exercise_id.replace(".", "-")
    if not GRADE_ID.match(gid):
        raise ValueError(f"exercise id {exercise_id!r} cannot be an nbgrader grade_id ({GRADE_ID.pattern})")
    return gid


def exercise_of_grade_id(grade_id: str) -> str:
    return grade_id.replace("-", ".", 1)


def write_source_notebooks(solutions_dir: str, out_dir: str, config: Config,
                           modules: list[str] | None = None) -> list[str]:
    """Write <out_dir>/<module>.ipynb for each solution module (or those in `modules`); returns the paths."""
    from grader.catalog import catalog
    specs = catalog()
    written = []
    os.makedirs(out_dir, exist_ok=True)
    for path in sorted(Path(solutions_dir).glob("*.py")):
        if modules and path.stem not in modules:
            continue
        nb = source_notebook(path.read_text(), path.stem, specs, config)
        dest = os.path.join(out_dir, f"{path.stem}.ipynb")
        nbformat.write(nb, dest)
        written.append(dest)
    return written


NBGRADER_CONFIG = """\
# Written by `grader notebooks`. nbgrader runs `alembic` (its database migrations) by name: the
# folder of the Python running nbgrader goes first on PATH, so `.venv/bin/nbgrader ...` works
# without activating the virtual environment.
import os
import sys

os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
c = get_config()  # noqa: F821 (nbgrader defines it)
"""
PATH_LINE = 'os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable)'


def write_nbgrader_config(course_dir: str) -> str:
    """Write <course_dir>/nbgrader_config.py when there is none; returns what was done, in words.
    An existing one is left alone; when it lacks the PATH line, the words say what to add."""
    path = os.path.join(course_dir, "nbgrader_config.py")
    if not os.path.exists(path):
        os.makedirs(course_dir, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(NBGRADER_CONFIG)
        return f"wrote {path} (puts this Python's folder on PATH for nbgrader's alembic)"
    with open(path, encoding="utf-8") as f:
        if PATH_LINE in f.read():
            return f"kept {path}"
    return (f"kept {path}; nbgrader calls `alembic` from PATH: run it with the virtual environment's bin folder "
            f"on PATH, or add to that file:\n    import os, sys\n    {PATH_LINE}, os.environ.get(\"PATH\", \"\")])")


def source_notebook(source: str, module: str, specs: dict, config: Config) -> nbformat.NotebookNode:
    """The nbgrader source notebook (nbformat 4.5) of one solution module, validated."""
    from grader.pipeline.scoring import max_points
    tree = ast.parse(source)
    lines = source.splitlines()
    cells = [_markdown(f"{module}-intro", _intro(module, ast.get_docstring(tree) or "", specs)),
             _markdown(f"{module}-how-graded", HOW_GRADED.format(**_example(module, specs))),
             _code(f"{module}-setup", setup_cell(tree, module, specs), locked=True)]
    pending: list[str] = []            # top-level code between functions, kept in order
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    for node in body:
        start = (node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno) - 1
        text = "\n".join(lines[start:_end(lines, node.end_lineno)])
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending.append(text)
            continue
        if pending:
            cells.append(_code(f"{module}-code-{len(cells)}", "\n".join(pending), locked=True))
            pending = []
        exercise_id = f"{module}.{node.name}"
        spec = specs.get(exercise_id)
        if spec is None:
            solution = "### BEGIN SOLUTION" in text
            cells.append(_code(f"{module}-{node.name}-{'solution' if solution else 'helper'}", text,
                               solution=solution, locked=not solution))
            continue
        pts = max_points(spec, config)
        cells.append(_markdown(f"{module}-{node.name}-description",
                               f"## `{exercise_id}` ({points(pts)} point{'s' if pts != 1 else ''})\n\n"
                               + docstring_markdown(ast.get_docstring(node) or "")))
        cells.append(_code(f"{module}-{node.name}-solution", _short_docstring(text, node, start), solution=True))
        cells.append(_code(grade_id_of(exercise_id), test_cell(exercise_id, node.name, pts, config),
                           grade=True, locked=True, points=pts))
    if pending:
        cells.append(_code(f"{module}-code-{len(cells)}", "\n".join(pending), locked=True))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nb


def setup_cell(tree: ast.Module, module: str, specs: dict) -> str:
    """The locked first code cell: the course-imports extension (course_imports.py), and what it is for."""
    from grader.frontends.notebooks.course_imports import MAGIC
    course = {s.module for s in specs.values()} - {module}
    imported = sorted({n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0
                       and n.module in course}
                      | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                         if a.name in course})
    if imported:
        which = ", ".join(f"{m}.ipynb" for m in imported)
        said = (f"# Locked setup. This notebook imports {' and '.join(imported)} below: the imports read your\n"
                f"# {which} from this folder (code cells only, as `grader check` reads them).\n")
    else:
        said = ("# Locked setup. `from <module> import ...` of another module of the course reads your\n"
                "# <module>.ipynb from this folder (code cells only, as `grader check` reads them).\n")
    return said + MAGIC


def _end(lines: list[str], end: int) -> int:
    """A definition's last line, counting the indented comments after its last statement
    (a function's `### END SOLUTION` is one: the AST ends at the `return` before it)."""
    j = end
    while j < len(lines) and (not lines[j].strip()
                              or (lines[j][:1] in (" ", "\t") and lines[j].lstrip().startswith("#"))):
        j += 1
    while j > end and not lines[j - 1].strip():
        j -= 1
    return j


def test_cell(exercise_id: str, function: str, points: float, config: Config) -> str:
    ex = config.exercise(exercise_id)
    extra = "".join(f", {k}={v!r}" for k, v in (("atol", ex.atol), ("rtol", ex.rtol), ("call_timeout", ex.call_timeout))
                    if v is not None)
    return ("# Locked autograder test: run it for feedback. Its value is the points you earned.\n"
            "from grader.notebook import check\n"
            f"check({exercise_id!r}, {function}, points={float(points)!r}{extra}).award()")


def _example(module: str, specs: dict) -> dict:
    ids = [i for i in specs if i.startswith(f"{module}.")]
    example = ids[0] if ids else f"{module}.function"
    return {"example": example, "function": example.split(".", 1)[1]}


def _intro(module: str, doc: str, specs: dict) -> str:
    n = sum(1 for i in specs if i.startswith(f"{module}."))
    return f"# {module}\n\n{docstring_markdown(doc)}\n\n*{n} graded exercise{'s' if n != 1 else ''} in this notebook.*"


def _short_docstring(text: str, node: ast.AST, offset: int) -> str:
    """The function's text with its docstring cut to the first line (the markdown cell above has it all)."""
    doc = ast.get_docstring(node)
    first = node.body[0]
    if not doc or not isinstance(first, ast.Expr):
        return text
    lines = text.splitlines()
    a, b = first.lineno - 1 - offset, first.end_lineno - offset
    indent = lines[a][: len(lines[a]) - len(lines[a].lstrip())]
    summary = doc.strip().splitlines()[0].replace('"""', "'''")
    lines[a:b] = [f'{indent}"""{summary} (The cell above explains it all.)"""']
    return "\n".join(lines)


# ------------------------------------------------------------------------- docstrings to Markdown
_ESCAPE = re.compile(r"([\\*_<\[\]])")


def docstring_markdown(doc: str) -> str:
    """Paragraphs stay paragraphs; indented blocks (formulas, shapes, examples) become code blocks;
    a line like `Args:` followed by an indented block becomes a bold heading over the block."""
    out = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines = block.splitlines()
        if not lines:
            continue
        if all(line.startswith(" ") for line in lines):
            out.append(_fenced(lines))
        elif len(lines) > 1 and all(line.startswith(" ") for line in lines[1:]):
            out.append(f"**{_escape(lines[0])}**\n\n{_fenced(lines[1:])}")
        else:
            out.append("\n".join(_escape(line) for line in lines))
    return "\n\n".join(out)


def _fenced(lines: list[str]) -> str:
    return "```text\n" + textwrap.dedent("\n".join(lines)).strip("\n") + "\n```"


def _escape(line: str) -> str:
    """Markdown-escape outside `code spans`: `f*c + i*g` must not turn into italics."""
    parts = line.split("`")
    return "`".join(p if i % 2 else _ESCAPE.sub(r"\\\1", p) for i, p in enumerate(parts))


def _markdown(cell_id: str, text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text, id=cell_id, metadata={"nbgrader": _meta(cell_id, locked=True)})


def _code(cell_id: str, text: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
          points: float | None = None) -> nbformat.NotebookNode:
    meta = {"nbgrader": _meta(cell_id, grade=grade, solution=solution, locked=locked, points=points)}
    return nbformat.v4.new_code_cell(text, id=cell_id, metadata=meta)


def _meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
          points: float | None = None) -> dict:
    if not GRADE_ID.match(grade_id):
        raise ValueError(f"{grade_id!r} is not a valid nbgrader grade_id ({GRADE_ID.pattern})")
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution}
    if grade:
        meta["points"] = float(points or 0.0)
    return meta
