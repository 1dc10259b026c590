"""Turn what a student handed in (a folder, a .zip, a notebook) into module sources.

Nothing here imports or runs student code. A module that cannot be imported as written
(syntax error, `sys.exit()` or an endless loop at import) can be *salvaged*: its function
definitions, imports and plain assignments are kept, top-level statements that run code are
dropped, so the functions that are fine still get graded. The copy that the student's other
modules import (`salvage_for_importers`) also keeps, for each definition lost to a syntax error,
a one-line stand-in that raises when called: `from broken import f` still imports.
"""
from __future__ import annotations

import ast
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field

from grader.errors import SubmissionError
from grader.student_text import file_name
from grader.submission.limits import MAX_FILE, MAX_FILES
from grader.submission.notebook import MAX_NOTEBOOK, notebook_source
from grader.submission.reading import TOP_LEVEL, Room, TooDeep, at_most, decoded, nested, parse

__all__ = ["Submission", "SubmissionError", "load_submission", "on_disk", "salvage", "salvage_for_importers"]


@dataclass(frozen=True)
class Submission:
    """`origin` and `problems` name files as the student knows them, relative to the submission
    ("attention.py", "bob/attention.py" inside a zip), never by the grading machine's folders."""

    path: str
    files: dict[str, str]                      # "attention" -> source
    origin: dict[str, str] = field(default_factory=dict)   # "attention" -> path shown to the student
    problems: tuple[str, ...] = ()


def shown_name(path: str) -> str:
    """The submission as its student knows it: the last part of its path ("bob", "bob.zip")."""
    return file_name(os.path.basename(os.path.normpath(path)) or path)


def on_disk(submission: str, origin: str) -> str:
    """Where a module's `origin` (relative to `submission`) is on this machine, as a path built
    on `submission` as it was given; "" for a member of a zip (CI front-ends annotate real files)."""
    if not origin or submission.endswith(".zip"):
        return ""
    return os.path.join(submission, origin) if os.path.isdir(submission) else submission


def load_submission(path: str) -> Submission:
    if not os.path.exists(path):
        raise SubmissionError(f"{path}: no such file or folder (pass --submission PATH, a folder of "
                              "exercise modules, a .zip of one, or a .ipynb notebook)")
    if os.path.isdir(path):
        return _from_dir(path)
    if path.endswith(".zip"):
        return _from_zip(path)
    name = shown_name(path)
    module, problems = os.path.splitext(name)[0], []
    if path.endswith(".ipynb"):
        return Submission(path, {module: _notebook(path, name)}, {module: name})
    if path.endswith(".py"):
        return Submission(path, {module: _read(path, name, problems)}, {module: name}, tuple(problems))
    raise SubmissionError(f"{name}: not a folder, .zip, .py or .ipynb file")


def _read(path: str, shown: str, problems: list[str]) -> str:
    if os.path.getsize(path) > MAX_FILE:
        raise SubmissionError(f"{shown}: larger than {MAX_FILE >> 20} MiB; a source file this big is not an exercise")
    with open(path, "rb") as f:
        return decoded(f.read(), shown, problems)


def _notebook(path: str, shown: str, raw: bytes | None = None) -> str:
    """notebook_source(path), its errors naming the notebook as `shown` (they start "<path>: ")."""
    try:
        return notebook_source(path, raw)
    except SubmissionError as e:
        text = str(e)
        raise SubmissionError(shown + text[len(path):] if text.startswith(path + ": ") else text) from None


# A link inside a submission is never followed, whatever it names: its target may be anywhere (another
# student's notebook, the instructor's source notebook, a file outside the sandbox's reach), and the
# grader that reads it is not confined. A zip's links are refused alike (_from_zip).
_LINKED = "%s: a symbolic link, not a file: put the file itself in the submission"


def _shadowed(notebook: str, module: str) -> str:
    return (f"{notebook}: not graded, {module} is: a module is read from its .py when both are there; remove "
            "the one you do not mean to hand in")


def _from_dir(path: str) -> Submission:
    """Modules from `*.py` files, and from `*.ipynb` notebooks for modules without a `.py`.
    An unreadable notebook is a problem of that module only, not of the whole folder."""
    files, origin, problems, room = {}, {}, [], Room()
    names = sorted(os.listdir(path))[:MAX_FILES]
    for name in [n for n in names if n.endswith((".py", ".ipynb")) and file_name(n) != n]:
        problems.append(f"{file_name(name)}: passed over: its name is not UTF-8 text (a byte shown as \\x..): "
                        "rename it to the module's name, such as attention.py")
    names = [n for n in names if file_name(n) == n]
    for name in names:
        full = os.path.join(path, name)
        if name.endswith(".py") and os.path.islink(full):
            problems.append(_LINKED % name)
        elif name.endswith(".py") and os.path.isfile(full) and room.takes(name, os.path.getsize(full), problems):
            files[name[:-3]], origin[name[:-3]] = _read(full, name, problems), name
    for name in names:
        full = os.path.join(path, name)
        if not name.endswith(".ipynb"):
            continue
        if name[:-6] in files:
            problems.append(_shadowed(name, origin[name[:-6]]))
            continue
        if os.path.islink(full):
            problems.append(_LINKED % name)
        elif os.path.isfile(full) and room.takes(name, os.path.getsize(full), problems):
            try:
                files[name[:-6]], origin[name[:-6]] = _notebook(full, name), name
            except SubmissionError as e:
                problems.append(str(e))
    problems += _folders_imported(path, names, files, origin)
    if not files and not problems:
        inside = nested(path, names)
        problems.append(f"{shown_name(path)}: no .py modules found (expected files such as attention.py, or "
                        "notebooks such as attention.ipynb)" + (f"; found {', '.join(inside)} in a folder inside: "
                                                                "put the modules at the top of the submission"
                                                                if inside else ""))
    return Submission(path, files, origin, at_most([file_name(p) for p in problems]))


def _folders_imported(path: str, names: list[str], files: dict[str, str], origin: dict[str, str]) -> list[str]:
    """A folder of Python code beside the modules that one of them imports (a package of helpers):
    the child gets the modules at the top only, so the import fails there, said once with the fix."""
    out = []
    for name in names:
        full = os.path.join(path, name)
        if not name.isidentifier() or name in files or os.path.islink(full) or not os.path.isdir(full):
            continue
        importing = re.compile(rf"^\s*(?:from\s+{name}\b|import\s+(?:[\w.]+\s*,\s*)*{name}\b)", re.MULTILINE)
        by = sorted(origin[m] for m, text in files.items() if importing.search(text))
        if by and any(f.endswith(".py") for f in os.listdir(full)):
            out.append(f"{name}/: a folder of code that {by[0]} imports: only the files at the top of the submission "
                       f"are graded, so it cannot be imported there; put its code in {name}.py beside {by[0]}")
    return out


def _from_zip(path: str) -> Submission:
    shown = shown_name(path)
    try:
        zf = zipfile.ZipFile(path)
        infos = [i for i in zf.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError) as e:
        raise SubmissionError(f"{shown}: not a readable zip archive ({e}); re-create it with `zip -r`") from None
    except UnicodeDecodeError:
        raise SubmissionError(f"{shown}: a file name in the archive is marked as UTF-8 text but is not; re-create "
                              "the archive with `zip -r` from files named as the modules (attention.py)") from None
    files, origin, problems, passed_over, room = {}, {}, [], {}, Room()
    notebooks = {}
    with zf:
        for info in infos[: MAX_FILES * 5]:
            name = info.filename
            base = os.path.basename(name)
            if "__MACOSX" in name or not base.endswith((".py", ".ipynb")) or base.startswith("."):
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                problems.append(f"{name}: a symbolic link in the archive, not a file: zip the file itself "
                                "(zip -r without -y)")
                continue
            limit = MAX_NOTEBOOK if base.endswith(".ipynb") else MAX_FILE
            if info.file_size > limit:
                problems.append(f"{name}: larger than {limit >> 20} MiB; a source file this big is not an exercise")
                continue
            if not room.takes(name, info.file_size, problems):
                continue
            try:
                data = zf.read(info)
            except Exception as e:   # corrupt member
                raise SubmissionError(f"{shown}: member {name} cannot be read ({e})") from None
            if base.endswith(".ipynb"):
                notebooks.setdefault(base[:-6], []).append((name, data))
                continue
            source, module = decoded(data, name, problems), base[:-3]
            if module not in files or name.count("/") < origin[module].count("/"):
                if module in files:
                    passed_over.setdefault(module, []).append(origin[module])
                files[module], origin[module] = source, name
            else:
                passed_over.setdefault(module, []).append(name)
        for module, found in notebooks.items():       # for modules without a .py, as in a folder
            if module in files:
                problems += [_shadowed(name, origin[module]) for name, _ in found]
                continue
            name, data = min(found, key=lambda f: f[0].count("/"))
            if len(found) > 1:
                passed_over[module] = [n for n, _ in found if n != name]
            try:
                files[module], origin[module] = _notebook(name, name, data), name
            except SubmissionError as e:
                problems.append(str(e))
    problems += [f"{origin[m]}: graded; the archive holds more than one {os.path.basename(origin[m])}, and "
                 f"{', '.join(sorted(others)[:3])} {'were' if len(others) > 1 else 'was'} passed over (the one "
                 "nearest the top is graded)" for m, others in sorted(passed_over.items()) if m in origin]
    if not files and not problems:
        problems.append(f"{shown}: the archive holds no .py modules or .ipynb notebooks")
    return Submission(path, files, origin, at_most(problems))


_SAFE_TOP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BOUNDARY = re.compile(r"^(?:@|def |async def |class )")
MAX_REPAIRS = 20


_DEFINITION = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")


def salvage(source: str, keep_assignments: bool = False) -> tuple[str, list[str]]:
    """A version of `source` that imports without running top-level code, and what was dropped.
    `keep_assignments`: top-level assignments stay, calls and all (a namedtuple, a compiled pattern or
    a config dict the functions use), for a first try (grader.pipeline.imports).

    A syntax error drops the top-level definition that holds it (from the `def`/`class` line
    before the error to the next top-level statement; if that guess cuts through a string,
    the next parse fails further on and drops more); then top-level statements that run code (calls, loops,
    `sys.exit()`) are dropped. Line numbers are kept (dropped lines become blank) so tracebacks
    still point at the student's own lines.
    """
    lines, dropped, _ = _salvage(source, keep_assignments)
    return "\n".join(lines) + "\n", dropped


def salvage_for_importers(source: str, module: str, why: str, keep_assignments: bool = False) -> str:
    """salvage(source) as the student's other modules import it: each top-level definition lost
    to a syntax error becomes, on its own line, a function that raises ImportError saying why.
    A module doing `from <module> import f` then imports, and only a call of `f` fails (unless
    the exercise puts the grader's substitute in its place)."""
    lines, _, lost = _salvage(source, keep_assignments)
    for index, name in lost:
        said = (f"{name} could not be loaded: {module}.py does not import as written ({why}) and the "
                "grader had to skip the part that holds it")
        lines[index] = f"def {name}(*args, **kwargs): raise ImportError({said!r})"
    fixed = "\n".join(lines) + "\n"
    try:
        parse(fixed)
    except SyntaxError:     # a stand-in landed inside what the salvage guessed wrong: none, then
        return salvage(source, keep_assignments)[0]
    return fixed


def _salvage(source: str, keep_assignments: bool = False) -> tuple[list[str], list[str], list[tuple[int, str]]]:
    """The salvaged lines, what was dropped (in words), and (line index, name) of every
    top-level definition dropped for a syntax error."""
    lines = source.splitlines()
    dropped: list[str] = []
    lost: list[tuple[int, str]] = []
    for _ in range(MAX_REPAIRS):
        try:
            tree = parse("\n".join(lines))
            break
        except SyntaxError as e:
            line = max(1, min(e.lineno or 1, len(lines)))
            start = next((i for i in range(line - 1, -1, -1) if _BOUNDARY.match(lines[i])), 0)
            while start > 0 and lines[start - 1].startswith("@"):
                start -= 1
            end = next((i for i in range(line, len(lines)) if TOP_LEVEL.match(lines[i])), len(lines))
            if isinstance(e, TooDeep):          # where it is, exactly: the statement that holds it
                start, end = line - 1, max(line, min(e.end_lineno or line, len(lines)))
            dropped.append(f"lines {start + 1}-{end}: syntax error ({e.msg}, line {line})")
            lost += [(i, m.group(1)) for i in range(start, end) if (m := _DEFINITION.match(lines[i]))]
            lines[start:end] = [""] * (end - start)
    else:
        return [""], dropped + ["the rest: too many syntax errors"], []
    for node in tree.body:
        if not _safe(node) and not (keep_assignments and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))):
            first = node.lineno - 1
            lines[first:node.end_lineno] = [""] * (node.end_lineno - first)
            dropped.append(f"line {node.lineno}: top-level code that runs at import")
    return lines, dropped, lost


def _safe(node: ast.stmt) -> bool:
    if isinstance(node, _SAFE_TOP):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
        return value is not None and not any(isinstance(n, (ast.Call, ast.Lambda, ast.ListComp, ast.GeneratorExp))
                                             for n in ast.walk(value))
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True      # a docstring
    return False
