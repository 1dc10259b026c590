"""grader.similarity on a class built from the course's own fixtures (test_similarity_disguise.make_class):
copies are flagged however they are disguised, independent solutions and the stub are not,
notebooks are compared on their code cells, starter code is subtracted, a previous term is
compared with this one only, and hostile text stays text in every page."""
from __future__ import annotations

import base64
import shutil
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from copydetect.utils import filter_code

from grader.errors import SubmissionError
from grader.similarity import SimilarityError, Settings, Term, check, render, validate
from grader.similarity.sources import code_made_at_run_time
from test_similarity_disguise import (HOSTILE_ID, PAYLOAD, ROOT, disguise, make_class, make_previous_term, rename,
                                      reverse_functions)

STUBS = str(ROOT / "exercises")


def entries(folder: Path) -> dict[str, str]:
    return {p.name.removesuffix(".zip"): str(p) for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    make_class(root)
    return root


@pytest.fixture(scope="module")
def report(klass):
    return check(entries(klass), ["rnn"], [STUBS])


def pair(report, a, b):
    found = [p for m in report.modules for p in m.pairs if {p.a.label, p.b.label} == {a, b}]
    return found[0] if found else None


def test_a_copy_with_renamed_variables_and_reordered_functions_is_flagged(report):
    p = pair(report, "alice", "bob")
    assert p is not None and p.flagged and min(p.share_a, p.share_b) > 0.9, p
    assert p.regions_a and p.regions_b and p.page.startswith("pairs/rnn-")      # its side-by-side page


def test_renaming_changes_nothing_the_tokenizer_keeps_and_reordering_keeps_the_runs():
    source = (ROOT / "solutions" / "rnn.py").read_text()
    renamed = rename(source, {"states": "collected", "dh_next": "carry", "h_t": "now", "da": "grad_pre"})
    assert renamed != source and "collected" in renamed
    assert filter_code(renamed, "x.py", "python")[0] == filter_code(source, "x.py", "python")[0]
    shuffled = reverse_functions(source)
    assert shuffled.index("def rnn_bptt") < shuffled.index("def rnn_cell")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("a", source), ("b", shuffled)):
            (Path(tmp) / name).mkdir()
            (Path(tmp) / name / "rnn.py").write_text(text)
        p = check(entries(Path(tmp)), ["rnn"], [STUBS]).modules[0].pairs[0]
    assert p.flagged and min(p.share_a, p.share_b) > 0.95


def test_independent_solutions_and_the_stub_are_not_flagged(report):
    rnn = report.modules[0]
    assert rnn.starter_only == ("dave",)
    assert not [p for p in rnn.pairs if "dave" in (p.a.label, p.b.label)]
    for a, b in (("alice", "carol"), ("alice", "frank"), ("carol", "frank"), ("bob", "carol"), ("carol", "erin")):
        p = pair(report, a, b)
        assert p is None or (not p.flagged and p.score < 0.35), p


def test_a_notebook_and_the_py_it_was_copied_from_are_flagged(report):
    p = pair(report, "erin", "frank")
    assert p is not None and p.flagged and min(p.share_a, p.share_b) > 0.9
    notebook = p.a if p.a.label == "erin" else p.b
    assert notebook.origin.endswith("rnn.ipynb") and "# %% cell 2" in notebook.text
    assert "%timeit" not in [line.strip() for line in notebook.text.splitlines()]      # the magic is commented out


def test_the_starter_code_is_subtracted(klass, report):
    """gina and hank each filled in one line of the same stub, differently: they share nothing
    beyond it. Without the stub subtracted, the docstrings and signatures make them near-identical."""
    assert pair(report, "gina", "hank") is None          # below the floor (20 %)
    two = {s: str(klass / s) for s in ("gina", "hank")}
    assert check(two, ["rnn"], [STUBS], Settings(floor=0.01)).modules[0].pairs == ()
    unsubtracted = check(two, ["rnn"], []).modules[0].pairs[0]
    assert unsubtracted.flagged and unsubtracted.score > 0.8
    p = pair(report, "alice", "gina")        # gina's one line is the solution's, but one line is no case
    assert p is None or not p.flagged


def test_a_zip_is_read_like_a_folder(report):
    p = pair(report, "carol", "ivan")
    assert p is not None and p.flagged


def test_against_a_previous_term_pairs_across_terms_only(klass, tmp_path):
    make_previous_term(tmp_path / "last")
    r = check(entries(klass), ["rnn"], [STUBS], previous=entries(tmp_path / "last"))
    assert r.previous == 2
    pairs = r.modules[0].pairs
    assert not [p for p in pairs if p.a.term is Term.PREVIOUS]           # always this term first
    assert not [p for p in pairs if {p.a.student, p.b.student} == {"olga", "oscar"}]     # identical, last term
    p = pair(r, "carol", "olga (previous term)")
    assert p is not None and p.flagged and p.b.term is Term.PREVIOUS
    assert pair(r, "alice", "bob").flagged                                 # this term's pairs are still there


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


def test_hostile_code_and_ids_stay_text_in_every_page(report):
    files = render.render(report, "course")
    pages = {k: v for k, v in files.items() if k.endswith(".html")}
    hostile = [p for p in report.flagged if HOSTILE_ID in (p.a.student, p.b.student)]
    assert hostile, "the hostile copy of alice is flagged, so its page shows the payload"
    assert len(pages) == 1 + len(report.flagged)
    for name, html in pages.items():
        parsed = _Elements()
        parsed.feed(html)
        assert "script" not in parsed.tags and "img" not in parsed.tags, name
        assert not [a for a in parsed.attrs if a.startswith("on")], name
        assert "Content-Security-Policy" in html and "default-src 'none'" in html
        assert "/" not in name.removeprefix("pairs/") and HOSTILE_ID not in name
    shown = "".join(_text(pages[hostile[0].page]))
    assert PAYLOAD in shown and HOSTILE_ID in shown                   # shown as written, as text


def _text(html):
    parsed = _Elements()
    parsed.feed(html)
    return parsed.text


def test_the_csv_lists_pairs_above_the_floor_and_cannot_be_a_formula(klass, tmp_path):
    shutil.copytree(klass / "alice", tmp_path / "=HYPERLINK(1)")
    shutil.copytree(klass / "bob", tmp_path / "bob")
    r = check(entries(tmp_path), ["rnn"], [STUBS])
    rows = render.csv_text(r).splitlines()
    assert rows[0].startswith("module,student_a,term_a,student_b")
    assert rows[1].startswith("rnn,'=HYPERLINK(1),this term,bob,this term,") and ",yes,pairs/rnn-1.html" in rows[1]


def test_wording_informs_and_does_not_accuse(report):
    p = pair(report, "alice", "bob")
    words = render.sentence(p)
    assert words.startswith("These submissions share 9") and "beyond the starter files" in words and "review" in words
    index = render.render(report)["index.html"]
    for accusing in ("plagiar", "cheat", "guilty", "copied from"):
        assert accusing not in index.lower()
    assert "no student code was run" in index.lower()


def test_bad_inputs_are_explained(klass, tmp_path):
    with pytest.raises(SimilarityError, match="no submissions to compare"):
        check({}, ["rnn"], [STUBS])
    with pytest.raises(SimilarityError, match=r"found 1 \(only alice\).*--against"):
        check({"alice": str(klass / "alice")}, ["rnn"], [STUBS])
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not a zip")
    r = check({"alice": str(klass / "alice"), "bob": str(klass / "bob"), "broken": str(tmp_path / "broken.zip")},
              ["rnn"], [STUBS])
    assert any(n.startswith("broken: not compared:") and "not a readable zip" in n for n in r.notes)
    assert pair(r, "alice", "bob").flagged
    with pytest.raises(SimilarityError, match=r"--threshold 50: .*write 0.5"):
        validate(Settings(threshold=50))
    with pytest.raises(SimilarityError, match="above --threshold"):
        validate(Settings(threshold=0.3, floor=0.4))
    with pytest.raises(SubmissionError, match="no such starter file"):
        check({"a": str(klass / "alice"), "b": str(klass / "bob")}, ["rnn"], [str(tmp_path / "nowhere")])


def test_crlf_and_leading_blank_lines_keep_the_regions_on_the_code(tmp_path):
    """pygments normalises newlines and strips blank edges: the texts are prepared the same way,
    so a highlighted region is the code that matched, not text shifted beside it."""
    source = (ROOT / "solutions" / "rnn.py").read_text()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "rnn.py").write_text(source)
    (tmp_path / "b" / "rnn.py").write_bytes(("\n\n\n" + disguise(source, 4)).replace("\n", "\r\n").encode())
    p = check(entries(tmp_path), ["rnn"], [STUBS]).modules[0].pairs[0]
    shown_b = "".join(p.b.text[r.start:r.end] for r in p.regions_b)
    assert "\r" not in p.b.text and "torch.stack(" in shown_b and "zeros_like" in shown_b


def test_only_the_best_ranked_flagged_pairs_get_a_page(klass):
    r = check(entries(klass), ["rnn"], [STUBS], Settings(pages=2))
    rnn = r.modules[0]
    with_page = [p for p in rnn.pairs if p.page]
    assert len(rnn.flagged) > 2 and [p.page for p in with_page] == ["pairs/rnn-1.html", "pairs/rnn-2.html"]
    assert all(p.regions_a for p in with_page) and not any(p.regions_a for p in rnn.flagged if not p.page)
    files = render.render(r)
    assert sorted(k for k in files if k.startswith("pairs/")) == ["pairs/rnn-1.html", "pairs/rnn-2.html"]
    assert f"{rnn.without_page} flagged pairs past the first 2" in files["index.html"]


def test_control_characters_in_an_id_are_shown_not_obeyed(klass, tmp_path):
    """A right-to-left override in a folder name would reorder what the reader sees: it is shown as \\u202e."""
    shutil.copytree(klass / "alice", tmp_path / "eve\u202etxt.exe")
    shutil.copytree(klass / "bob", tmp_path / "bob")
    files = render.render(check(entries(tmp_path), ["rnn"], [STUBS]))
    for name in ("index.html", "pairs/rnn-1.html"):
        assert "\u202e" not in files[name] and "eve\\u202etxt.exe" in files[name]


def test_code_run_from_a_value_is_said_not_compared(tmp_path):
    """The red team's copy was exec(zlib.decompress(base64.b64decode('...'))): one string to the
    fingerprints, below the floor, never listed. What such a call runs is provably not in the text:
    the report says so, by student and line. Python's own exec, eval, compile and marshal.loads only:
    re.compile(PATTERN), torch.compile(model), model.eval() and exec("x = 1") are not named."""
    source = (ROOT / "solutions" / "rnn.py").read_text()
    packed = base64.b64encode(zlib.compress(source.encode())).decode()
    for name, text in (("a", source), ("b", source),
                       ("m", f"import base64, zlib\nexec(zlib.decompress(base64.b64decode('{packed}')))\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "rnn.py").write_text(text)
    report = check(entries(tmp_path), ["rnn"], [STUBS])
    assert [n for n in report.notes if "runs code made at run time" in n] == [
        "m: rnn runs code made at run time (exec at line 2): what that code is was not in its text and was not "
        "compared; read it by hand"]
    assert not code_made_at_run_time("import re, torch\nP = re.compile(x)\nm = torch.compile(f)\nmodel.eval()\n"
                                     "exec('x = 1')\njson.loads(s)\n")
    assert code_made_at_run_time("import marshal\nf = marshal.loads(b)\n") == "marshal.loads at line 2"
