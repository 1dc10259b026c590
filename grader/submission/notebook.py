"""A Jupyter notebook handed in as a submission, turned into the Python source of one module.

    notebook_source("attention.ipynb") -> "import torch\\n\\ndef causal_mask(T): ..."

The code cells are kept in order, each under a `# %% cell N` marker (N counts every cell,
markdown included, from 1, as Jupyter shows them). What is not Python is commented out, with
the line count kept: IPython line magics (`%timeit f()`, `x = %env`), shell escapes
(`!pip install ...`, `files = !ls`), help requests (`f?`), `get_ipython()` calls, top-level
`display(...)` calls (a builtin in Jupyter, which only shows a value), and whole cells under a
cell magic whose body is not Python (`%%bash`). The grader's own cells go too:
nbgrader's locked autograder test cells (metadata grade=true, solution=false), and the
notebook API's `from grader.notebook import ...` statements and top-level `check(...)` calls,
which would otherwise count as "importing the grader" for every exercise. Removing code never
lets a submission do more: what is left is imported in the sandbox like any module.

Nothing here imports or runs the notebook; a file that is not a notebook raises SubmissionError
with what is wrong and how to fix it.
"""
from __future__ import annotations

import ast
import io
import json
import os
import re
import tokenize

from grader.errors import SubmissionError
from grader.student_text import encodable
from grader.submission.limits import MAX_FILE
from grader.submission.reading import parse

MAX_NOTEBOOK = 64 << 20          # notebooks carry outputs (plots): far larger than their code
# Cell magics whose body is Python: the body is kept, the magic line commented out.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "python", "python3"}
_MAGIC_START = re.compile(r"^\s*(?:[%!?]|get_ipython\s*\(|(?:pip|conda|mamba)\s+(?:install|uninstall)\b)")
_MAGIC_ASSIGN = re.compile(r"^\s*[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!]")
_HELP = re.compile(r"^\s*[\w.]+\s*\?\??\s*$")
_DISPLAY = re.compile(r"^display\s*\(")
_OWN_DISPLAY = re.compile(r"^\s*(?:(?:async\s+)?def\s+display\b|display\s*(?::[^=]*)?=[^=]|class\s+display\b)",
                          re.MULTILINE)
FIX = "open it in Jupyter, save it (File > Save), and hand in the .ipynb file again"


def notebook_source(path: str, raw: bytes | None = None) -> str:
    """The Python source of the notebook at `path`, or of its bytes `raw` (a member of a zip named
    `path`; see the module docstring for what is kept)."""
    cells, language = _read_cells(path, raw)
    if language and language.lower() not in ("python", "python3", "ipython", "ipython3"):
        raise SubmissionError(f"{path}: a {language} notebook, not a Python one: the exercises are Python; "
                              "start from the course's notebook (its kernel is Python 3)")
    parts: list[str] = []
    has_code = False
    code_cells = [(number, cell, _text(cell.get("source", cell.get("input", ""))))
                  for number, cell in enumerate(cells, 1) if cell.get("cell_type") == "code"]
    defines_display = any(_OWN_DISPLAY.search(text) for _, _, text in code_cells)
    for number, cell, text in code_cells:
        if _is_autograder_test(cell):
            parts.append(f"# %% cell {number}: nbgrader autograder test (the grader's own cell, not graded)\n")
            continue
        code = python_of_cell(text, defines_display)
        has_code = has_code or bool(code.strip())
        parts.append(f"# %% cell {number}\n{code}\n")
    if not has_code:
        raise SubmissionError(f"{path}: the notebook has no code (no code cell with anything in it): was the "
                              f"right file handed in? Write your functions in its code cells, then {FIX}")
    source = "\n".join(parts)
    if len(source.encode()) > MAX_FILE:
        raise SubmissionError(f"{path}: its code is larger than {MAX_FILE >> 20} MiB; a notebook this big "
                              "is not an exercise")
    return source


def _read_cells(path: str, raw: bytes | None = None) -> tuple[list[dict], str]:
    try:
        if raw is None and os.path.getsize(path) > MAX_NOTEBOOK:
            raise SubmissionError(f"{path}: larger than {MAX_NOTEBOOK >> 20} MiB; clear its outputs "
                                  "(Kernel > Restart & Clear Output), save, and hand it in again")
        if raw is None:
            with open(path, "rb") as f:
                raw = f.read()
    except OSError as e:
        raise SubmissionError(f"{path}: cannot be read ({e.strerror or e})") from None
    if not raw.strip():
        raise SubmissionError(f"{path}: the file is empty, not a notebook; {FIX}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SubmissionError(f"{path}: not a Jupyter notebook (the file is not UTF-8 text; is it another "
                              f"format renamed to .ipynb?); {FIX}") from None
    except json.JSONDecodeError as e:
        raise SubmissionError(f"{path}: not a readable Jupyter notebook: its JSON is broken at line {e.lineno}, "
                              f"column {e.colno} ({e.msg}); the file was probably cut short or edited by "
                              f"hand; {FIX}") from None
    except (RecursionError, MemoryError):      # valid JSON nested deeper than the decoder goes (the red team's)
        raise SubmissionError(f"{path}: not a readable Jupyter notebook: its JSON nests too deeply to read (a "
                              f"notebook's cells and metadata are a few levels deep); {FIX}") from None
    if not isinstance(data, dict):
        raise SubmissionError(f"{path}: valid JSON but not a Jupyter notebook (a notebook is a JSON object "
                              f"with a \"cells\" list); {FIX}")
    cells = data.get("cells")
    if cells is None and isinstance(data.get("worksheets"), list):     # nbformat 3
        cells = [c for w in data["worksheets"] if isinstance(w, dict) for c in w.get("cells", [])]
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise SubmissionError(f"{path}: valid JSON but not a Jupyter notebook (no \"cells\" list of cell "
                              f"objects; keys found: {', '.join(sorted(map(encodable, data))[:8]) or 'none'}); {FIX}")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    spec = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    language = info.get("name") or spec.get("language") or ""
    return cells, encodable(language) if isinstance(language, str) else ""


def _text(source) -> str:
    """A cell's source as text a file can hold (JSON's lone surrogates shown as escapes) and Python
    reads (a null byte, which JSON carries as \\u0000 and Python refuses anywhere in a source, left
    out, as a .py file's are: grader.submission.reading.decoded)."""
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    return encodable(source).replace("\x00", "") if isinstance(source, str) else ""


def _is_autograder_test(cell: dict) -> bool:
    """nbgrader's locked test cells: graded, not a solution (nbgrader.utils.is_grade/is_solution)."""
    meta = cell.get("metadata")
    nb = meta.get("nbgrader") if isinstance(meta, dict) else None
    return isinstance(nb, dict) and bool(nb.get("grade")) and not nb.get("solution")


# --------------------------------------------------------------------------- one cell
def python_of_cell(text: str, defines_display: bool = False) -> str:
    """The cell's text with IPython-only syntax and grader calls commented out (same line count).
    A top-level `display(...)` goes too, unless the notebook defines a `display` of its own
    (`defines_display`): Jupyter's is a builtin there, and it only shows a value."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        name = magic[0] if magic else ""
        lines[first] = _commented(lines[first], "cell magic")
        if name not in PYTHON_CELL_MAGICS:
            return "\n".join(lines[:first + 1] + [f"# {line}" if line else line for line in lines[first + 1:]])
    statements = _statements("\n".join(lines))
    for start, end in statements:
        head = lines[start - 1]
        if _MAGIC_START.match(head) or _MAGIC_ASSIGN.match(head) or _HELP.match(head):
            _blank(lines, start, end, "IPython syntax, not run by the grader")
        elif _DISPLAY.match(head) and not defines_display:
            _blank(lines, start, end, "Jupyter's display, not run by the grader")
    _drop_grader_calls(lines)
    return "\n".join(lines)


def _statements(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of each logical line, 1-based; lines inside strings or brackets
    never start one. When the text cannot be tokenized, every line is its own statement."""
    out: list[tuple[int, int]] = []
    start = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
                continue
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if start is not None:
                    out.append((start, tok.start[0]))
                start = None
                continue
            if start is None:
                start = tok.start[0]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        done = out[-1][1] if out else 0
        out += [(i, i) for i in range(done + 1, text.count("\n") + 2)]
    return out


def _commented(line: str, why: str) -> str:
    return f"# ({why}) {line.strip()}"


def _blank(lines: list[str], start: int, end: int, why: str) -> None:
    """Comment out lines start..end; inside a block the first becomes `pass` so the block stays valid."""
    head = lines[start - 1]
    indent = head[: len(head) - len(head.lstrip())]
    lines[start - 1] = (f"{indent}pass  " if indent else "") + _commented(head, why)
    for i in range(start, end):
        lines[i] = f"{indent}# {lines[i].strip()}" if lines[i].strip() else lines[i]


def _drop_grader_calls(lines: list[str]) -> None:
    """Comment out top-level `from grader.notebook import ...` and calls of what it imported."""
    try:
        tree = parse("\n".join(lines))
    except SyntaxError:
        return                  # the sandbox's salvage deals with cells that do not parse
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "grader.notebook" and node.level == 0:
            names.update(a.asname or a.name for a in node.names)
            _blank(lines, node.lineno, node.end_lineno, "the notebook API, not run by the grader")
    if not names:
        return
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        while isinstance(value, (ast.Call, ast.Attribute)):      # check(...), check(...).award()
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in names:
                _blank(lines, node.lineno, node.end_lineno, "the notebook API, not run by the grader")
                break
            value = value.func if isinstance(value, ast.Call) else value.value
