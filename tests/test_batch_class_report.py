"""The class report from gradebook rows: every number is computed once, in class_stats, and the
page shows them with real charts embedded (no external files)."""
import re

from grader.frontends.batch.class_report import class_stats, render
from grader.frontends.batch.gradebook import Row
from grader.results import CaseResult, ExerciseResult, PerfResult, Status, SubmissionResult

MASK, SDPA = "attention.causal_mask", "attention.scaled_dot_product_attention"


def row(student, mask=Status.PASSED, sdpa=Status.PASSED, mask_diag="", sdpa_diag="", ratio=None, state="graded"):
    def ex(i, status, diag, max_points):
        perf = (PerfResult("large", Status.PASSED if (ratio or 0) < 3 else Status.FAILED, ratio=ratio,
                           threshold=3.0),) \
            if ratio is not None and i == SDPA else ()
        points = max_points if status is Status.PASSED else 0.0
        return ExerciseResult(i, status, points, max_points, (CaseResult("c", status, diagnosis=diag),),
                              message=f"{status.value} here", diagnosis=diag, performance=perf)
    r = SubmissionResult(f"subs/{student}", (ex(MASK, mask, mask_diag, 1.0), ex(SDPA, sdpa, sdpa_diag, 3.0)))
    return Row(student, "h", "s", f"subs/{student}", state, r.score, r.max_score, "", 0.0, r)


def klass():
    return [row("a"), row("b", ratio=1.2), row("c", ratio=2.0),
            row("d", mask=Status.FAILED, mask_diag="mask inverted: True means may attend"),
            row("e", mask=Status.FAILED, mask_diag="mask inverted: True means may attend", ratio=4.0),
            row("f", sdpa=Status.FAILED, sdpa_diag="missing 1/sqrt(d_k): divide the scores"),
            row("g", sdpa=Status.TIMEOUT),
            row("h", mask=Status.ERROR, sdpa=Status.ERROR, state="unreadable")]


def test_numbers():
    s = class_stats(klass())
    assert s.students == 8 and s.max_score == 4.0
    assert [e.id for e in s.exercises] == [MASK, SDPA]
    mask, sdpa = s.exercises
    assert (mask.passed, mask.students) == (5, 8) and abs(mask.pass_rate - 5 / 8) < 1e-12
    assert (sdpa.passed, sdpa.students) == (5, 8)
    assert mask.statuses == {"passed": 5, "failed": 2, "error": 1}
    assert [(m.exercise, m.fingerprint, m.students) for m in s.mistakes] == [
        (MASK, "mask inverted", 2), (SDPA, "missing 1/sqrt(d_k)", 1)]
    assert s.mistakes[0].names == ("d", "e") and s.mistakes[0].explanation == "True means may attend"
    assert {(t.student, t.status) for t in s.troubles} == {("g", "timeout"), ("h", "unreadable")}
    (p,) = s.performance
    assert p.ratios == (1.2, 2.0, 4.0) and p.median == 2.0 and p.threshold == 3.0 and p.passed == 2
    assert s.full_marks == 3 and abs(s.mean - sum(r.score for r in klass()) / 8) < 1e-12


def test_page_is_self_contained_with_charts():
    html = render(class_stats(klass()), "Attention", {"hidden cases": "no"})
    images = re.findall(r'<img src="([^"]+)"', html)
    assert len(images) == 4                                  # histogram, pass rates, heatmap, performance
    assert all(src.startswith("data:image/png;base64,") and len(src) > 2000 for src in images)
    assert 'id="chart-performance"' in html and "2.00x" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<script" not in html


def test_report_escapes_student_controlled_text():
    rows = klass()
    rows[3] = row("<b>x</b>", mask=Status.FAILED, mask_diag="mask inverted: <script>alert(1)</script>")
    html = render(class_stats(rows), "Attention", {})
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "<b>x</b>" not in html


def test_empty_class():
    s = class_stats([])
    html = render(s, "Attention", {})
    assert s.students == 0 and "<img" not in html and "No known mistake" in html
