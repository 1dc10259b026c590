"""The student's view of hidden cases: what a student's own code could smuggle out is withheld."""
from grader.frontends.batch.redact import OUTPUT_WITHHELD, student_view
from grader.results import CaseResult, ExerciseResult, Status, SubmissionResult

LEAK = "ValueError: tensor([0.1234, 0.5678])"


def submission(cases, output="Q = tensor([0.1234, 0.5678])\n", message=None):
    first = next((c for c in cases if c.status is not Status.PASSED), None)
    headline = message or (f"1 of {len(cases)} cases passed; first failure: {first.name} — "
                           f"{first.message.splitlines()[0]}" if first else "ok")
    e = ExerciseResult("attention.scaled_dot_product_attention", Status.ERROR, 1.0, 3.0, tuple(cases),
                       message=headline, output=output, diagnosis="missing 1/sqrt(d_k): scale the scores")
    return SubmissionResult("s", (e,))


def test_hidden_error_message_and_output_are_withheld():
    r = submission([CaseResult("small", Status.PASSED),
                    CaseResult("hidden 1", Status.ERROR, hidden=True, message=LEAK),
                    CaseResult("hidden 2", Status.FAILED, hidden=True, message="out wrong: values differ",
                               diagnosis="missing 1/sqrt(d_k): scale the scores")])
    (e,) = student_view(r).exercises
    text = repr(e)
    assert "0.1234" not in text and "0.5678" not in text
    assert e.cases[1].message.startswith("your code raised ValueError on this hidden case")
    assert "hidden 1" in e.message and "raised ValueError" in e.message
    assert e.cases[2].message == "out wrong: values differ"            # the engine's own words stay
    assert e.cases[2].diagnosis.startswith("missing 1/sqrt(d_k)")
    assert e.output == "" and OUTPUT_WITHHELD in e.notes
    assert r.exercises[0].output                                       # the instructor's copy is intact


def test_public_only_results_are_unchanged():
    r = submission([CaseResult("small", Status.ERROR, message=LEAK)])
    assert student_view(r) is r


def test_hidden_error_identical_to_a_public_one_is_kept():
    same = "NameError: name 'torch' is not defined"
    r = submission([CaseResult("small", Status.ERROR, message=same),
                    CaseResult("hidden 1", Status.ERROR, hidden=True, message=same)])
    (e,) = student_view(r).exercises
    assert e.cases[1].message == same


def test_out_of_memory_keeps_the_limit_only():
    r = submission([CaseResult("hidden 1", Status.ERROR, hidden=True,
                               message="ran out of memory: the limit is 2048 MiB (MemoryError: 0.1234)")])
    (e,) = student_view(r).exercises
    assert e.cases[0].message == "ran out of memory: the limit is 2048 MiB"
