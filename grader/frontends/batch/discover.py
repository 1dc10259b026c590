"""Find the students in a folder of submissions, and fingerprint what each handed in.

Two layouts, told apart per entry:
- one entry per student: `SUBMISSIONS/<student>/` shaped like exercises/ (or holding notebooks),
  or `SUBMISSIONS/<student>.zip` of such a folder;
- nbgrader's `submitted/<student>/<assignment>/` (SUBMISSIONS may be the course folder that holds
  `submitted/`, or `submitted/` itself): a student folder with no modules of its own but
  assignment folders inside; `--assignment` picks one when there are several. With `--assignment`, a
  student with no folder of that name has no submission (skipped, with a note), and when no student
  has one the name is refused (a typo would otherwise grade nobody).

Nothing here reads a submission as code; an entry that is not a submission is skipped with a note.
"""
from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import dataclass, replace

from grader.errors import UsageError
from grader.student_text import file_name
from grader.submission.limits import MAX_FILE
from grader.submission.notebook import MAX_NOTEBOOK

SOURCE_SUFFIXES = (".py", ".ipynb")
IGNORED = {"__pycache__", ".ipynb_checkpoints", "__MACOSX", ".DS_Store", ".git"}
# A folder's file larger than any the loader reads is fingerprinted by name and size only (a dataset
# beside the modules). A zip is hashed whole, whatever its size: the loader reads its members, and a
# 65 MiB zip fingerprinted by its size kept its old grade when the red team swapped a module inside.
HASH_WHOLE_FILE = max(MAX_FILE, MAX_NOTEBOOK)


@dataclass(frozen=True)
class Entry:
    student: str          # the id in grades.csv and the gradebook
    path: str             # what the engine grades: a folder or a .zip
    layout: str           # "folder", "zip" or "nbgrader"
    problem: str = ""     # set when the entry cannot be graded as it stands (said in the feedback)


@dataclass(frozen=True)
class Discovery:
    entries: tuple[Entry, ...]
    notes: tuple[str, ...]            # entries skipped, and why


def discover(root: str, assignment: str | None = None, exclude: str | None = None) -> Discovery:
    """Every student under `root`, sorted by id (`exclude`: a folder to pass over, e.g. the
    batch's own output folder). Raises FileNotFoundError if `root` is not a folder."""
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: not a folder of submissions (one folder or .zip per student, "
                                "or nbgrader's submitted/<student>/<assignment>/)")
    if _nbgrader_course(root):
        root = os.path.join(root, "submitted")
    entries: dict[str, Entry] = {}
    notes: list[str] = []
    assignments: set[str] = set()       # with --assignment: the assignment folders of those without it
    for name in sorted(os.listdir(root)):
        full = os.path.join(root, name)
        if name in IGNORED or name.startswith(".") or (exclude and os.path.abspath(full) == os.path.abspath(exclude)):
            continue
        if os.path.islink(full):
            notes.append(f"{name}: skipped (a symbolic link, not a submission)")
            continue
        if os.path.isdir(full):
            entry, note = _from_folder(name, full, assignment, assignments)
        elif name.endswith(".zip") and os.path.isfile(full):
            entry, note = Entry(name[:-4], full, "zip"), ""
        elif name.endswith(".zip"):         # a FIFO named .zip: reading it would wait forever
            entry, note = None, f"{name}: skipped (not a regular file: a pipe or a device)"
        else:
            entry, note = None, f"{name}: skipped (not a folder or a .zip)"
        if note:
            notes.append(note)
        if entry is None:
            continue
        # a name's bytes that are not UTF-8, escaped in the id and the problem said in the feedback
        entry = replace(entry, student=file_name(entry.student), problem=file_name(entry.problem))
        if entry.student in entries:
            shown = file_name(name)
            if shown in entries:    # escaped, one name can read as another ("b\\xff" beside b"b\xff")
                shown += "-" + hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
            notes.append(f"{file_name(name)}: student id '{entry.student}' already taken by "
                         f"{file_name(os.path.basename(entries[entry.student].path))}; graded as '{shown}'")
            entry = Entry(shown, entry.path, entry.layout, entry.problem)
        entries[entry.student] = entry
    if not entries and assignments:
        raise UsageError(f"--assignment {assignment}: no student has a folder of that name in {root}/<student>/"
                         f"{_suggest(assignment, assignments)}; the assignment folders there: "
                         f"{', '.join(map(file_name, sorted(assignments)))}")
    if not entries:
        notes.append(_nothing_found(root))
    return Discovery(tuple(entries[k] for k in sorted(entries)), tuple(map(file_name, notes)))


def _nothing_found(root: str) -> str:
    """What to say of a folder in which no student was found."""
    modules = sorted(n for n in os.listdir(root) if n.endswith((".py", ".ipynb")))
    if modules:
        return (f"no submissions in {root}, but modules of its own ({', '.join(modules[:3])}): a class is one "
                f"folder or .zip per student; to grade this one, run grader check --submission {root}")
    return f"no submissions in {root}: a class is one folder or .zip per student, or nbgrader's submitted/"


def _nbgrader_course(root: str) -> bool:
    """An nbgrader course folder: submitted/ beside nbgrader's files, or beside no modules of its own."""
    if not os.path.isdir(os.path.join(root, "submitted")):
        return False
    return (any(os.path.exists(os.path.join(root, n)) for n in ("nbgrader_config.py", "gradebook.db"))
            or not _has_sources(root))


def _has_sources(folder: str) -> bool:
    try:
        return any(n.endswith(SOURCE_SUFFIXES) for n in os.listdir(folder))
    except OSError:
        return False


def _suggest(word: str, options) -> str:
    close = difflib.get_close_matches(word, sorted(options), n=1)
    return f" (did you mean '{file_name(close[0])}'?)" if close else ""


def _from_folder(name: str, full: str, assignment: str | None, assignments: set[str]) -> tuple[Entry | None, str]:
    """A student's folder: graded as it is, unless it is nbgrader's <student>/<assignment>/. With `assignment`,
    a student who has no folder of that name has no submission (not graded: skipped with a note); the
    assignment folders they have are added to `assignments`."""
    if _has_sources(full):
        return Entry(name, full, "folder"), ""
    subdirs = sorted(d for d in os.listdir(full) if os.path.isdir(os.path.join(full, d))
                     and d not in IGNORED and not d.startswith("."))
    if assignment is not None and assignment in subdirs:
        return Entry(name, os.path.join(full, assignment), "nbgrader"), ""
    candidates = [d for d in subdirs if _has_sources(os.path.join(full, d))]
    if assignment is None and len(candidates) == 1:
        return Entry(name, os.path.join(full, candidates[0]), "nbgrader"), ""
    if assignment is None and len(candidates) > 1:
        problem = (f"{full}: holds several assignments ({', '.join(candidates)}); the instructor must "
                   "pass --assignment NAME")
        return Entry(name, full, "nbgrader", problem), f"{name}: {problem}"
    if assignment is not None:
        assignments.update(subdirs)
        found = f" (found {', '.join(subdirs)})" if subdirs else "" if os.listdir(full) else " (the folder is empty)"
        return None, f"{name}: no submission for assignment '{assignment}', not graded{found}"
    return Entry(name, full, "folder"), ""      # empty or unusual: the engine says what is missing


def content_hash(path: str) -> str:
    """sha256 over what was handed in: a zip's bytes, or a folder's file names and contents."""
    h = hashlib.sha256()
    if os.path.isfile(path):
        h.update(b"file\0")
        _hash_file(h, path, whole=True)
        return h.hexdigest()
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED)
        for f in sorted(filenames):
            if f in IGNORED or f.endswith(".pyc"):
                continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
            if os.path.islink(full):
                h.update(b"link\0" + os.readlink(full).encode("utf-8", "surrogateescape") + b"\0")
            elif os.path.isfile(full):
                _hash_file(h, full)
    return h.hexdigest()


def _hash_file(h, path: str, whole: bool = False) -> None:
    size = os.path.getsize(path)
    h.update(str(size).encode() + b"\0")
    if size > HASH_WHOLE_FILE and not whole:
        return
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)


_SAFE = re.compile(r"[^A-Za-z0-9._@+-]")
_SUFFIXED = re.compile(r"-[0-9a-f]{16}$")


def folder_name(student: str) -> str:
    """A file-system-safe folder name for a student's feedback, one per id: an id that is not safe as
    it is, or that ends as a changed one does, gets 16 hex digits of its SHA-256 after its safe form.
    So no student's folder can be another's (the red team named theirs 'alice_smith-038bd15a', which
    was then alice smith's, when 8 digits were added to unsafe ids only); matching 64 bits of a hash
    by trying names is out of reach."""
    safe = _SAFE.sub("_", student).strip(".") or "student"
    if safe != student or _SUFFIXED.search(student):
        safe += "-" + hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return safe
