"""Fixture submissions built from scenario files: the worked solution with only the scenario changed.

tests/fixtures/submissions/<name>/ holds one of two things:

- a whole submission, graded as it is (`is_whole`): the alt_* folders, independently written
  solutions, and syntax_error, whose point is a file that cannot be parsed (so nothing can be
  taken out of it and spliced into the solution);
- a scenario: `<module>.py` with a docstring that states the attack and what must hold, the
  functions it changes and any top-level code it adds. `build` turns it into the real module:
  solutions/<module>.py where each scenario function replaces the solution's function of that
  name, the scenario's imports follow the solution's (those the solution already has are not
  repeated), and every other top-level statement goes where the scenario puts it: just before the
  next function it replaces, or at the end of the module after the last one. The solution's
  `### BEGIN/END SOLUTION` markers are dropped (a student's file has none, as a stub has none) and a
  first comment line names the scenario. A scenario file with a line `### APPENDED AS WRITTEN`
  is built from what is above that line; what is below it is appended to the module as it is,
  unparsed (a syntax error in a helper of an otherwise correct module). A course module that a
  built one imports (moe.py imports transformer, which imports attention) is solutions/' own,
  markers dropped, unless the scenario has a file for it.

`submission(name)` is the folder to grade: a whole one is the fixture folder itself; a scenario is
materialised once per process in a temporary folder (removed at exit), never in the source tree.

    from scenarios import submission
    grade_dir(submission("hostile_prints"), "attention")
"""
from __future__ import annotations

import ast
import atexit
import functools
import re
import shutil
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
SUBMISSIONS = Path(__file__).resolve().parent / "fixtures" / "submissions"
MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
AS_WRITTEN = re.compile(r"^### APPENDED AS WRITTEN\b.*$\n?", re.M)


def is_whole(name: str) -> bool:
    """A folder graded as it is rather than built from the solution (see the module docstring)."""
    return name.startswith("alt_") or name == "syntax_error"


def names() -> list[str]:
    """Every fixture folder under tests/fixtures/submissions/, whole ones included."""
    return sorted(p.name for p in SUBMISSIONS.iterdir() if p.is_dir())


def replace_function(source: str, name: str, new: str) -> str:
    """`source` with its top-level function `name` (decorators included) replaced by the text `new`."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
            lines = source.splitlines()
            new_lines = textwrap.dedent(new).strip("\n").splitlines()
            return "\n".join(lines[:start] + new_lines + lines[node.end_lineno:]) + "\n"
    raise KeyError(f"no function {name} in the module")


def _statements(source: str):
    """(node, text) for each top-level statement after the module docstring; a statement's text
    includes the comment lines right above it."""
    lines = source.splitlines()
    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    for node in body:
        start = (node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno) - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        yield node, "\n".join(lines[start:node.end_lineno])


def build(solution: str, scenario: str, header: str) -> str:
    """The module a scenario stands for (see the module docstring for the rules)."""
    scenario, *as_written = AS_WRITTEN.split(scenario, maxsplit=1)
    solution = "\n".join(line for line in solution.splitlines() if not MARKER.match(line)) + "\n"
    tree = ast.parse(solution)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    known_imports = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    imports, replaced, pending = [], {}, []
    for node, text in _statements(scenario):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if ast.unparse(node) not in known_imports:
                imports.append(text)
        elif isinstance(node, ast.FunctionDef) and node.name in functions:
            replaced[node.name], pending = pending + [text], []
        else:
            pending.append(text)
    for name, blocks in replaced.items():
        solution = replace_function(solution, name, "\n\n\n".join(blocks))
    if imports:
        last = max(n.end_lineno for n in ast.parse(solution).body if isinstance(n, (ast.Import, ast.ImportFrom)))
        lines = solution.splitlines()
        solution = "\n".join(lines[:last] + imports + lines[last:]) + "\n"
    tail = "".join(f"\n\n{text}\n" for text in pending)
    if as_written:
        tail += "\n\n" + as_written[0].strip("\n") + "\n"
    return f"# {header}\n{solution}{tail}"


def source(name: str, module: str = "attention") -> str:
    """The text of `module` in the submission `name` (built, for a scenario)."""
    return (submission(name) / f"{module}.py").read_text()


@functools.cache
def _workdir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="scenario-submissions-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def submission(name: str) -> Path:
    """The folder to grade for the fixture `name`: the fixture itself when whole, else the built one."""
    folder = SUBMISSIONS / name
    if not folder.is_dir():
        raise KeyError(f"no fixture folder {name!r} in {SUBMISSIONS} (there are: {', '.join(names())})")
    if is_whole(name):
        return folder
    dest = _workdir() / name
    dest.mkdir()
    for path in sorted(folder.glob("*.py")):
        header = (f"Test fixture ({name}): built by tests/scenarios.py from solutions/{path.name} "
                  f"and tests/fixtures/submissions/{name}/{path.name}.")
        (dest / path.name).write_text(build((SOLUTIONS / path.name).read_text(), path.read_text(), header))
    needed = [m for path in sorted(dest.glob("*.py")) for m in course_imports(path.read_text())]
    while needed:
        module = needed.pop()
        if not (dest / f"{module}.py").exists():
            solution = (SOLUTIONS / f"{module}.py").read_text()
            (dest / f"{module}.py").write_text(build(solution, "", f"Test fixture ({name}): solutions/{module}.py, "
                                                     "which a module of the scenario imports."))
            needed += course_imports(solution)
    return dest


def course_imports(source: str) -> list[str]:
    """The course modules (solutions/<name>.py) that `source` imports at its top level."""
    try:
        body = ast.parse(source).body
    except SyntaxError:         # a scenario broken on purpose: what it imports is its own files
        return []
    names = []
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
    return [n for n in dict.fromkeys(names) if (SOLUTIONS / f"{n}.py").is_file()]
