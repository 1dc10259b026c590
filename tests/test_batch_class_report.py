"""The class report from gradebook rows: every number is computed once, in class_stats, and the
page shows them (bs4 here; in a real browser: tests/test_browser_reports.py): grouped by module,
a student x exercise grid whose every cell links to that student's feedback, mistakes with how
many students made each, one row per troubled student, sortable tables, nothing fetched."""
import base64
import hashlib
import re

from bs4 import BeautifulSoup

from grader.frontends.batch.class_report import BANDS, class_stats, feedback_link, render
from grader.frontends.batch.discover import folder_name
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


def test_modules_grid_and_mistakes_per_exercise():
    s = class_stats(klass())
    (module,) = s.modules
    assert (module.name, module.exercises, module.max_points, module.full) == ("attention", (MASK, SDPA), 4.0, 3)
    # shares of the module's points: h 0; d, e 3/4 (not under 75%); f, g 1/4; a, b, c full
    assert dict(zip((label for label, _ in BANDS), module.bands)) == {
        "0": 1, "<25%": 0, "<50%": 2, "<75%": 0, "<100%": 2, "100%": 3}
    assert s.exercises[0].mistakes == (("mask inverted", 2),)
    assert s.exercises[1].mistakes == (("missing 1/sqrt(d_k)", 1),)
    assert [line.student for line in s.grid] == ["h", "f", "g", "d", "e", "a", "b", "c"]    # lowest total first
    d = s.grid[3]
    cells = [(c.exercise, c.status, c.points, c.level) for c in d.cells]
    assert cells == [(MASK, "failed", 0.0, 0), (SDPA, "passed", 3.0, 4)]
    assert d.link == "students/d/feedback.html" and d.modules == (3.0,)


def test_every_grid_cell_links_to_that_students_feedback_on_that_exercise():
    rows = klass() + [row("ann/é x", mask=Status.FAILED)]
    page = BeautifulSoup(render(class_stats(rows), "Attention", {}), "html.parser")
    grid = page.select_one("table#grid")
    lines = grid.select("tbody tr")
    assert len(lines) == 9
    for line in lines:
        student = line["data-student"]
        links = [a["href"] for a in line.select("td:not(.total) a")]
        assert links == [f"students/{folder_name(student)}/feedback.html#{i}" for i in (MASK, SDPA)]
        assert line.select_one("th.who a")["href"] == feedback_link(student)
    assert folder_name("ann/é x") != "ann/é x" and feedback_link("ann/é x").startswith("students/ann_")
    heads = [th.get_text(strip=True) for th in grid.select("tr.exercises th")]
    assert heads == ["causal_mask", "scaled_dot_product_attention"]
    assert [th.get_text(strip=True) for th in grid.select("tr.modules th")] == ["student", "score", "attention"]


def test_crashes_count_students_and_list_each_once():
    crashes = {e: Status.CRASHED for e in ("mask", "sdpa")}
    rows = klass() + [row("zed", **crashes), row("yan", sdpa=Status.TIMEOUT)]
    s = class_stats(rows)
    assert len(s.troubles) == 5                                       # g, h, zed twice, yan
    groups = {t.student: t for t in s.trouble_groups}
    assert set(groups) == {"g", "h", "zed", "yan"}
    assert groups["zed"].what == "crashed in 2" and groups["zed"].exercises == (MASK, SDPA)
    assert groups["zed"].statuses == ("crashed",) and groups["yan"].statuses == ("timeout",)
    assert groups["zed"].messages == ("crashed here",)                # the same line once
    assert groups["h"].what == "unreadable" and groups["h"].exercises == ()
    page = BeautifulSoup(render(s, "Attention", {}), "html.parser")
    card = page.select_one('[data-stat="troubles"]')
    assert card["data-students"] == "4" and "4 students whose code crashed" in card.get_text(" ", strip=True)
    assert [tr["data-student"] for tr in page.select("#troubles tbody tr")] == ["g", "h", "zed", "yan"]


def test_page_is_self_contained_sortable_and_its_one_script_is_allowed_by_hash():
    html = render(class_stats(klass()), "Attention", {"hidden cases": "no"})
    page = BeautifulSoup(html, "html.parser")
    images = [img["src"] for img in page.select("img")]
    assert len(images) == 2                                  # histogram, performance; the rest is HTML
    assert all(src.startswith("data:image/png;base64,") and len(src) > 2000 for src in images)
    assert 'id="chart-performance"' in html and "2.00x" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    (script,) = page.select("script")
    digest = base64.b64encode(hashlib.sha256(script.string.encode()).digest()).decode()
    csp = page.select_one('meta[http-equiv="Content-Security-Policy"]')["content"]
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
    for table in ("modules", "mistakes", "grid", "exercises", "troubles", "students"):
        assert page.select(f"table#{table}.sortable th[data-col]"), table
    assert [tr["data-module"] for tr in page.select("#modules tbody tr")] == ["attention"]


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


def course_rows(n: int, seed: int = 16) -> list[Row]:
    """`n` students over every exercise of the course: mostly passed, some wrong (with a known
    mistake), some raising, crashing, timing out or not started (seeded)."""
    import random

    from grader.catalog import catalog

    rng = random.Random(seed)
    specs = list(catalog().values())
    kinds = [Status.PASSED] * 16 + [Status.FAILED] * 3 + [Status.ERROR, Status.TIMEOUT, Status.CRASHED,
                                                          Status.NOT_IMPLEMENTED]
    rows = []
    for i in range(n):
        student = ("maria.garcia", "o'neil", "zhang-wei")[i] if i < 3 else f"student{i:02d}"
        exercises = []
        for spec in specs:
            status = rng.choice(kinds)
            points = float(spec.points) if status is Status.PASSED else \
                round(spec.points * rng.choice((0.0, 0.25, 0.5)), 2) if status is Status.FAILED else 0.0
            diagnosis = rng.choice(("mask inverted: True means may attend", "transposed: rows for columns", "")) \
                if status is Status.FAILED else ""
            exercises.append(ExerciseResult(spec.id, status, points, float(spec.points),
                                            (CaseResult("c", status, diagnosis=diagnosis),),
                                            message=f"{status.value} here", diagnosis=diagnosis,
                                            source_file=f"{spec.module}.py"))
        r = SubmissionResult(f"subs/{student}", tuple(exercises))
        rows.append(Row(student, "h", "s", f"subs/{student}", "graded", r.score, r.max_score, "", 0.0, r))
    return rows


def test_grades_csv_keeps_a_students_id_text_in_a_spreadsheet():
    """A folder named =HYPERLINK(...) (the red team's) would be a live formula in Excel or Sheets."""
    import csv
    import io

    from grader.frontends.batch.outputs import grades_csv
    rows = [row('=HYPERLINK("http://evil.example","A+")'), row("-1"), row("alice")]
    cells = [r[0] for r in csv.reader(io.StringIO(grades_csv(rows, [])))][1:]
    assert cells == ['\'=HYPERLINK("http://evil.example","A+")', "'-1", "alice"]
