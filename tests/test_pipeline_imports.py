"""grader.pipeline.imports: a module that does not import as written costs its own exercises, not
those of the student's modules that import it (directly or through another), which get its
salvaged copy; and an import that fails in the graded child is reported as the import failure it
is, never as a crashed process or "two calls in a row"."""
import dataclasses
import json

import torch

from grader.catalog.spec import Case, ExerciseSpec
from grader.pipeline.engine import grade
from grader.pipeline.static import imported_modules
from grader.results import FailureKind, Status
from grader.submission.loader import salvage, salvage_for_importers
from scenarios import SOLUTIONS, source, submission

NOT_SAID = ("ended without returning", "two calls in a row")


def _cases(gen):
    return [Case("small", (torch.randn(2, 3, generator=gen),)), Case("wide", (torch.randn(3, 5, generator=gen),))]


def toy(function, reference=lambda x: 2 * x):
    return ExerciseSpec(id=f"toy.{function}", cases=_cases, reference=reference, reference_source="2 * x")


BROKEN_HELPER = '''import torch


def double(x):
    return 2 * x


def half(x):
    return x / (2
'''


def write(tmp_path, **modules):
    folder = tmp_path / "sub"
    folder.mkdir()
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
    return str(folder)


def said_of(exercise):
    return [c.message for c in exercise.cases] + list(exercise.notes) + [exercise.message]


def said(result):
    return [m for e in result.exercises for m in said_of(e)]


def test_imported_modules_reads_every_import_form():
    files = {"toy": "import helper\nimport helper.sub as h\nfrom other import f\nimport os, torch\n"
                    "def g():\n    import late\n    from . import rel\n",
             "helper": "", "other": "", "late": "", "rel": "", "os": ""}
    assert sorted(imported_modules("toy", files)) == ["helper", "late", "os", "other"]
    assert imported_modules("toy", {"toy": "import toy\n"}) == []
    broken = {"toy": "from helper import f\n\n\ndef g(:\n    pass\n", "helper": ""}
    assert imported_modules("toy", broken) == ["helper"]       # read from the salvaged copy


def test_salvage_for_importers_keeps_a_stand_in_that_raises():
    fixed = salvage_for_importers(BROKEN_HELPER, "helper", "SyntaxError at line 9")
    assert len(fixed.splitlines()) == len(BROKEN_HELPER.splitlines())          # line numbers kept
    namespace = {}
    exec(compile(fixed, "helper.py", "exec"), namespace)
    assert namespace["double"](3) == 6
    try:
        namespace["half"](3)
    except ImportError as e:
        assert "half could not be loaded: helper.py does not import as written (SyntaxError at line 9)" in str(e)
    else:
        raise AssertionError("the stand-in returned")
    assert "def half" not in salvage(BROKEN_HELPER)[0]          # the module's own copy has none


def test_a_syntax_error_in_attention_costs_nothing_in_transformer_and_moe(grade_dir):
    """The scenario syntax_error_imported: every exercise of attention, transformer and moe passes;
    the importers' notes name attention.py and the SyntaxError's line."""
    folder = submission("syntax_error_imported")
    line = next(i for i, text in enumerate(source("syntax_error_imported").splitlines(), 1) if "shapes:" in text)
    result = grade_dir(folder, "attention", "transformer", "moe")
    assert {e.id: e.status for e in result.exercises if e.status is not Status.PASSED} == {}
    assert result.score == result.max_score
    for e in result.exercises:
        if e.module == "attention":
            continue
        through = " (through transformer.py)" if e.module == "moe" else ""
        note = next(n for n in e.notes if n.startswith("attention.py, which"))
        assert f"attention.py, which {e.module}.py imports{through}, does not import as written: SyntaxError" in note
        assert f"line {line}" in note, note
    assert not [m for m in said(result) if any(s in m for s in NOT_SAID)]
    assert len(result.errors) == 1 and result.errors[0].startswith("attention.py does not import as written")


def test_a_broken_function_the_importer_takes_is_the_substitute_where_the_spec_declares_one(
        tmp_path, grade_dir):
    """syntax_error's attention.py breaks positional_encoding, which transformer.py imports by
    name: transformer_forward, graded with the grader's positional_encoding, still passes."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "attention.py").write_text(source("syntax_error"))
    (folder / "transformer.py").write_text((SOLUTIONS / "transformer.py").read_text())
    result = grade_dir(folder, "transformer.transformer_forward", "attention.positional_encoding")
    by_id = {e.id: e for e in result.exercises}
    assert by_id["transformer.transformer_forward"].status is Status.PASSED
    assert by_id["attention.positional_encoding"].status is Status.ERROR      # charged where it is
    assert any("line 125" in n for n in by_id["transformer.transformer_forward"].notes)


def test_what_an_importer_calls_from_the_dropped_part_says_why(tmp_path, sandbox, config):
    """`from helper import half` imports; calling half raises the stand-in's ImportError. The
    module importing it is not itself said to be broken; `import helper` works the same way."""
    path = write(tmp_path, helper=BROKEN_HELPER,
                 toy="from helper import double, half\nimport helper\n\n\n"
                     "def twice(x):\n    return double(x)\n\n\n"
                     "def halved(x):\n    return half(x)\n\n\n"
                     "def module_twice(x):\n    return helper.double(x)\n")
    specs = [toy("twice"), toy("halved", lambda x: x / 2), toy("module_twice")]
    result = grade(path, specs, config, sandbox=sandbox)
    twice, halved, module_twice = result.exercises
    assert twice.status is Status.PASSED and module_twice.status is Status.PASSED
    assert halved.status is Status.ERROR
    assert "ImportError: half could not be loaded: helper.py does not import as written" in halved.cases[0].message
    assert "(note: your module does not import as written" not in halved.message
    assert any(n.startswith("helper.py, which toy.py imports, does not import as written") for n in twice.notes)
    assert [e.split(" ")[0] for e in result.errors] == ["helper.py"]


def test_an_import_that_still_fails_is_said_as_such_in_every_case(tmp_path, sandbox, config):
    """toy.py takes a name helper.py never defines: the salvage cannot help, every case is an
    import error (no child is started again for it), none says the process ended."""
    path = write(tmp_path, helper="def other(x):\n    return x\n",
                 toy="from helper import missing\n\n\ndef twice(x):\n    return 2 * x\n")
    (e,) = grade(path, [toy("twice")], config, sandbox=sandbox).exercises
    assert [c.failure for c in e.cases] == [FailureKind.IMPORT_ERROR] * 2
    assert all("cannot import name 'missing'" in c.message for c in e.cases)
    assert not [m for m in said_of(e) if any(s in m for s in NOT_SAID)]


def test_a_dependency_that_raises_at_import_is_salvaged_for_its_importer(tmp_path, sandbox, config):
    path = write(tmp_path, helper="def double(x):\n    return 2 * x\n\n\nraise RuntimeError('setup failed')\n",
                 toy="from helper import double\n\n\ndef twice(x):\n    return double(x)\n")
    (e,) = grade(path, [toy("twice")], config, sandbox=sandbox).exercises
    assert e.status is Status.PASSED
    assert any("helper.py, which toy.py imports, does not import as written: RuntimeError: setup failed" in n
               for n in e.notes)


def test_modules_importing_each_other_are_decided_without_waiting_on_each_other(tmp_path, sandbox, config):
    path = write(tmp_path, toy="import other\n\n\ndef twice(x):\n    return 2 * x\n",
                 other="import toy\n\n\ndef thrice(x):\n    return 3 * x\n")
    thrice = ExerciseSpec(id="other.thrice", cases=_cases, reference=lambda x: 3 * x, reference_source="3 * x")
    result = grade(path, [toy("twice"), thrice], config, sandbox=sandbox)
    assert [e.status for e in result.exercises] == [Status.PASSED, Status.PASSED]


def test_the_catalog_chapters_that_import_others_are_found():
    """The course's own imports, which the mechanism above serves: transformer takes attention's
    functions, moe transformer's feed_forward."""
    files = {p.stem: p.read_text() for p in SOLUTIONS.glob("*.py")}
    assert imported_modules("transformer", files) == ["attention"]
    assert imported_modules("moe", files) == ["transformer"]


def _counting_opens(sandbox, monkeypatch):
    """Every child the grade opens: (module, the source of that module in its folder)."""
    opened, real = [], type(sandbox).open

    def counted(self, workdir, module, **kwargs):
        staged = kwargs.get("staged")       # (folder, [name in workdir, name there]): the child copies them
        path = f"{staged[0]}/{dict(staged[1])[f'{module}.py']}" if staged else f"{workdir}/{module}.py"
        with open(path) as f:
            opened.append((module, f.read()))
        return real(self, workdir, module, **kwargs)
    monkeypatch.setattr(type(sandbox), "open", counted)
    return opened


def test_the_import_is_decided_in_the_exercises_own_child(tmp_path, sandbox, config, monkeypatch):
    """A module that imports as written is tried once, in the first exercise's own child, which
    then serves its cases: one child per exercise, not one more per module for the decision."""
    path = write(tmp_path, toy="def twice(x):\n    return 2 * x\n\n\ndef thrice(x):\n    return 3 * x\n")
    thrice = ExerciseSpec(id="toy.thrice", cases=_cases, reference=lambda x: 3 * x, reference_source="3 * x")
    opened = _counting_opens(sandbox, monkeypatch)
    result = grade(path, [toy("twice"), thrice], config, sandbox=sandbox)
    assert [e.status for e in result.exercises] == [Status.PASSED, Status.PASSED]
    assert len(opened) == 2 and not result.errors


def test_a_child_that_decided_a_broken_import_never_grades(tmp_path, sandbox, config, monkeypatch):
    """The deciding child of a module that raises at import is closed: the cases run in a child
    with the salvaged module, and what the failed import printed or called is no one's."""
    source = ("import torch\nprint('at import')\ntorch.nn.functional.relu(torch.ones(1))\n\n\n"
              "def twice(x):\n    return 2 * x\n\n\nraise RuntimeError('setup failed')\n")
    path = write(tmp_path, toy=source)
    opened = _counting_opens(sandbox, monkeypatch)
    (e,) = grade(path, [toy("twice")], config, sandbox=sandbox).exercises
    assert [m for m, _ in opened] == ["toy", "toy"]
    assert opened[0][1] == source and "setup failed" not in opened[1][1]
    assert e.status is Status.PASSED and "at import" not in e.output
    assert any("could not be imported as written (RuntimeError: setup failed)" in n for n in e.notes)


NOTEBOOK = '''import re
from collections import namedtuple

Scaled = namedtuple("Scaled", "value factor")
FACTOR = dict(times=2)["times"]
PATTERN = re.compile(r"\\d+")
display(PATTERN)


def twice(x):
    return Scaled(FACTOR * x, FACTOR).value
'''


def test_a_broken_notebook_keeps_the_assignments_its_functions_use(tmp_path, sandbox, config, monkeypatch):
    """A notebook's `display(x)` fails outside IPython; the whole salvage also dropped the namedtuple, the
    constant and the compiled pattern the functions use (NameError in every case). The salvage that
    keeps the top-level assignments is tried first, in a child of its own; where one of them is what
    fails, the whole salvage is used, as before."""
    opened = _counting_opens(sandbox, monkeypatch)
    (e,) = grade(write(tmp_path, toy=NOTEBOOK), [toy("twice")], config, sandbox=sandbox).exercises
    assert e.status is Status.PASSED, e.message
    assert any("The grader kept its imports, assignments and function definitions and skipped the rest: line 7"
               in n for n in e.notes), e.notes
    assert [m for m, _ in opened] == ["toy", "toy", "toy"] and "display" not in opened[1][1]
    assert "Scaled = namedtuple" in opened[1][1] and opened[1][1] == opened[2][1]

    failing = NOTEBOOK.replace("FACTOR = dict(times=2)", "FACTOR = undefined_helper(2) + dict(times=2)")
    (tmp_path / "b").mkdir()
    (e,) = grade(write(tmp_path / "b", toy=failing), [toy("twice")], config, sandbox=sandbox).exercises
    assert e.status is Status.ERROR and "name 'Scaled' is not defined" in e.message, e.message
    assert any("kept its imports and function definitions and skipped the rest" in n for n in e.notes), e.notes


def test_the_salvage_that_keeps_assignments():
    fixed, dropped = salvage(NOTEBOOK, keep_assignments=True)
    assert "PATTERN = re.compile" in fixed and "display" not in fixed and dropped == [
        "line 7: top-level code that runs at import"]
    assert fixed.count("\n") == NOTEBOOK.count("\n")            # the student's line numbers kept
    assert "Scaled = namedtuple" not in salvage(NOTEBOOK)[0]


def test_the_salvage_note_says_what_to_do_with_a_cell_that_works_only_elsewhere(tmp_path, sandbox, config):
    """A notebook's display(x) cell, or a top-level use of a package the grader does not have, is not a
    bug of the student's: the note says where such code belongs instead of calling the module broken."""
    def note(folder) -> str:
        (e,) = grade(str(folder), [toy("twice")], config, sandbox=sandbox).exercises
        assert e.status is Status.PASSED, e.message
        return next(n for n in e.notes if "could not be imported as written" in n)

    def notebook(folder, cell):
        cells = [NOTEBOOK.split("display(PATTERN)")[0], cell, NOTEBOOK.split("display(PATTERN)")[1]]
        nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
                        for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        folder.mkdir()
        (folder / "toy.ipynb").write_text(json.dumps(nb))
        return folder
    assert 'If that is a cell that works only in Jupyter (display, a plot, a check), put it under if __name__ == ' \
           '"__main__":' in note(notebook(tmp_path / "nb", "plt.show()"))
    # Jupyter's display is left out of a notebook (grader.submission.notebook): it imports as written
    shown = notebook(tmp_path / "shown", "display(PATTERN)")
    (e,) = grade(str(shown), [toy("twice")], config, sandbox=sandbox).exercises
    assert e.status is Status.PASSED and not [n for n in e.notes if "could not be imported" in n], e.notes
    (tmp_path / "pkg").mkdir()
    package = write(tmp_path / "pkg", toy=NOTEBOOK.replace("display(PATTERN)", "import zz_absent_plots\n"
                                                            "zz_absent_plots.style('dark')"))
    assert "If that is code that needs a package the grader does not have, put it under" in note(package)
    assert "Fix this first: it would fail any real use of your module." in note(write(tmp_path, toy=NOTEBOOK))


def test_a_module_whose_import_timed_out_is_not_tried_again_with_its_assignments(tmp_path, sandbox, config,
                                                                                 monkeypatch, short_grace):
    """The loop may be an assignment (`params = train()`): trying the copy that keeps assignments would
    wait the import limit out a second time. One child times out, the next grades the whole salvage."""
    source = ("def endless():\n    while True:\n        pass\n\n\nPARAMS = endless()\n\n\n"
              "def twice(x):\n    return 2 * x\n")
    opened = _counting_opens(sandbox, monkeypatch)
    quick = dataclasses.replace(config, call_timeout=2.0)
    (e,) = grade(write(tmp_path, toy=source), [toy("twice")], quick, sandbox=sandbox).exercises
    assert e.status is Status.PASSED, e.message
    assert [m for m, _ in opened] == ["toy", "toy"] and "PARAMS" not in opened[1][1]
