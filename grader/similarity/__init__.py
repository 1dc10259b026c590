"""Code similarity across a class: which submissions share code beyond the starter files.

    check(submissions, modules, starter, settings, previous=None) -> Report
    render(report, title) -> {relative path: text}        (grader.similarity.render)

The data flow, one module per step:
  sources.py       each student's folder, .zip or notebook -> one Document per course module
                   (grader.submission's readers: a notebook is its code cells); the starter files
  fingerprints.py  copydetect's tokenizer and winnowing: names, comments and layout normalised away,
                   the starter files' fingerprints subtracted, shares and matching regions of a pair
  ranking.py       every pair per module (this term x this term, this term x the previous term),
                   ranked, flagged at the threshold
  records.py       the frozen records (Settings, Document, Pair, ModuleResult, Report)
  render.py        index.html, a side-by-side page per flagged pair, similarity.csv, terminal lines

Pure text analysis: nothing here imports, compiles or runs what a student wrote.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from grader.errors import UsageError
from grader.similarity.records import Report, Settings, Term


class SimilarityError(UsageError):
    """Nothing to compare (an empty folder, a single student...), or settings out of range."""


def validate(settings: Settings) -> Settings:
    """`settings`, or SimilarityError saying which value is out of range and what it means."""
    for name, value in (("threshold", settings.threshold), ("floor", settings.floor)):
        if not 0 < value <= 1:
            hint = f" (a share: for {value:g} % write {value / 100:g})" if 1 < value <= 100 else ""
            raise SimilarityError(f"--{name} {value:g}: must be more than 0 and at most 1{hint}")
    if settings.floor > settings.threshold:
        raise SimilarityError(f"--floor {settings.floor:g} is above --threshold {settings.threshold:g}: "
                              "pairs are listed from the floor up and flagged from the threshold up")
    if not 5 <= settings.noise <= settings.guarantee:
        raise SimilarityError(f"noise {settings.noise} and guarantee {settings.guarantee}: "
                              "need 5 <= noise <= guarantee")
    return settings


def check(submissions: Mapping[str, str], modules: Sequence[str], starter: Sequence[str],
          settings: Settings | None = None, previous: Mapping[str, str] | None = None,
          problems: Mapping[str, str] | None = None, course: Sequence[str] = ()) -> Report:
    """Compare every pair of students' modules (student -> submission path).

    `starter`: paths of code every student received (stubs, released notebooks, helpers), subtracted;
    `previous`: last term's students (student -> path), compared with this term's only;
    `problems`: students already known to be unreadable (student -> why), skipped with a note;
    `course`: every module of the course (a starter file of another module is not subtracted).
    Raises SimilarityError when there are not two submissions to compare."""
    from grader.similarity.ranking import rank_class
    from grader.similarity.sources import read_boilerplate, read_class

    settings = validate(settings or Settings())
    if not submissions:
        raise SimilarityError("no submissions to compare: the folder holds no student folder, .zip or notebook")
    current = read_class(submissions, modules, Term.CURRENT, problems)
    old = read_class(previous, modules, Term.PREVIOUS) if previous else None
    others = len(old.students) if old else 0
    if len(current.students) + min(others, 1) < 2:
        who = f" (only {current.students[0]})" if current.students else ""
        against = " or give --against a previous term's submissions" if previous is None else ""
        notes = "; ".join(current.notes[:3])
        raise SimilarityError(f"need two readable submissions to compare, found {len(current.students)}{who}"
                              f"{': ' + notes if notes else ''}; add more students{against}")
    texts, read = read_boilerplate(starter, modules, course or modules)
    documents = current.documents + (old.documents if old else ())
    return Report(settings, rank_class(documents, list(modules), texts, settings), len(current.students), others,
                  tuple(read), current.notes + (old.notes if old else ()))


__all__ = ["Report", "Settings", "SimilarityError", "Term", "check", "validate"]
