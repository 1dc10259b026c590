"""grader/submission/notebook.py: a handed-in .ipynb becomes the source of one module.

Fixtures in tests/fixtures/notebooks/ are notebooks as Jupyter writes them:
- magics/attention.ipynb: the four attention solutions spread over cells with line magics,
  shell escapes, a %%bash cell, a %%time cell, `get_ipython()`, `f?`, an indented magic, a
  self-check with `from grader.notebook import check`, and an nbgrader test cell;
- corrupt/, not_a_notebook/, empty/attention.ipynb: JSON cut short, JSON without cells, no code.
The module is the notebook's file stem: attention.ipynb is the module attention.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT, statuses
from grader.submission.loader import SubmissionError, load_submission
from grader.submission.notebook import notebook_source
from grader.submission.notebook import python_of_cell

NB = FIXTURES / "notebooks"


def test_magics_and_shell_escapes_are_commented_out_and_the_rest_parses():
    source = notebook_source(str(NB / "magics" / "attention.ipynb"))
    ast.parse(source)                                    # valid Python once IPython syntax is gone
    live = [line.split("# (")[0] for line in source.splitlines() if not line.lstrip().startswith("#")]
    for ipython_only in ("%matplotlib", "!pip", "%%bash", "echo $f", "!ls", "%env", "get_ipython()",
                         "scaled_dot_product_attention?", "%timeit"):
        assert not any(ipython_only in line for line in live), ipython_only
    assert "def scaled_dot_product_attention(" in source          # the %%time cell's body is kept
    assert "import torch" in source and "causal_mask(3)" in source


def test_the_graders_own_cells_are_left_out():
    """Self-check calls and nbgrader test cells would count as 'importing the grader' for every exercise."""
    source = notebook_source(str(NB / "magics" / "attention.ipynb"))
    tree = ast.parse(source)
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any(getattr(n, "module", "") and n.module.startswith("grader") for n in imports)
    assert "check('attention.multi_head_attention'" not in source
    assert "# %% cell 9: nbgrader autograder test" in source


def test_strings_keep_lines_that_look_like_magics():
    cell = 'NOTES = """\n% of the scores\n!important\n"""\nx = (1\n     % 2)\n'
    assert python_of_cell(cell) == cell.rstrip("\n")


def test_indented_magic_keeps_its_block_valid_and_line_count():
    cell = "if True:\n    %timeit f()\nx = 1\nfiles = !ls\nf?\n"
    out = python_of_cell(cell)
    assert len(out.splitlines()) == len(cell.splitlines())
    ast.parse(out)
    assert out.splitlines()[1].strip().startswith("pass  # (IPython syntax")
    assert out.splitlines()[2] == "x = 1"


def test_a_top_level_display_is_left_out_unless_the_notebook_has_its_own(tmp_path):
    """Jupyter's display is a builtin there: a notebook that shows its mask with it imports as written.
    A display of the notebook's own (def, assignment) is code like any other, and a call inside a
    function is the function's."""
    cell = "display(causal_mask(3))\nx = 1\ndisplay(\n    x)\ndef f():\n    display(x)\n"
    out = python_of_cell(cell)
    assert out.splitlines()[0].startswith("# (Jupyter's display, not run by the grader) display(causal_mask(3))")
    assert out.splitlines()[1] == "x = 1" and out.splitlines()[2].startswith("# (Jupyter")
    assert out.splitlines()[3].startswith("#") and out.splitlines()[5] == "    display(x)"
    assert len(out.splitlines()) == len(cell.splitlines())
    assert python_of_cell(cell, defines_display=True) == cell.rstrip("\n")
    nb = {"cells": [{"cell_type": "code", "source": "def display(x):\n    print(x)\n"},
                    {"cell_type": "code", "source": "display(1)\n"}], "metadata": {}, "nbformat": 4}
    (tmp_path / "own.ipynb").write_text(json.dumps(nb))
    assert "\ndisplay(1)\n" in notebook_source(str(tmp_path / "own.ipynb"))
    nb["cells"][0]["source"] = "import torch\n"
    (tmp_path / "jupyter.ipynb").write_text(json.dumps(nb))
    assert "\ndisplay(1)\n" not in notebook_source(str(tmp_path / "jupyter.ipynb"))


def test_a_notebook_that_does_not_import_is_named_as_handed_in(grade_dir, tmp_path):
    source = (ROOT / "solutions" / "attention.py").read_text()
    nb = {"cells": [{"cell_type": "code", "source": source}, {"cell_type": "code", "source": "print(undefined)\n"}],
          "metadata": {}, "nbformat": 4}
    (tmp_path / "attention.ipynb").write_text(json.dumps(nb))
    result = grade_dir(tmp_path, "attention.causal_mask")
    assert any(e.startswith("attention.ipynb does not import as written: NameError") for e in result.errors), \
        result.errors
    assert result.exercises[0].passed


def test_cell_magic_with_a_non_python_body_is_commented_whole():
    out = python_of_cell("%%writefile helper.py\ndef f():\n    return 1\n")
    assert all(line.startswith("#") for line in out.splitlines() if line.strip())


def test_the_notebook_grades_like_a_module(grade_dir):
    result = grade_dir(NB / "magics" / "attention.ipynb", "attention")
    assert statuses(result) == {e: "passed" for e in ("attention.causal_mask",
                                                      "attention.scaled_dot_product_attention",
                                                      "attention.multi_head_attention",
                                                      "attention.positional_encoding")}
    assert result.score == result.max_score
    assert all(e.source_file == "attention.ipynb" for e in result.exercises)     # relative to the submission


def test_a_folder_of_notebooks_is_a_submission(grade_dir):
    """nbgrader's submitted/<student>/<assignment>/ holds notebooks only: the folder is graded as one."""
    result = grade_dir(NB / "magics", "attention.causal_mask")
    assert statuses(result) == {"attention.causal_mask": "passed"}


@pytest.mark.parametrize("scenario, expected", [
    ("corrupt", "its JSON is broken at line"),
    ("not_a_notebook", 'not a Jupyter notebook (no "cells" list'),
    ("empty", "the notebook has no code"),
])
def test_unreadable_notebooks_raise_a_clear_submission_error(scenario, expected):
    path = NB / scenario / "attention.ipynb"
    with pytest.raises(SubmissionError) as info:
        load_submission(str(path))
    assert expected in str(info.value)
    assert str(info.value).startswith("attention.ipynb: ")     # names the file as the student knows it
    assert str(path.parent) not in str(info.value)             # not by the grading machine's folders
    assert "save it" in str(info.value) or "hand" in str(info.value)   # and says what to do


def test_binary_and_empty_files_and_other_languages(tmp_path):
    binary = tmp_path / "attention.ipynb"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(SubmissionError, match="not UTF-8 text"):
        notebook_source(str(binary))
    blank = tmp_path / "blank.ipynb"
    blank.write_text("")
    with pytest.raises(SubmissionError, match="the file is empty"):
        notebook_source(str(blank))
    r_nb = tmp_path / "r.ipynb"
    r_nb.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "x <- 1", "metadata": {}}],
                                "metadata": {"kernelspec": {"language": "R", "name": "ir"}}}))
    with pytest.raises(SubmissionError, match="a R notebook, not a Python one"):
        notebook_source(str(r_nb))


def test_nbformat3_notebooks_are_read(tmp_path):
    old = tmp_path / "attention.ipynb"
    old.write_text(json.dumps({"nbformat": 3, "worksheets": [{"cells": [
        {"cell_type": "code", "input": ["import torch\n", "def causal_mask(T):\n", "    return T\n"]}]}]}))
    assert "def causal_mask(T):" in notebook_source(str(old))


def test_grader_check_on_a_corrupt_notebook_says_why():
    """End to end: the real command on a broken notebook."""
    proc = subprocess.run([sys.executable, "-m", "grader", "check", "attention", "--color", "never",
                           "--submission", str(NB / "corrupt" / "attention.ipynb")], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode != 0
    assert "its JSON is broken at line" in proc.stdout + proc.stderr


def test_a_notebook_nested_deeper_than_json_reads_is_the_students_error_not_the_graders(tmp_path):
    """Valid JSON, its metadata 200,000 lists deep (the red team's): json.loads raised RecursionError,
    a grader fault retried on every batch run, and `grader similarity` compared nobody."""
    path = tmp_path / "attention.ipynb"
    path.write_text('{"cells": [], "metadata": {"x": ' + "[" * 200_000 + "]" * 200_000 + "}}")
    with pytest.raises(SubmissionError, match="its JSON nests too deeply to read"):
        load_submission(str(path))


def test_a_null_byte_in_a_cell_is_left_out_as_in_a_py_file(tmp_path):
    """JSON carries \\u0000; Python refuses it anywhere in a source: the salvage gave up on the whole
    module ("too many syntax errors"). A .py file's null bytes are removed, and a notebook's are too."""
    path = tmp_path / "attention.ipynb"
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
             for s in ("def f(x):\n    return x\n", "y = 1 \u0000\n")]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    source = notebook_source(str(path))
    assert "\x00" not in source and "def f(x):" in source
    ast.parse(source)
