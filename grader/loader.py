"""Turn what a student handed in (a folder, a .zip, a notebook) into module sources.

Nothing here imports or runs student code. A module that cannot be imported as written
(syntax error, `sys.exit()` or an endless loop at import) can be *salvaged*: its function
definitions, imports and plain assignments are kept, top-level statements that run code are
dropped, so the functions that are fine still get graded.
"""
from __future__ import annotations

import ast
import io
import json
import os
import re
import zipfile
from dataclasses import dataclass, field

MAX_FILE = 2 << 20          # 2 MiB per source file
MAX_FILES = 200


class SubmissionError(Exception):
    """The submission as a whole is unreadable; the message says why and how to fix it."""


@dataclass(frozen=True)
class Submission:
    path: str
    files: dict[str, str]                      # "attention" -> source
    origin: dict[str, str] = field(default_factory=dict)   # "attention" -> path shown to the student
    problems: tuple[str, ...] = ()


def load_submission(path: str) -> Submission:
    if not os.path.exists(path):
        raise SubmissionError(f"{path}: no such file or folder (pass --submission PATH, a folder of "
                              "exercise modules, a .zip of one, or a .ipynb notebook)")
    if os.path.isdir(path):
        return _from_dir(path)
    if path.endswith(".zip"):
        return _from_zip(path)
    if path.endswith(".ipynb"):
        from grader.notebooks import notebook_source   # the notebook front-end owns .ipynb parsing
        module = os.path.splitext(os.path.basename(path))[0]
        return Submission(path, {module: notebook_source(path)}, {module: path})
    if path.endswith(".py"):
        module = os.path.splitext(os.path.basename(path))[0]
        return Submission(path, {module: _read(path)}, {module: path})
    raise SubmissionError(f"{path}: not a folder, .zip, .py or .ipynb file")


def _read(path: str) -> str:
    if os.path.getsize(path) > MAX_FILE:
        raise SubmissionError(f"{path}: larger than {MAX_FILE >> 20} MiB; a source file this big is not an exercise")
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _from_dir(path: str) -> Submission:
    files, origin = {}, {}
    for name in sorted(os.listdir(path))[:MAX_FILES]:
        full = os.path.join(path, name)
        if name.endswith(".py") and os.path.isfile(full) and not os.path.islink(full):
            module = name[:-3]
            files[module] = _read(full)
            origin[module] = full
    if not files:
        nb = [n for n in sorted(os.listdir(path)) if n.endswith(".ipynb")]
        if nb:
            from grader.notebooks import notebook_source
            for n in nb:
                module = n[:-6]
                files[module] = notebook_source(os.path.join(path, n))
                origin[module] = os.path.join(path, n)
    problems = () if files else (f"{path}: no .py modules found (expected files such as attention.py)",)
    return Submission(path, files, origin, problems)


def _from_zip(path: str) -> Submission:
    try:
        zf = zipfile.ZipFile(path)
        infos = [i for i in zf.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError) as e:
        raise SubmissionError(f"{path}: not a readable zip archive ({e}); re-create it with `zip -r`") from None
    files, origin = {}, {}
    with zf:
        for info in infos[: MAX_FILES * 5]:
            name = info.filename
            base = os.path.basename(name)
            if "__MACOSX" in name or not base.endswith(".py") or base.startswith("."):
                continue
            if info.file_size > MAX_FILE:
                continue
            try:
                source = zf.read(info).decode("utf-8", "replace")
            except Exception as e:   # corrupt member
                raise SubmissionError(f"{path}: member {name} cannot be read ({e})") from None
            module = base[:-3]
            if module not in files or name.count("/") < origin[module].count("/"):
                files[module], origin[module] = source, f"{path}:{name}"
    problems = () if files else (f"{path}: the archive holds no .py modules",)
    return Submission(path, files, origin, problems)


_SAFE_TOP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_HEAD = re.compile(r"^(?:@|def |async def |class |import |from |[A-Za-z_][\w.]*\s*[:=(]|if |for |while |try:|with |print\b|[A-Za-z_])")


def salvage(source: str) -> tuple[str, list[str]]:
    """A version of `source` that imports without running top-level code, and what was dropped.

    Line numbers are kept (dropped lines become blank) so tracebacks still point at the
    student's own lines. A syntax error drops only the top-level block that holds it.
    """
    lines = source.splitlines()
    blocks: list[tuple[int, int]] = []           # [start, end) over lines
    start = 0
    for i, text in enumerate(lines):
        if i and text and not text[0].isspace() and _HEAD.match(text) and not _continues(lines, i):
            blocks.append((start, i))
            start = i
    blocks.append((start, len(lines)))
    kept = [""] * len(lines)
    dropped: list[str] = []
    for a, b in blocks:
        chunk = "\n".join(lines[a:b])
        if not chunk.strip():
            continue
        try:
            tree = ast.parse(chunk)
        except SyntaxError as e:
            dropped.append(f"lines {a + 1}-{b}: syntax error ({e.msg}, line {a + (e.lineno or 1)})")
            continue
        if all(_safe(node) for node in tree.body):
            kept[a:b] = lines[a:b]
        else:
            dropped.append(f"lines {a + 1}-{b}: top-level code that runs at import")
    return "\n".join(kept) + "\n", dropped


def _continues(lines: list[str], i: int) -> bool:
    """Column-0 lines that belong to the previous block: else/elif/except/finally, closers, decorators' targets."""
    text = lines[i]
    if re.match(r"^(else|elif|except|finally)\b", text) or text[0] in ")]}":
        return True
    prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
    return prev.startswith("@")


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
