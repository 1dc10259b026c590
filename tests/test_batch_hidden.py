"""Hidden cases in a batch (the instructor's secret seed): they count toward the grade, and the
feedback files a student reads never show their inputs or expected values, not even when the
student's own code prints them or raises them; the feedback still names the failing hidden case
and the diagnosed mistake."""
import json
import os
import sqlite3

import pytest
from bs4 import BeautifulSoup

from fixtures.batch.build import make_class, run_batch
from grader.catalog import select
from grader.pipeline.cases import build_cases

SEED = 271828
SDPA = "attention.scaled_dot_product_attention"
LEAKY = '''def scaled_dot_product_attention(Q, K, V, mask=None):
    print("Q =", Q.flatten()[:4].tolist())
    if Q.dtype == torch.float64:
        raise ValueError("K = " + str(K.flatten()[:4].tolist()))
    scores = Q @ K.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w @ V, w
'''
# Raises on every case an exception whose class is named after the case's queries and whose message
# quotes its keys: on a public case both may be shown, on a hidden case neither.
CLASSY = '''def scaled_dot_product_attention(Q, K, V, mask=None):
    name = "Q_" + "_".join(f"{v:.5f}".replace("-", "m").replace(".", "p") for v in Q.flatten()[:3].tolist())
    raise type(name, (ValueError,), {})("K = " + str(K.flatten()[:4].tolist()))
'''


def class_name(Q) -> str:
    """The exception class CLASSY raises for queries Q."""
    return "Q_" + "_".join(f"{v:.5f}".replace("-", "m").replace(".", "p") for v in Q.flatten()[:3].tolist())


def hidden_values():
    """Strings that would give away the hidden cases: leading digits of inputs and expected outputs."""
    (spec,) = select([SDPA])
    values = []
    for case in build_cases(spec, SEED):
        if not case.hidden:
            continue
        out, weights = spec.reference(*case.args, **dict(case.kwargs))
        for t in (*case.args[:3], out):
            values += [repr(float(v))[:7] for v in t.flatten()[:4].tolist()]
    return [v for v in values if len(v.lstrip("-")) >= 6]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("hidden")
    subs = make_class(root / "subs", {"leaky": {"scaled_dot_product_attention": LEAKY}, "ok": "correct",
                                      "classy": {"scaled_dot_product_attention": CLASSY}})
    env = dict(os.environ, GRADER_SECRET_SEED=str(SEED))
    proc = run_batch(subs, root / "out", SDPA, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "out"


def test_hidden_cases_count_toward_the_grade(graded):
    import sqlite3
    db = sqlite3.connect(graded / "gradebook.sqlite")
    got = {s: (p, n, passed) for s, p, n, passed in
           db.execute("SELECT student, points, cases_total, cases_passed FROM exercises")}
    assert got["ok"] == (3.0, 12, 12)
    assert got["leaky"][1] == 12 and got["leaky"][0] < 3.0
    tests = json.loads((graded / "students" / "leaky" / "results.json").read_text())["tests"]
    hidden = next(t for t in tests if t["name"] == f"{SDPA} [hidden cases]")
    assert hidden["status"] == "failed" and hidden["score"] < hidden["max_score"]


def test_feedback_files_do_not_leak_hidden_inputs_or_expected_values(graded):
    secrets = hidden_values()
    assert len(secrets) > 20
    stored = (graded / "gradebook.sqlite").read_bytes().decode("latin-1")
    # The leaky code ran on the hidden cases (they raised), yet the engine kept their text out of
    # the result itself, so not even the instructor's gradebook holds the values.
    assert "raised ValueError" in stored, "the leaky code did not run on hidden cases: the test proves nothing"
    assert not [s for s in secrets if s in stored]
    for name in ("results.json", "feedback.md", "feedback.html"):
        text = (graded / "students" / "leaky" / name).read_text()
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{name} shows hidden values {leaked[:5]}"


def test_feedback_still_names_the_failing_hidden_case_and_the_mistake(graded):
    page = BeautifulSoup((graded / "students" / "leaky" / "feedback.html").read_text(), "html.parser")
    card = page.find(id=lambda i: i and i.startswith(SDPA) and page.find(id=i).find("tr", {"data-case": "hidden 1"}))
    assert card is not None, "no exercise card holds the hidden cases"
    rows = {r["data-case"]: r.get_text(" ") for r in card.find_all("tr", {"data-case": True})
            if r["data-case"].startswith("hidden ")}
    # Failed cases are rows; the cases that passed are named in one line below them.
    passed = card.find("p", class_="note", string=lambda t: t and t.startswith("Passed:"))
    listed = {n.strip(" .") for n in passed.get_text()[len("Passed:"):].split(",")} if passed else set()
    named = set(rows) | {n for n in listed if n.startswith("hidden ")}
    assert sorted(named) == [f"hidden {i}" for i in range(1, 7)] and len(rows) >= 2
    # The known mistake is named once per exercise (a case repeats it only where it differs).
    assert "missing 1/sqrt(d_k)" in card.get_text(" ") and "inputs withheld" in rows["hidden 1"]
    assert "raised ValueError" in rows["hidden 6"]
    tests = json.loads((graded / "students" / "leaky" / "results.json").read_text())["tests"]
    hidden = next(t for t in tests if t["name"].endswith("[hidden cases]"))
    assert "hidden 1: failed" in hidden["output"] and "missing 1/sqrt(d_k)" in hidden["output"]
    assert "hidden 6: error" in hidden["output"]


def test_an_exception_class_and_message_made_of_hidden_inputs_leak_nothing(graded):
    """The student's own exception class is named after each case's queries, its message quotes the
    keys: the public cases may show them, the per-student feedback files never show a hidden case's."""
    (spec,) = select([SDPA])
    cases = build_cases(spec, SEED)
    public = {class_name(c.args[0]) for c in cases if not c.hidden}
    secret = ({class_name(c.args[0]) for c in cases if c.hidden} | set(hidden_values())) - public
    db = sqlite3.connect(graded / "gradebook.sqlite")
    stored = json.loads(db.execute("SELECT result FROM submissions WHERE student = 'classy'").fetchone()[0])
    (e,) = stored["exercises"]
    assert {c["failure"] for c in e["cases"]} == {"exception"}, "CLASSY did not raise on every case: proves nothing"
    html = (graded / "students" / "classy" / "feedback.html").read_text()
    assert [n for n in public if n in html], "no public case shows its class: the check below would prove nothing"
    for name in ("results.json", "feedback.md", "feedback.html"):
        text = (graded / "students" / "classy" / name).read_text()
        leaked = [s for s in secret if s in text]
        assert not leaked, f"{name} shows hidden inputs {leaked[:5]}"

