"""Submissions as folders, zips and single files; salvage of modules that will not import."""
import ast
import json
import zipfile

import pytest

from conftest import SOLUTIONS
from grader.submission.loader import SubmissionError, load_submission, salvage
from grader.submission.reading import TooDeep, parse


def test_folder(tmp_path):
    (tmp_path / "attention.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("hi")
    sub = load_submission(str(tmp_path))
    assert sub.files == {"attention": "x = 1\n"} and not sub.problems


def test_empty_folder_is_a_problem_not_a_crash(tmp_path):
    assert "no .py modules" in load_submission(str(tmp_path)).problems[0]


def test_zip_with_nested_folder(tmp_path):
    z = tmp_path / "s.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("exercises/attention.py", "y = 2\n")
        f.writestr("__MACOSX/exercises/._attention.py", "junk")
    assert load_submission(str(z)).files == {"attention": "y = 2\n"}


def test_corrupt_zip_gets_a_clear_message(tmp_path):
    z = tmp_path / "bad.zip"
    z.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(SubmissionError, match="not a readable zip archive"):
        load_submission(str(z))


def test_missing_path(tmp_path):
    with pytest.raises(SubmissionError, match="no such file or folder"):
        load_submission(str(tmp_path / "nope"))


def test_salvage_drops_the_broken_definition_and_top_level_code():
    src = ('"""Module doc\ndef not_code(): mentioned in a docstring\n"""\nimport sys\n'
           "sys.exit(0)\n\ndef good():\n    return 1\n\ndef bad(:\n    return 2\n\nLIMIT = 3\nwhile True:\n    pass\n")
    fixed, dropped = salvage(src)
    tree = ast.parse(fixed)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert names == {"good"} and "LIMIT = 3" in fixed and "sys.exit" not in fixed
    assert len(fixed.splitlines()) == len(src.splitlines())       # line numbers kept
    assert any("syntax error" in d for d in dropped) and any("runs at import" in d for d in dropped)


def test_a_corrupt_notebook_costs_only_its_module(tmp_path):
    (tmp_path / "attention.py").write_text("x = 1\n")
    (tmp_path / "tokens.ipynb").write_text("{ not json")
    sub = load_submission(str(tmp_path))
    assert sub.files == {"attention": "x = 1\n"}
    assert len(sub.problems) == 1 and "tokens.ipynb" in sub.problems[0]


def test_a_source_saved_as_utf16_or_holding_null_bytes_is_graded_and_said(tmp_path):
    (tmp_path / "attention.py").write_bytes("x = 'é'\n".encode("utf-16"))
    (tmp_path / "tokens.py").write_bytes(b"a = 1\nb = \x002\n\x00\n")
    sub = load_submission(str(tmp_path))
    assert sub.files == {"attention": "x = 'é'\n", "tokens": "a = 1\nb = 2\n\n"}
    assert sub.problems == ("attention.py: saved as UTF-16 text, graded as such; save it as UTF-8 (your editor's "
                            "encoding setting), the encoding Python reads",
                            "tokens.py: null bytes (\\x00) on lines 2, 3, removed before grading (Python refuses "
                            "them); delete them from the file")


def test_a_linked_module_is_pointed_out(tmp_path):
    (tmp_path / "real.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "attention.py").symlink_to(tmp_path / "real.py")
    assert load_submission(str(tmp_path / "sub")).problems == (
        "attention.py: a symbolic link, not a file: put the file itself in the submission",)
    (tmp_path / "sub" / "attention.py").unlink()


def test_a_linked_notebook_is_not_read_wherever_it_points(tmp_path):
    """A classmate's notebook, the instructor's source notebook, one beside it in the same folder: a
    link is named, never followed (the grader reading it is not confined; the red team's bob got 7 / 7
    in a batch with only a link to the instructor's notebook)."""
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": "x = 1\n", "outputs": [],
                           "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "neurons.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "neurons.ipynb").symlink_to(tmp_path / "alice" / "neurons.ipynb")
    (tmp_path / "bob" / "real.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "bob" / "tokens.ipynb").symlink_to("real.ipynb")
    bob = load_submission(str(tmp_path / "bob"))
    assert set(bob.files) == {"real"}, bob.files
    assert bob.problems == tuple(f"{name}: a symbolic link, not a file: put the file itself in the submission"
                                 for name in ("neurons.ipynb", "tokens.ipynb"))


def test_a_notebook_beside_its_module_is_said_to_be_passed_over(tmp_path):
    """neurons.py (the stub, say) and neurons.ipynb (the work): the .py is graded, and the feedback says the
    notebook was not (the outsider's class graded 0 / 7, with no word of the notebook)."""
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": "x = 1\n", "outputs": [],
                           "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "both").mkdir()
    (tmp_path / "both" / "neurons.py").write_text("y = 2\n")
    (tmp_path / "both" / "neurons.ipynb").write_text(json.dumps(notebook))
    with zipfile.ZipFile(tmp_path / "both.zip", "w") as zf:
        zf.writestr("hw/neurons.py", "y = 2\n")
        zf.writestr("hw/neurons.ipynb", json.dumps(notebook))
    for path, py, nb in ((tmp_path / "both", "neurons.py", "neurons.ipynb"),
                         (tmp_path / "both.zip", "hw/neurons.py", "hw/neurons.ipynb")):
        sub = load_submission(str(path))
        assert sub.files == {"neurons": "y = 2\n"} and sub.origin == {"neurons": py}
        assert sub.problems == (f"{nb}: not graded, {py} is: a module is read from its .py when both are there; "
                                "remove the one you do not mean to hand in",)


def test_modules_in_a_folder_inside_are_pointed_out(tmp_path):
    (tmp_path / "hw" / "hw3").mkdir(parents=True)
    (tmp_path / "hw" / "hw3" / "attention.py").write_text("x = 1\n")
    assert load_submission(str(tmp_path / "hw")).problems == (
        "hw: no .py modules found (expected files such as attention.py, or notebooks such as attention.ipynb); "
        "found hw3/attention.py in a folder inside: put the modules at the top of the submission",)


def test_a_zip_says_what_it_passed_over_and_grades_its_notebooks(tmp_path):
    z = tmp_path / "s.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("hw/old/attention.py", "old = 1\n")
        f.writestr("hw/attention.py", "new = 1\n")
        f.writestr("hw/big.py", "x" * (3 << 20))
        link = zipfile.ZipInfo("hw/rnn.py")
        link.external_attr = (0o120777 << 16)
        f.writestr(link, "/etc/passwd")
        f.writestr("hw/tokens.ipynb", json.dumps({"cells": [{"cell_type": "code", "source": "t = 1\n"}]}))
    sub = load_submission(str(z))
    assert sub.files["attention"] == "new = 1\n" and "t = 1" in sub.files["tokens"] and set(sub.files) == {
        "attention", "tokens"}
    assert sub.origin["tokens"] == "hw/tokens.ipynb"
    assert sub.problems == (
        "hw/big.py: larger than 2 MiB; a source file this big is not an exercise",
        "hw/rnn.py: a symbolic link in the archive, not a file: zip the file itself (zip -r without -y)",
        "hw/attention.py: graded; the archive holds more than one attention.py, and hw/old/attention.py was passed "
        "over (the one nearest the top is graded)")


def test_what_a_submission_holds_together_is_bounded(tmp_path, monkeypatch):
    from grader.submission import reading
    monkeypatch.setattr(reading, "MAX_TOTAL", 10)
    (tmp_path / "attention.py").write_text("x = 1\n")
    (tmp_path / "tokens.py").write_text("y = 22\n")
    sub = load_submission(str(tmp_path))
    (tmp_path / "tokens2.py").write_text("y = 22\n")
    sub = load_submission(str(tmp_path))
    assert list(sub.files) == ["attention"] and sub.problems == (
        "tokens.py and what follows: passed over: with it the submission's files would hold more than 0 MiB; clear "
        "the notebooks' outputs and leave out what is not an exercise",)


def test_a_thousand_problems_are_said_as_a_dozen(tmp_path):
    z = tmp_path / "links.zip"
    with zipfile.ZipFile(z, "w") as f:
        for i in range(40):
            link = zipfile.ZipInfo(f"m{i}.py")
            link.external_attr = (0o120777 << 16)
            f.writestr(link, "/etc/passwd")
    problems = load_submission(str(z)).problems
    assert len(problems) == 13 and problems[-1] == "... and 28 more like these"


def test_a_module_not_graded_is_explained_by_what_the_loader_said_a_near_name_or_the_file_defining_it():
    from grader.catalog import catalog
    from grader.pipeline.engine import _no_module
    from grader.submission.loader import Submission
    one_notebook = "import torch\n\ndef heaviside(z):\n    return (z >= 0).to(z.dtype)\n\ndef sign(z):\n    pass\n"
    sub = Submission("s", {"Attention": "", "tokens (1)": "", "homework1": one_notebook},
                     {"Attention": "Attention.py", "tokens (1)": "tokens (1).py", "homework1": "homework1.ipynb"},
                     ("rnn.ipynb: not a readable Jupyter notebook: its JSON is broken",))
    specs = catalog()
    assert _no_module(sub, specs["attention.causal_mask"]) == ("your submission has no attention.py, but it has "
                                                               "Attention.py: name it attention.py")
    assert _no_module(sub, specs["tokens.bpe_encode"]) == ("your submission has no tokens.py, but it has "
                                                           "tokens (1).py: name it tokens.py")
    assert _no_module(sub, specs["rnn.rnn_cell"]) == ("your rnn module was not graded: rnn.ipynb: not a readable "
                                                      "Jupyter notebook: its JSON is broken")
    assert _no_module(sub, specs["gru.gru_cell"]) == ("your submission has no gru.py: add the module (start from "
                                                      "exercises/gru.py)")
    assert _no_module(sub, specs["neurons.heaviside"]) == (
        "your submission has no neurons.py, but homework1.ipynb defines heaviside: each function is graded from the "
        "file named after its module, so neurons.heaviside from neurons.py (or neurons.ipynb); put the functions of "
        "the neurons module in that file")
    assert _no_module(sub, specs["neurons.perceptron_update"]).endswith("(start from exercises/neurons.py)")


def test_a_folder_of_code_a_module_imports_is_said_with_the_fix(tmp_path):
    """Only the modules at the top of a submission reach the child: a package of helpers beside them,
    which plain Python imports, is said once, where the import fails, not only as "not installed"."""
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("from .numerics import shift\n")
    (tmp_path / "helpers" / "numerics.py").write_text("def shift(z):\n    return z\n")
    (tmp_path / "notes").mkdir()                      # code no module imports: not said
    (tmp_path / "notes" / "scratch.py").write_text("x = 1\n")
    (tmp_path / "data").mkdir()                       # imported name, but no code in it: not said
    (tmp_path / "activations.py").write_text("import torch\nfrom helpers.numerics import shift\nimport data\n")
    (tmp_path / "losses.py").write_text("import math, helpers\n")
    sub = load_submission(str(tmp_path))
    assert set(sub.files) == {"activations", "losses"}
    assert sub.problems == ("helpers/: a folder of code that activations.py imports: only the files at the top of the "
                            "submission are graded, so it cannot be imported there; put its code in helpers.py beside "
                            "activations.py",)


DEEP = "JUNK = " + "1+" * 200_000 + "1\n"        # deeper than ast.parse goes: RecursionError, not SyntaxError


def test_a_statement_too_deep_for_the_parser_is_dropped_by_the_salvage_as_a_syntax_error():
    """The red team's `x = 1+1+...` of 200,000 terms made every reader of the module's tree raise
    RecursionError: a grader fault for every exercise of the module. It is a SyntaxError at its
    statement, which the salvage drops, and only it: the imports above it stay."""
    source = "import math\n\n" + DEEP + "\n\ndef f(x):\n    return math.sqrt(x)\n"
    with pytest.raises(TooDeep) as info:
        parse(source)
    assert info.value.lineno == 3 and 3 <= info.value.end_lineno < 6       # its lines, up to the def
    kept, dropped = salvage(source)
    assert "import math" in kept and "def f(x):" in kept and "JUNK" not in kept
    assert any("too deeply nested for Python to read" in d for d in dropped)


def test_a_module_too_deep_for_the_parser_is_graded_not_a_grader_fault(grade_dir, tmp_path):
    source = (SOLUTIONS / "attention.py").read_text()
    (tmp_path / "attention.py").write_text(source.replace("\ndef causal_mask", "\n" + DEEP + "\ndef causal_mask", 1))
    result = grade_dir(tmp_path, "attention.causal_mask")
    assert [(e.status.value, e.points) for e in result.exercises] == [("passed", 1.0)]
    assert any("does not import as written" in err for err in result.errors)
