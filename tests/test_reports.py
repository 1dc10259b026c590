"""Every report format renders the same result; hidden cases never leak; HTML is self-contained.

Golden files under tests/goldens/ are refreshed with `pytest --update-goldens`.
"""
import json
import re

import pytest

from conftest import mistake_source
from grader.reports import render
from grader.reports.gradescope import results_json
from grader.results import (CaseResult, Comparison, ExerciseResult, Heatmap, Mismatch, Status, SubmissionResult,
                            from_dict, to_dict)


@pytest.fixture(scope="module")
def sdpa_mistake(grade_dir, tmp_path_factory):
    import shutil
    from conftest import SOLUTIONS, replace_function
    d = tmp_path_factory.mktemp("sub")
    shutil.copy(SOLUTIONS / "attention.py", d / "attention.py")
    path = d / "attention.py"
    path.write_text(replace_function(path.read_text(), "scaled_dot_product_attention",
                                     mistake_source("attention", "scaled_dot_product_attention__wrong_dim")))
    return grade_dir(d, "attention")


def synthetic() -> SubmissionResult:
    comp = Comparison(name="weights", ok=False, problem="3 of 16 values differ (18.8%); max abs error 0.5 at [1, 2]",
                      shape=(4, 4), expected_shape=(4, 4), dtype="float32", expected_dtype="float32",
                      max_abs_error=0.5, max_rel_error=1.0, worst_index=(1, 2), mismatch_fraction=0.1875,
                      mismatches=(Mismatch((1, 2), 0.5, 0.0),), atol=1e-5, rtol=1e-4)
    case = CaseResult(name="small", status=Status.FAILED, description="Q: (4, 8) float32", message=comp.problem,
                      comparisons=(comp,), diagnosis="mask inverted: True means may attend",
                      heatmaps=(Heatmap("weights (first slice)", ((0.0, 1.0), (0.5, 0.5)), ((1.0, 0.0), (0.5, 0.5))),))
    hidden = CaseResult(name="hidden 1", status=Status.FAILED, hidden=True, description="inputs withheld (hidden case)",
                        message="values differ from the reference (19% of them)",
                        comparisons=(Comparison(name="weights", ok=False, problem="values differ"),))
    ex = (ExerciseResult(id="attention.scaled_dot_product_attention", status=Status.FAILED, points=1.0, max_points=3.0,
                         cases=(case, CaseResult(name="T=1", status=Status.PASSED), hidden),
                         message="1 of 3 cases passed; first failure: small", diagnosis=case.diagnosis,
                         reference="F.scaled_dot_product_attention", source_file="exercises/attention.py",
                         source_line=47),
          ExerciseResult(id="attention.causal_mask", status=Status.PASSED, points=1.0, max_points=1.0,
                         cases=(CaseResult(name="T=4", status=Status.PASSED),), message="all 1 cases passed"))
    return SubmissionResult(submission="exercises", exercises=ex, settings={"call_timeout_s": 10.0, "memory_mb": 2048},
                            seconds=1.25, grader_version="0.1.0")


@pytest.mark.parametrize("fmt,name", [("md", "report.md")])     # the terminal's: tests/test_terminal.py
def test_goldens(fmt, name, request):
    from conftest import ROOT
    text = render(synthetic(), fmt, color=False)
    golden = ROOT / "tests" / "goldens" / name
    if request.config.getoption("--update-goldens"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text(), f"{name} changed; if intended, run pytest --update-goldens"


def test_results_round_trip_through_json():
    r = synthetic()
    assert from_dict(json.loads(json.dumps(to_dict(r)))) == r


def test_gradescope_entries_split_hidden_points_and_follow_visibility():
    data = results_json(synthetic(), hidden_visibility="after_due_date")
    names = [t["name"] for t in data["tests"]]
    assert names == ["attention.scaled_dot_product_attention", "attention.scaled_dot_product_attention [hidden cases]",
                     "attention.causal_mask"]
    public, hidden, mask = data["tests"]
    assert public["score"] == pytest.approx(1.0) and public["max_score"] == pytest.approx(2.0)
    assert hidden["score"] == 0 and hidden["max_score"] == pytest.approx(1.0) \
        and hidden["visibility"] == "after_due_date"
    assert data["score"] == pytest.approx(2.0) and data["max_score"] == pytest.approx(4.0)
    assert "Q: (4, 8)" not in hidden["output"] and "hidden 1" in hidden["output"]
    for t in data["tests"]:
        assert {"name", "score", "max_score", "status", "output", "output_format", "visibility"} <= set(t)


@pytest.mark.parametrize("visibility", ["hidden", "after_due_date", "after_published", "visible"])
def test_gradescopes_visible_entry_says_nothing_of_the_hidden_cases(visibility):
    """The red team's code raised a built-in exception chosen by the hidden input; the visible entry's
    headline named it ("9 of 10 cases passed; first failure: hidden 5 — raised TypeError") while the
    hidden entry was hidden. The visible entry, its status and the total line are of the public cases."""
    cases = (CaseResult("T=4", Status.PASSED), CaseResult("T=1", Status.PASSED),
             CaseResult("hidden 1", Status.PASSED, hidden=True),
             CaseResult("hidden 2", Status.ERROR, hidden=True, message="raised TypeError", diagnosis="scale missing"))
    e = ExerciseResult(id="attention.causal_mask", status=Status.ERROR, points=0.75, max_points=1.0, cases=cases,
                       message="3 of 4 cases passed; first failure: hidden 2 — raised TypeError",
                       diagnosis="scale missing")
    data = results_json(SubmissionResult(submission="s", exercises=(e,)), hidden_visibility=visibility)
    public, hidden = data["tests"]
    assert public["status"] == "passed" and public["output"].startswith("all 2 public cases passed")
    assert "hidden" not in public["output"] and "TypeError" not in public["output"] and "scale" not in public["output"]
    assert hidden["visibility"] == visibility and "hidden 2: error — raised TypeError" in hidden["output"]
    assert data["score"] == pytest.approx(0.75)
    if visibility == "visible":
        assert data["output"].startswith("0.75 / 1 points")
    else:
        assert data["output"].startswith("0.5 / 0.5 points on the public cases; the hidden cases' 0.5 points")


def test_html_shows_heatmaps_and_diagnosis_of_a_real_mistake(sdpa_mistake):
    html = render(sdpa_mistake, "html")
    assert "softmax over the wrong dim" in html
    assert html.count('class="grid"') >= 2           # student and reference weights
    assert not re.search(r"""(src|href)=["']?https?:""", html)


def test_hidden_cases_never_reveal_inputs(grade_dir, config, make_submission):
    import dataclasses
    cfg = dataclasses.replace(config, secret_seed=987654)
    sub = make_submission({"attention.positional_encoding": mistake_source("attention", "swapped")})
    r = grade_dir(sub, "attention.positional_encoding", cfg=cfg)
    (e,) = r.exercises
    hidden = [c for c in e.cases if c.hidden]
    assert hidden and all(c.status.value == "failed" for c in hidden)
    for c in hidden:
        assert c.description == "inputs withheld (hidden case)" and not c.heatmaps
        assert all(not cmp.mismatches and cmp.worst_index is None for cmp in c.comparisons)
        assert c.diagnosis.startswith("sin and cos swapped")
    for fmt in ("md", "html", "json", "terminal"):
        text = render(r, fmt, color=False)
        for c in hidden:
            assert c.name in text or fmt in ("terminal", "md")
        assert "T: " not in "\n".join(line for line in text.splitlines() if "hidden" in line)


def test_html_escapes_whatever_the_student_printed():
    r = synthetic()
    e = r.exercises[0]
    import dataclasses
    evil = dataclasses.replace(r, exercises=(dataclasses.replace(e, output="<script>alert(1)</script>"),))
    html = render(evil, "html")
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_hidden_cases_leak_neither_exception_text_nor_prints(grade_dir, config, make_submission):
    """A student who prints or raises with the inputs learns nothing about hidden cases."""
    import dataclasses
    cfg = dataclasses.replace(config, secret_seed=4242)
    leaky = '''
def positional_encoding(T, d_model):
    print("INPUTS", T, d_model)
    raise ValueError(f"SECRET {T} {d_model}")
'''
    r = grade_dir(make_submission({"attention.positional_encoding": leaky}), "attention.positional_encoding", cfg=cfg)
    (e,) = r.exercises
    public = {c.name: c for c in e.cases if not c.hidden}
    hidden = [c for c in e.cases if c.hidden]
    assert hidden and all(c.message == "raised ValueError" for c in hidden)
    assert "SECRET 10 16" in public["T=10, d_model=16"].message      # public cases keep the full text
    assert "bytes printed during hidden cases: withheld" in e.output
    printed = [line for line in e.output.splitlines() if line.startswith("INPUTS")]
    assert len(printed) == len(public)        # one line per public case, none from the hidden child


def test_a_grader_bug_costs_one_exercise_and_says_whose_fault(config):
    import dataclasses
    from conftest import SOLUTIONS
    from grader.catalog import select
    from grader.pipeline.engine import grade

    def broken(*a, **k):
        raise RuntimeError("reference exploded")
    specs = select(["attention"])
    specs[0] = dataclasses.replace(specs[0], reference=broken)
    r = grade(str(SOLUTIONS), specs, config)
    first, *rest = r.exercises
    assert first.status is Status.GRADER_FAULT and "bug in the grader, not in your code" in first.message
    assert "RuntimeError: reference exploded" in first.message and "test_reports.py" in first.message
    assert r.grader_faults == (first.id,) and all(e.passed for e in rest)


# -- long messages: capped and summarised, whatever the number of outputs --------------------------
HEADLINE_MAX, CASE_MAX = 700, 650      # characters; a wrong adam_step used to say 2,500 on one line


def test_a_wrong_adam_step_names_its_first_failing_outputs_and_counts_the_rest(make_submission, grade_dir):
    sub = make_submission({"mlp.adam_step": mistake_source("mlp", "adam_step__swapped_betas")})
    (e,) = grade_dir(sub, "mlp.adam_step").exercises
    assert e.status is Status.FAILED and e.diagnosis.startswith("betas swapped")
    assert len(e.message) < HEADLINE_MAX, e.message
    failing = [c for c in e.cases if c.status is Status.FAILED]
    assert failing and all(len(c.message) < CASE_MAX for c in failing), [len(c.message) for c in failing]
    for c in failing:
        wrong = [x.name for x in c.comparisons if not x.ok]
        assert len(wrong) > 4 and c.message.startswith(f"{len(wrong)} of {len(c.comparisons)} outputs wrong; ")
        assert f"{wrong[0]} wrong: " in c.message and f"and {len(wrong) - 3} more wrong: {wrong[3]}" in c.message
        assert wrong[-1] not in c.message or len(wrong) <= 9          # the names after the sixth are counted
    assert f"first failure: {e.cases[0].name} — " in e.message and "outputs wrong" in e.message


def test_few_outputs_are_all_said_in_order_and_many_are_summarised():
    from grader.pipeline.feedback import comparisons_message
    ok = lambda n: Comparison(name=n, ok=True)                       # noqa: E731
    bad = lambda n: Comparison(name=n, ok=False, problem="1 of 4 values differ")  # noqa: E731
    assert comparisons_message((ok("h"), bad("c"))) == "h correct; c wrong: 1 of 4 values differ"
    many = tuple(bad(f"p[{i}]") for i in range(40)) + (ok("lr"),)
    text = comparisons_message(many)
    assert text.startswith("40 of 41 outputs wrong; p[0] wrong: 1 of 4 values differ; p[1] wrong")
    assert "and 37 more wrong: p[3], p[4], p[5], p[6], p[7], p[8] and 31 more; 1 correct" in text
    assert len(text) < 300 and comparisons_message(tuple(ok(str(i)) for i in range(9))) == "all 9 outputs correct"


def test_a_huge_exception_message_is_cut_with_a_count():
    from grader.pipeline.feedback import error_message
    text = error_message({"type": "ValueError", "message": "x" * 50_000, "traceback": "tb"}, 2048)
    assert len(text) < 700 and text.startswith("ValueError: xxx") and "(49400 more characters)" in text


def test_a_call_that_does_not_fit_the_students_function_says_to_keep_the_stubs_parameters():
    from grader.pipeline.feedback import error_message
    for said in ("causal_mask() missing 1 required positional argument: 'device'",
                 "causal_mask() takes 0 positional arguments but 1 was given",
                 "causal_mask() got an unexpected keyword argument 'T'"):
        text = error_message({"type": "TypeError", "message": said, "traceback": ""}, 2048,
                             called="attention.causal_mask")
        assert text == (f"TypeError: {said}\nthe grader calls causal_mask with the arguments this case lists, as "
                        "the exercise's stub (exercises/attention.py) declares them: keep its parameters")
    inner = {"type": "TypeError", "message": "softmax() missing 1 required positional argument", "traceback": ""}
    assert error_message(inner, 2048, called="attention.causal_mask") == f"TypeError: {inner['message']}"
