"""What every chapter's tests check in the same way, written once.

A chapter's test file, tests/test_catalog_<chapter>.py, holds the chapter's data tables and its
own tests, and one test class made of the checks below that apply to it:

    class TestNeurons(ChapterChecks, ForbiddenChecks, AlternativeChecks):
        MODULE, MISTAKES, FORBIDDEN = "neurons", MISTAKES, FORBIDDEN

- ChapterChecks: the worked solutions score full marks, the generated stubs zero ("not
  implemented"), and each known mistake's student-written variant is diagnosed as that mistake;
- ForbiddenChecks: each forbidden shortcut is refused, before it runs ("static") or while it
  runs ("run": tripwires and the ATen net);
- JudgedChecks: a behavioural or statistical judge refuses each variant, for the reason it states;
- LocalisedChecks: the first failing case of each variant says where it is wrong;
- AlternativeChecks: independently written correct solutions
  (tests/fixtures/submissions/alt_<module>_<style>/, at least two a module) score full marks, so
  the tolerances are not fitted to one formulation.

The tables are lists of (exercise id, variant, what must hold), the variant being
`def <function>__<variant>` in tests/fixtures/mistakes/<module>.py: MISTAKES name the diagnosis,
FORBIDDEN how it is caught, JUDGED a phrase every case's message says, LOCALISED the phrases the
first failing case's message says. tests/test_catalog.py checks every chapter's MISTAKES against
its specs' known mistakes (`mistake_table`).

Grading is the expensive part. It is done in class-scoped fixtures, and each chapter file has one
class: its solutions are graded once, its stubs once, and the variants of all its tables once,
packed into rounds by conftest.grade_variants (at most one variant per exercise in a round, so a
round is one submission). JUDGED variants get rounds of their own, next to the worked solutions of
everything else: mlp.train_xor runs the submission's own mlp_backward and steps.
"""
from __future__ import annotations

import ast
import importlib
import shutil
from collections.abc import Sequence

import pytest
import torch

from conftest import FIXTURES, ROOT, SOLUTIONS, grade_variants
from grader.catalog import select

# the argument a check takes -> the class attribute holding its table
TABLES = {"mistake": "MISTAKES", "forbidden": "FORBIDDEN", "judged": "JUDGED", "localised": "LOCALISED"}
CAUGHT = {"static": "uses a forbidden API", "run": "called a forbidden API while running"}


def specs(module: str):
    return select([module])


def alternatives(module: str) -> list[str]:
    """The independently written solutions of a module: tests/fixtures/submissions/alt_<module>_*/."""
    return sorted(p.name for p in (FIXTURES / "submissions").glob(f"alt_{module}_*") if p.is_dir())


def fixture_variants(module: str) -> set[str]:
    """`<function>__<variant>` names defined in tests/fixtures/mistakes/<module>.py (helpers aside)."""
    path = FIXTURES / "mistakes" / f"{module}.py"
    if not path.exists():
        return set()
    return {n.name for n in ast.parse(path.read_text()).body
            if isinstance(n, ast.FunctionDef) and "__" in n.name and not n.name.startswith("_")}


def mistake_table(chapter: str) -> list[tuple[str, str, str]]:
    """The MISTAKES table of tests/test_catalog_<chapter>.py: (exercise id, variant, diagnosis)."""
    return list(importlib.import_module(f"test_catalog_{chapter}").MISTAKES)


def ids(rows) -> list[str]:
    return [f"{exercise}__{variant}" for exercise, variant, *_ in rows]


# ----------------------------------------------------------------------------- what cases hold
def _cases(exercise: str, seed: int = 0):
    (spec,) = select([exercise])
    return spec.cases(torch.Generator().manual_seed(seed))


def _has_dtype(x, dtype) -> bool:
    if isinstance(x, torch.Tensor):
        return x.dtype == dtype
    if isinstance(x, (list, tuple)):
        return any(_has_dtype(v, dtype) for v in x)
    return False


def without_float64_case(module: str, exempt: tuple[str, ...] = ()) -> list[str]:
    """Exercises of the module (but the exempt functions) none of whose cases has a float64 input."""
    return [s.id for s in specs(module) if s.function not in exempt
            and not any(_has_dtype(c.args, torch.float64) for c in _cases(s.id))]


def largest_first_input(exercise: str) -> float:
    """The largest magnitude in the first argument over the exercise's cases."""
    return max(float(c.args[0].abs().max()) for c in _cases(exercise))


def case_names(exercise: str) -> list[str]:
    return [c.name for c in _cases(exercise)]


def missing_sequence_edge_cases(exercise: str) -> list[str]:
    """Which of T=1, batch 1 and a long sequence no case of the exercise is named for."""
    names = case_names(exercise)
    return [edge for edge in ("T=1", "batch 1", "long") if not any(edge in n for n in names)]


def short_of_full_marks(result) -> dict[str, tuple[str, str]]:
    """Exercise id -> (status, message) for each exercise of a graded submission that did not pass
    with every point."""
    return {e.id: (e.status.value, e.message) for e in result.exercises
            if e.status.value != "passed" or e.points != e.max_points}


def first_failure_verdicts(exercise_result) -> dict[str, bool]:
    """Output name -> whether it was right, in the first failing case of a graded exercise."""
    case = next(c for c in exercise_result.cases if c.status.value == "failed")
    return {c.name: c.ok for c in case.comparisons}


# ----------------------------------------------------------------------------- the checks
class ChapterChecks:
    """Solutions, stubs and known mistakes of the chapter `MODULE`."""

    MODULE: str = ""
    MISTAKES: Sequence[tuple[str, str, str]] = ()
    FORBIDDEN: Sequence[tuple[str, str, str]] = ()
    JUDGED: Sequence[tuple[str, str, str]] = ()
    LOCALISED: Sequence[tuple[str, str, list[str]]] = ()
    # what a known mistake's exercise may end as: a wrong answer, or an error where some cases'
    # shapes cannot even be computed (a transposed W, a transposed attention mask)
    MISTAKE_STATUSES: tuple[str, ...] = ("failed", "error")
    # the checks of the tables' variants are marked slow (a chapter's rounds take seconds); a
    # chapter with few and cheap variants runs them with the fast tests
    SLOW_VARIANTS: bool = True

    def pytest_generate_tests(self, metafunc):
        marks = [pytest.mark.slow] if self.SLOW_VARIANTS else []
        for arg, table in TABLES.items():
            if arg in metafunc.fixturenames:
                rows = getattr(self, table)
                metafunc.parametrize(arg, [pytest.param(row, marks=marks, id=i) for row, i in zip(rows, ids(rows))])
        if "alternative" in metafunc.fixturenames:
            metafunc.parametrize("alternative", alternatives(self.MODULE))

    @pytest.fixture(scope="class")
    @classmethod
    def solutions_result(cls, grade_dir):
        return grade_dir(SOLUTIONS, cls.MODULE)

    @pytest.fixture(scope="class")
    @classmethod
    def stubs_result(cls, grade_dir):
        return grade_dir(ROOT / "exercises", cls.MODULE)

    @pytest.fixture(scope="class")
    @classmethod
    def variants_result(cls, tmp_path_factory, grade_dir):
        entries = dict.fromkeys((e, v) for e, v, _ in [*cls.MISTAKES, *cls.LOCALISED, *cls.FORBIDDEN])
        results = grade_variants(tmp_path_factory, grade_dir, list(entries), f"{cls.MODULE}_")
        judged = [(e, v) for e, v, _ in cls.JUDGED]
        results.update(grade_variants(tmp_path_factory, grade_dir, judged, f"{cls.MODULE}_judged_"))
        return results

    def test_solutions_score_full_marks(self, solutions_result):
        short = short_of_full_marks(solutions_result)
        assert not short, f"solutions/ short of full marks: {short}"
        graded, expected = {e.id for e in solutions_result.exercises}, {s.id for s in specs(self.MODULE)}
        assert graded == expected, f"graded {sorted(graded)}, the catalog has {sorted(expected)}"
        assert solutions_result.score == solutions_result.max_score > 0, \
            (solutions_result.score, solutions_result.max_score)

    def test_stubs_score_zero_not_implemented(self, stubs_result):
        graded, expected = [e.id for e in stubs_result.exercises], [s.id for s in specs(self.MODULE)]
        assert sorted(graded) == sorted(expected), f"graded {sorted(graded)}, the catalog has {sorted(expected)}"
        assert stubs_result.score == 0, f"the stubs score {stubs_result.score}"
        for e in stubs_result.exercises:
            assert e.points == 0 and e.status.value == "not implemented", (e.id, e.status, e.message)
            assert e.message.startswith("not implemented yet"), (e.id, e.message)
            assert "Traceback" not in e.message and "File " not in e.message, (e.id, e.message)

    def test_known_mistake_is_diagnosed(self, variants_result, mistake):
        exercise, variant, diagnosis = mistake
        e = variants_result[(exercise, variant)]
        assert e.status.value in self.MISTAKE_STATUSES, (e.status, e.message)
        assert e.points < e.max_points, f"{exercise}__{variant}: {e.points} of {e.max_points} points"
        assert e.diagnosis.startswith(diagnosis + ":"), \
            f"{exercise}__{variant}: diagnosis {e.diagnosis!r}; {e.message}"


class ForbiddenChecks:
    def test_forbidden_api_is_detected(self, variants_result, forbidden):
        exercise, variant, how = forbidden
        e = variants_result[(exercise, variant)]
        assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
        assert e.message.startswith(CAUGHT[how]), e.message


class JudgedChecks:
    def test_judge_refuses_for_the_stated_reason(self, variants_result, judged):
        exercise, variant, phrase = judged
        e = variants_result[(exercise, variant)]
        assert e.points == 0 and e.status.value == "failed", (e.status, e.message)
        assert all(phrase in c.message for c in e.cases), [c.message for c in e.cases]


class LocalisedChecks:
    def test_wrong_part_is_localised(self, variants_result, localised):
        exercise, variant, phrases = localised
        e = variants_result[(exercise, variant)]
        first = next(c for c in e.cases if c.status.value == "failed")
        for phrase in phrases:
            assert phrase in first.message, f"{exercise}__{variant}: {phrase!r} not in\n{first.message}"


class AlternativeChecks:
    # An alternative folder is graded as it is, but where its module imports another chapter's
    # (moe.py imports transformer's feed_forward): then it is laid over a copy of solutions/.
    ALTERNATIVES_OVER_SOLUTIONS: bool = False

    def test_independent_solution_scores_full_marks(self, grade_dir, tmp_path, alternative):
        folder = FIXTURES / "submissions" / alternative
        if self.ALTERNATIVES_OVER_SOLUTIONS:
            files = [*SOLUTIONS.glob("*.py"), *folder.glob("*.py")]     # the alternative's files last
            folder = tmp_path / alternative
            folder.mkdir()
            for f in files:
                shutil.copy(f, folder / f.name)
        result = grade_dir(folder, self.MODULE)
        short = short_of_full_marks(result)
        assert not short, f"{alternative} short of full marks: {short}"
        assert len(result.exercises) == len(specs(self.MODULE)), [e.id for e in result.exercises]

    def test_there_are_two_independent_solutions_per_module(self):
        found = alternatives(self.MODULE)
        assert len(found) >= 2, \
            f"{self.MODULE}: {found} in tests/fixtures/submissions/; want two alt_{self.MODULE}_<style>/ at least"
