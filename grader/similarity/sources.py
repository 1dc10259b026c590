"""Submissions and starter files read as module texts, with grader.submission's own readers.

A student's folder, .zip, .py or .ipynb is read by grader.submission.loader.load_submission: a
notebook is its code cells (grader.submission.notebook), magics commented out, cell markers as
comments (comments are not compared). Nothing is imported or run. What cannot be read is a note
naming the student and the reason, never the end of the check.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Iterable, Mapping

from grader.errors import SubmissionError
from grader.similarity.fingerprints import prepare
from grader.similarity.records import Document, Term
from grader.submission.loader import load_submission
from grader.submission.reading import parse

MAX_CHARS = 200_000         # of one module: an exercise module is a few thousand characters


@dataclass(frozen=True)
class ClassTexts:
    documents: tuple[Document, ...]
    students: tuple[str, ...]               # students with at least one module read
    notes: tuple[str, ...]


def read_class(submissions: Mapping[str, str], modules: Iterable[str], term: Term = Term.CURRENT,
               problems: Mapping[str, str] | None = None) -> ClassTexts:
    """Each student's modules among `modules` (student -> path of the submission).
    `problems`: students known to be unreadable already (say why), skipped with that note."""
    wanted = list(modules)
    documents: list[Document] = []
    students: list[str] = []
    notes: list[str] = []
    where = "" if term is Term.CURRENT else f" ({term.value})"
    for student, path in submissions.items():
        if problems and problems.get(student):
            notes.append(f"{student}{where}: not compared: {problems[student]}")
            continue
        try:
            submission = load_submission(path)
        except SubmissionError as e:
            notes.append(f"{student}{where}: not compared: {e}")
            continue
        notes += [f"{student}{where}: {p}" for p in submission.problems]
        found = [m for m in wanted if m in submission.files]
        if not found:
            if not submission.problems:
                notes.append(f"{student}{where}: not compared: no course module in {path} "
                             f"(expected files such as {wanted[0] if wanted else 'attention'}.py or .ipynb)")
            continue
        students.append(student)
        for module in found:
            text = submission.files[module]
            if len(text) > MAX_CHARS:
                notes.append(f"{student}{where}: {module} has {len(text):,} characters; only the first "
                             f"{MAX_CHARS:,} were compared")
                text = text[:MAX_CHARS]
            hidden = code_made_at_run_time(text)
            if hidden:
                notes.append(f"{student}{where}: {module} runs code made at run time ({hidden}): what that code "
                             "is was not in its text and was not compared; read it by hand")
            documents.append(Document(student, term, module, prepare(text),
                                      submission.origin.get(module, path)))
    return ClassTexts(tuple(documents), tuple(students), tuple(notes))


# Calls that run code given as a value: what they run is not in the text that is compared.
_RUNS_CODE = {"exec", "eval", "compile", "loads"}      # loads: marshal.loads (code objects); json's runs none


def code_made_at_run_time(text: str) -> str:
    """Where the module runs code that its text does not hold ("exec at line 3"), "" when it does
    not (or cannot be read). The red team's copy was exec(zlib.decompress(base64.b64decode('...'))):
    one string to the fingerprints, far below the floor, and full marks. Only calls of exec, eval
    and compile on anything but a string written out, and marshal.loads, are named: what they run
    is provably not in the text (Python's own: re.compile or torch.compile are not); any other way
    to hide code is not guessed at."""
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return ""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in _RUNS_CODE:
            continue
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if owner != ("marshal" if name == "loads" else "builtins") and isinstance(func, ast.Attribute):
            continue                    # re.compile, torch.compile, json.loads: not Python's own
        if name == "loads" and not owner:
            continue
        if name != "loads" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(
                node.args[0].value, str):
            continue                    # exec("x = 1"): the code is in the text
        return f"{owner + '.' if owner else ''}{name} at line {node.lineno}"
    return ""


def read_boilerplate(paths: Iterable[str], modules: Iterable[str], course: Iterable[str] = ()
                     ) -> tuple[dict[str, list[str]], list[str]]:
    """module -> starter texts to subtract from it, and what was read (for the report).

    Each path is a folder, .zip, .py or .ipynb (the stubs in exercises/, a released notebook, a
    file of helpers every student got). A file named after a module is that module's starter
    code (one of the `course`'s modules not compared now is passed over); any other file is
    subtracted from every module. A path that cannot be read raises SubmissionError:
    subtracting less than the instructor asked for would inflate every score."""
    wanted = list(modules)
    others = set(course) - set(wanted)
    texts: dict[str, list[str]] = {m: [] for m in wanted}
    read: list[str] = []
    for path in paths:
        if not os.path.exists(path):
            raise SubmissionError(f"{path}: no such starter file or folder (--boilerplate takes a folder, "
                                  ".zip, .py or .ipynb of code every student received)")
        submission = load_submission(path)
        if submission.problems and not submission.files:
            raise SubmissionError(f"{path}: no starter code could be read: {'; '.join(submission.problems)}")
        for name, text in sorted(submission.files.items()):
            if name in others:
                continue
            targets = [name] if name in texts else wanted
            for module in targets:
                texts[module].append(text)
            read.append(submission.origin.get(name, path))
    return texts, read
