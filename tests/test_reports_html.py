"""The student's HTML and Markdown reports, read as structure (bs4): what needs work comes first
and whole, what passed is one collapsed list, a known mistake is said once per exercise, every
heatmap has its scale, axes and values, the header speaks words, and the page fetches nothing.

Synthetic results (no grading): a course of 61 exercises where two failed, as the issue found
them buried in a 61-row table and 61 cards. The same pages in a real browser:
tests/test_browser_reports.py.
"""
import re

from bs4 import BeautifulSoup

from grader.reports import render
from grader.results import CaseResult, Comparison, ExerciseResult, Heatmap, Status, SubmissionResult

MODULES = {"neurons": 5, "activations": 14, "losses": 4, "mlp": 10, "cnn": 4, "rnn": 3, "lstm": 3, "gru": 2,
           "tokens": 4, "attention": 4, "transformer": 7, "moe": 1}
SDPA, PE = "attention.scaled_dot_product_attention", "attention.positional_encoding"
WEIGHTS = Heatmap("weights (first slice)", ((0.5, 0.5, 0.0), (0.2, 0.3, 0.5)), ((1.0, 0.0, 0.0), (0.4, 0.6, 0.0)))
SIGNED = Heatmap("output (first slice)", ((0.0, -1.0), (0.5, 1.0)), ((0.0, 1.0), (-0.5, 1.0)))
SOFTMAX = "softmax over the wrong dim: take the softmax over the keys"


def failing(id, heatmap, diagnosis, cases=6, other=""):
    comp = Comparison("weights", ok=False, problem="values differ")
    failed = tuple(CaseResult(f"case {i}", Status.FAILED, f"Q: ({i}, 4) float32", message=f"case {i}: values differ",
                              comparisons=(comp,), diagnosis=other if (other and i == cases - 2) else diagnosis,
                              heatmaps=(heatmap,)) for i in range(cases - 1))
    return ExerciseResult(id, Status.FAILED, 0.5, 3.0, (*failed, CaseResult("T=1", Status.PASSED)),
                          message=f"1 of {cases} cases passed; first failure: case 0 — values differ",
                          diagnosis=diagnosis, reference="torch", source_file="attention.py", source_line=12)


def course(*, broken=True, todo=0) -> SubmissionResult:
    exercises = []
    for module, n in MODULES.items():
        for i in range(n):
            id = {("attention", 1): SDPA, ("attention", 3): PE}.get((module, i), f"{module}.f{i}")
            if broken and id == SDPA:
                exercises.append(failing(id, WEIGHTS, SOFTMAX, other="mask inverted: True means may attend"))
            elif broken and id == PE:
                exercises.append(failing(id, SIGNED, "sin and cos swapped: even columns take sin"))
            elif todo and module == "moe":
                todo_case = CaseResult("c", Status.NOT_IMPLEMENTED)
                exercises.append(ExerciseResult(id, Status.NOT_IMPLEMENTED, 0.0, 1.0, (todo_case,),
                                                message="not implemented yet"))
            else:
                exercises.append(ExerciseResult(id, Status.PASSED, 1.0, 1.0, (CaseResult("c", Status.PASSED),),
                                                message="all 1 cases passed", source_file=f"{module}.py"))
    return SubmissionResult("/srv/grading/term1/bob", tuple(exercises), grader_version="0.1.0", seconds=4.8,
                            settings={"config": "/srv/grading/autograde.toml", "call_timeout_s": 10.0,
                                      "submission_timeout_s": 600.0, "memory_mb": 2048, "output_kb": 64, "jobs": 2,
                                      "hidden_cases": False})


def soup(result) -> BeautifulSoup:
    return BeautifulSoup(render(result, "html"), "html.parser")


def test_what_needs_work_comes_first_and_what_passed_is_one_collapsed_list():
    page = soup(course())
    cards = page.select("section.exercise")
    assert [c["id"] for c in cards] == [SDPA, PE]                        # two cards, not 61
    passed = page.select_one("details#passed")
    assert passed is not None and not passed.has_attr("open")           # collapsed when something failed
    assert len(passed.select("tr[data-status=passed]")) == 59
    html = str(page)
    assert html.index(f'id="{PE}"') < html.index('id="passed"')          # failures before passes in the page
    modules = page.select("#modules tbody tr")
    assert len(modules) == 12 and [a["href"] for a in page.select("#modules a")] == [f"#{SDPA}", f"#{PE}"]
    assert page.select_one("#verdict").get_text(" ", strip=True) == "2 exercises need work · 59 passed"


def test_not_started_exercises_are_one_line_each_and_all_passed_opens_the_list():
    page = soup(course(broken=False, todo=1))
    assert not page.select("section.exercise")
    assert len(page.select("details#not-started tr[data-status='not implemented']")) == 1
    assert page.select_one("details#not-started").has_attr("open")     # nothing needs work: it is the news
    done = soup(course(broken=False))
    assert done.select_one("details#passed").has_attr("open")
    assert "Everything passed" in done.select_one("#verdict").get_text()


def test_a_known_mistake_is_said_once_per_exercise():
    card = soup(course()).select_one(f"section[id='{SDPA}']")
    boxes = [d.get_text(" ", strip=True) for d in card.select(".diagnosis")]
    assert boxes.count(f"Looks like: {SOFTMAX}") == 1                   # not once per case card
    assert boxes == [f"Looks like: {SOFTMAX}", "This case looks like: mask inverted: True means may attend"]
    assert len(card.select("tr[data-case]")) == 5 and "Passed: T=1." in card.get_text()


def test_every_heatmap_has_its_scale_axes_difference_and_values():
    page = soup(course())
    sets = page.select(".heatmap-set")
    assert len(sets) == 2 * 3                   # per exercise: the first case, two more collapsed
    for hs in sets:
        panels = [p["data-panel"] for p in hs.select("figure.panel")]
        assert panels == ["student", "reference", "difference"]
        legends = hs.select(".legend")
        assert len(legends) == 2 and all(lg.select_one(".legend-bar")["style"].count("rgb(") >= 5 for lg in legends)
        for grid in hs.select("table.grid"):
            cells = grid.select("td")
            tip = re.compile(r"\(\d+, \d+\): yours -?[\d.]+, expected -?[\d.]+")
            assert cells and all(tip.match(td["title"]) for td in cells)
    weights = sets[0]
    assert "rows: query position, columns: key position" in weights.select_one(".heatmap-title").get_text()
    value, difference = weights.select(".legend")
    assert (value["data-scale"], value["data-min"], value["data-max"]) == ("sequential", "0", "1")    # probabilities
    assert (difference["data-scale"], difference["data-min"], difference["data-max"]) == ("diverging", "-0.5", "0.5")
    signed = page.select(f"section[id='{PE}'] .legend")[0]
    assert (signed["data-scale"], signed["data-min"], signed["data-max"]) == ("diverging", "-1", "1")   # centred on 0
    zero = weights.select("figure[data-panel=difference] td")[0]        # 0.5 - 1.0 = -0.5: the bluest step
    assert zero["class"] == ["d0"] and "difference -0.5" in zero["title"]


def test_the_header_speaks_words_and_names_no_folder_of_the_grading_machine():
    page = soup(course())
    meta = page.select_one(".meta").get_text(" ", strip=True)
    assert "call limit 10.0 s" in meta and "hidden cases off" in meta and "memory 2048 MiB" in meta
    html = str(page)
    assert not re.search(r"call_timeout_s|hidden_cases|memory_mb|/srv/grading", html)
    assert page.title.get_text() == "Grading report — bob"


def test_the_page_is_self_contained_and_runs_no_script():
    html = render(course(), "html")
    page = BeautifulSoup(html, "html.parser")
    csp = page.select_one('meta[http-equiv="Content-Security-Policy"]')["content"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert not page.select("script") and not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert len(html.encode()) < 120_000, len(html.encode())


def test_markdown_lists_what_needs_work_first_and_folds_what_passed():
    md = render(course(todo=1), "md")
    table = md.split("<details>")[0]
    assert table.count("| ❌ |") == 2 and "✅" not in table
    assert "2 exercises need work · 1 not started or not run · 58 passed" in md
    assert "<details><summary>58 passed</summary>" in md
    assert "<details><summary>1 not started or not run</summary>" in md
    assert md.count("**Looks like:**") == 2 and md.count("this case looks like") == 1
    assert "/srv/grading" not in md


def test_exercises_nothing_ran_for_are_one_card_per_reason():
    """A missing module is one card naming its exercises (each still an anchor), not one card each."""
    missing = "your submission has no neurons.py: add the module (start from exercises/neurons.py)"
    r = course(broken=True)
    exercises = tuple(ExerciseResult(e.id, Status.ERROR, 0.0, 1.0, message=missing, source_file="neurons.py")
                      if e.module == "neurons" else e for e in r.exercises)
    page = soup(SubmissionResult(r.submission, exercises, settings=r.settings))
    (card,) = page.select("section.not-graded")
    assert card["data-exercises"] == "5" and missing in card.get_text() and "0 / 5 points" in card.get_text()
    assert [c["id"] for c in card.select("code[id]")] == [f"neurons.f{i}" for i in range(5)]
    assert [c["id"] for c in page.select("section.exercise:not(.not-graded)")] == [SDPA, PE]
    assert "your function" not in card.get_text()                    # there is no such file
    md = render(SubmissionResult(r.submission, exercises, settings=r.settings), "md")
    assert md.count("not graded") == 1 and md.count("<details><summary><b>") == 2


def test_a_grader_fault_keeps_its_own_card_and_row():
    fault = ExerciseResult(SDPA, Status.GRADER_FAULT, 0.0, 3.0, message="the grader failed on this exercise")
    r = course(broken=False)
    r = SubmissionResult(r.submission, tuple(fault if e.id == SDPA else e for e in r.exercises), settings=r.settings)
    page = soup(r)
    assert not page.select("section.not-graded") and page.select_one(f"section[id='{SDPA}']")["data-status"] == \
        "grader fault"
    assert f"| ⚠️ | `{SDPA}` |" in render(r, "md")
