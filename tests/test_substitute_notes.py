"""The note on substitutes says what happened: "Graded with the grader's reference X in place of
yours" only when the student's function called X (the child says which substitutes a call used),
else that the function was graded on its own code. Scores do not depend on it."""
import pytest

from grader.pipeline.run import CaseRunner
from grader.sandbox.runner import Outcome
from scenarios import submission

FORWARDS = {"rnn.rnn_forward": "rnn_cell", "gru.gru_forward": "gru_cell", "lstm.lstm_forward": "lstm_cell"}


@pytest.fixture(scope="module")
def inlined(grade_dir):
    return {e.id: e for e in grade_dir(submission("recurrent_cells_inlined"), *FORWARDS, "rnn.rnn_bptt").exercises}


@pytest.fixture(scope="module")
def calling(grade_dir):
    from scenarios import SOLUTIONS
    return {e.id: e for e in grade_dir(SOLUTIONS, *FORWARDS, "rnn.rnn_bptt").exercises}


@pytest.mark.parametrize("exercise", sorted(FORWARDS))
def test_a_forward_that_inlines_its_cell_is_graded_on_its_own_code(inlined, exercise):
    e = inlined[exercise]
    assert e.passed and e.points == e.max_points
    assert not [n for n in e.notes if "Graded with the grader's reference" in n], e.notes
    assert f"{e.function} was graded on its own code: it did not call {FORWARDS[exercise]}" in " ".join(e.notes)


@pytest.mark.parametrize("exercise", sorted(FORWARDS))
def test_a_forward_that_calls_its_cell_has_the_note_as_before(calling, exercise):
    e = calling[exercise]
    assert e.passed and e.points == e.max_points
    assert f"Graded with the grader's reference {FORWARDS[exercise]} in place of yours" in " ".join(e.notes)
    assert "own code" not in " ".join(e.notes)


def test_only_the_substitutes_called_are_named(inlined, calling):
    """rnn_bptt's spec lists rnn_cell and rnn_forward; the solution (and the scenario, whose
    rnn_bptt is the solution's) calls rnn_forward alone, so only it is named."""
    for graded in (inlined, calling):
        notes = " ".join(graded["rnn.rnn_bptt"].notes)
        assert "Graded with the grader's reference rnn_forward in place of yours" in notes
        assert "rnn_cell" not in notes


def _runner(depends, outcomes):
    runner = CaseRunner.__new__(CaseRunner)       # only the note's state: no context, no child
    runner.spec = type("Spec", (), {"depends": depends, "function": "f"})()
    runner._notes, runner._replies, runner._returned, runner._called = [], 0, 0, set()
    for outcome in outcomes:
        runner._record_called(outcome)
    return runner


def test_the_note_reads_the_replies_and_nothing_else():
    deps = {"cell": "grader.sandbox.trusted.x:cell"}
    assert _runner(deps, []).notes() == []                                         # nothing answered
    assert _runner(deps, [Outcome("timeout"), Outcome("crashed")]).notes() == []
    assert "own code" in _runner(deps, [Outcome("ok", called=[]), Outcome("error", called=[])]).notes()[0]
    assert "reference cell in place" in _runner(deps, [Outcome("ok", called=[]), Outcome("ok", called=["cell"])
                                                       ]).notes()[0]
    assert _runner(deps, [Outcome("ok", called=["not_a_dependency"])]).notes()[0].startswith("f was graded on")
    # A session that does not say (the notebook's in-process one) keeps the note it always had.
    assert "reference cell in place" in _runner(deps, [Outcome("ok")]).notes()[0]
    assert _runner({}, [Outcome("ok", called=["cell"])]).notes() == []
    # Every call raised before it reached a helper (a NameError on its first line): nothing is said of
    # what the function calls; a helper it called before raising is still named.
    assert _runner(deps, [Outcome("error", called=[]), Outcome("error", called=[])]).notes() == []
    assert "reference cell in place" in _runner(deps, [Outcome("error", called=["cell"])]).notes()[0]
