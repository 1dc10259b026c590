"""The nbgrader round trip, with the real nbgrader and a real Jupyter kernel.

`grader notebooks` writes the attention source notebook into a temporary course directory;
`nbgrader generate_assignment` releases it; two students hand it in (nbgrader's
submitted/<student>/<assignment>/ layout): alice with the worked solutions, bob with scaled
dot-product attention missing its 1/sqrt(d_k) (and some IPython magics); `nbgrader autograde`
and `nbgrader generate_feedback` grade them in a kernel through the generated test cells.
Then: the same notebooks through `grader check` and `grader batch`, and the grader's scores
written with write_scores where `nbgrader export` reads them.

Modules that import each other (transformer `from attention import ...`, moe `from transformer
import ...`): a second course with the three as one assignment, autograded by nbgrader (which runs
moe before transformer, and writes a notebook into autograded/ only after running it); each
notebook's locked setup cell (grader.frontends.notebooks.course_imports) imports the student's
handed-in sibling notebooks, so the scores are those `grader check` gives the same modules as .py files.
"""
from __future__ import annotations

import copy
import csv
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SOLUTIONS, mistake_source
from grader.catalog import catalog
from grader.config import ExerciseConfig
from grader.frontends.notebooks.generate import GRADE_ID, exercise_of_grade_id, grade_id_of, write_source_notebooks
from grader.pipeline.scoring import max_points

try:
    from nbgrader.api import Gradebook
    from nbgrader.nbgraderformat import MetadataValidator
except ImportError:                       # pragma: no cover - the test extras install it
    pytest.fail("these tests need nbgrader and ipykernel: pip install -c constraints.txt nbgrader ipykernel",
                pytrace=False)

ASSIGNMENT = "ps1"
ATTENTION = [i for i in catalog() if i.startswith("attention.")]
BUGGY_SDPA = {"attention.causal_mask": 1.0, "attention.scaled_dot_product_attention": 0.5,
              "attention.multi_head_attention": 3.0, "attention.positional_encoding": 2.0}


def _env(tmp: Path) -> dict[str, str]:
    """nbgrader and its kernels from this venv (nbgrader runs `alembic` from PATH), the grader from
    this checkout, and Jupyter's user folders and the temp folder in the test's own directory
    (nbgrader leaves temporary folders behind: its alembic.ini's, each kernel's IPython folder)."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"), ("TMPDIR", "tmp")):
        env[var] = str(tmp / "jupyter" / sub)
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, \
        f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


def _nbgrader(*args: str, course: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "nbgrader", *args], course, env)


def _hand_in(release: dict, source: dict, replace: dict[str, str], extra_cell: str = "") -> dict:
    """The released notebook with its solution cells written: the worked solution, or `replace[grade_id]`."""
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in source["cells"]}
    nb = copy.deepcopy(release)
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            cell["source"] = replace.get(meta["grade_id"], answers[meta["grade_id"]])
    if extra_cell:
        nb["cells"].insert(3, {"cell_type": "code", "execution_count": None, "id": "student-extra", "metadata": {},
                               "outputs": [], "source": extra_cell})
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The course directory after generate_assignment, autograde and generate_feedback; `clean.db` is
    the gradebook as generate_assignment left it (before any submission)."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    root = tmp / "course"
    env = _env(tmp)
    _run([sys.executable, "-m", "grader", "notebooks", "attention", "--out", str(root), "--assignment", ASSIGNMENT,
          "--config", str(ROOT / "autograde.toml")], ROOT, env)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.Execute.timeout = 180     # seconds per cell: a busy 2-core machine\n")
    _nbgrader("generate_assignment", ASSIGNMENT, course=root, env=env)
    shutil.copy(root / "gradebook.db", tmp / "clean.db")
    release = json.loads((root / "release" / ASSIGNMENT / "attention.ipynb").read_text())
    source = json.loads((root / "source" / ASSIGNMENT / "attention.ipynb").read_text())
    bob = {"attention-scaled_dot_product_attention-solution":
           mistake_source("attention", "scaled_dot_product_attention__no_scale")}
    for student, nb in (("alice", _hand_in(release, source, {})),
                        ("bob", _hand_in(release, source, bob, "%time x = 1\n!echo handed in late\nprint('hi')"))):
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text(json.dumps(nb, indent=1))
    _nbgrader("autograde", ASSIGNMENT, course=root, env=env)
    _nbgrader("generate_feedback", ASSIGNMENT, course=root, env=env)
    return {"root": root, "tmp": tmp, "env": env, "clean_db": tmp / "clean.db"}


def _nbgrader_scores(db: Path, student: str) -> dict[str, float]:
    with Gradebook(f"sqlite:///{db}", "") as gb:
        sub = gb.find_submission(ASSIGNMENT, student)
        return {exercise_of_grade_id(g.name): g.auto_score for nb in sub.notebooks for g in nb.grades}


def _export(course: dict, db: Path) -> dict[str, dict[str, str]]:
    out = course["tmp"] / f"{db.stem}.csv"
    _nbgrader("export", "--to", str(out), f"--CourseDirectory.db_url=sqlite:///{db}", course=course["root"],
              env=course["env"])
    with open(out, newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f) if row["assignment"] == ASSIGNMENT}


# ---------------------------------------------------------------------------------- generation
def test_generated_source_notebook_is_valid_nbgrader(tmp_path, config):
    """Cell metadata as nbgrader's schema v3 requires; points and ids from the catalog and autograde.toml."""
    import nbformat
    path, = write_source_notebooks(str(SOLUTIONS), str(tmp_path), config, ["attention"])
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    MetadataValidator().validate_nb(nb)
    grade = {c.metadata.nbgrader.grade_id: c for c in nb.cells if c.metadata.nbgrader["grade"]}
    assert sorted(grade) == sorted(grade_id_of(i) for i in ATTENTION)
    for gid, cell in grade.items():
        spec = catalog()[exercise_of_grade_id(gid)]
        meta = cell.metadata.nbgrader
        assert (meta.locked, meta.solution, meta.schema_version) == (True, False, 3)
        assert meta.points == max_points(spec, config)
        assert f"check({spec.id!r}, {spec.function}, points={meta.points!r}).award()" in cell.source
    solutions = [c for c in nb.cells if c.metadata.nbgrader["solution"]]
    assert len(solutions) == 4
    assert all("### BEGIN SOLUTION" in c.source and "### END SOLUTION" in c.source for c in solutions)
    assert all(GRADE_ID.match(c.metadata.nbgrader.grade_id) for c in nb.cells)
    assert any("Trust model" in c.source for c in nb.cells if c.cell_type == "markdown")
    assert any("sqrt(d\\_k)" in c.source or "sqrt(d_k)" in c.source for c in nb.cells if c.cell_type == "markdown")


def test_every_module_makes_a_valid_nbgrader_notebook(tmp_path, config):
    import nbformat
    paths = write_source_notebooks(str(SOLUTIONS), str(tmp_path), config)
    assert sorted(Path(p).stem for p in paths) == sorted(p.stem for p in SOLUTIONS.glob("*.py"))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)                                    # cell ids: nbformat 4.5's pattern and length
        MetadataValidator().validate_nb(nb)
        module = Path(path).stem
        graded = sorted(exercise_of_grade_id(c.metadata.nbgrader.grade_id) for c in nb.cells
                        if c.metadata.nbgrader["grade"])
        assert graded == sorted(i for i, s in catalog().items() if s.module == module), module


def test_grader_notebooks_rejects_an_unknown_module(tmp_path, capsys):
    from grader.cli import main
    assert main(["notebooks", "atention", "--out", str(tmp_path), "--config", str(ROOT / "autograde.toml")]) == 2
    assert "Did you mean 'attention'" in capsys.readouterr().err
    assert not (tmp_path / "source").exists()


def test_grade_ids_map_back_to_exercise_ids():
    for exercise_id in catalog():
        gid = grade_id_of(exercise_id)
        assert GRADE_ID.match(gid) and "." not in gid
        assert exercise_of_grade_id(gid) == exercise_id


# ------------------------------------------------------------------------------ nbgrader itself
@pytest.mark.slow
def test_generate_assignment_releases_the_student_version(course):
    release = json.loads((course["root"] / "release" / ASSIGNMENT / "attention.ipynb").read_text())
    text = json.dumps(release)
    assert "### BEGIN SOLUTION" not in text and "math.sqrt(d_k)" not in text
    solutions = [c for c in release["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    assert all("raise NotImplementedError()" in "".join(c["source"]) for c in solutions)


@pytest.mark.slow
def test_autograde_gives_full_and_partial_marks(course, config):
    db = course["root"] / "gradebook.db"
    assert _nbgrader_scores(db, "alice") == {i: max_points(catalog()[i], config) for i in ATTENTION}
    assert _nbgrader_scores(db, "bob") == BUGGY_SDPA


@pytest.mark.slow
def test_feedback_shows_the_diagnosis(course):
    feedback = course["root"] / "feedback"
    bob = (feedback / "bob" / ASSIGNMENT / "attention.html").read_text()
    alice = (feedback / "alice" / ASSIGNMENT / "attention.html").read_text()
    assert "missing 1/sqrt(d_k)" in bob and "divide the scores Q K^T by sqrt(d_k)" in bob
    assert "Looks like" not in alice


@pytest.fixture(scope="module")
def graded(course, grade_dir):
    """The engine's results on the submitted notebooks (alice's as nbgrader's folder, bob's as the file)."""
    submitted = course["root"] / "submitted"
    return {"alice": grade_dir(submitted / "alice" / ASSIGNMENT, "attention"),
            "bob": grade_dir(submitted / "bob" / ASSIGNMENT / "attention.ipynb", "attention")}


@pytest.mark.slow
def test_grader_check_on_the_submitted_notebook_agrees_with_nbgrader(course, graded):
    """The real command on bob's notebook (partial credit: where a disagreement would show), the engine on both."""
    notebook = course["root"] / "submitted" / "bob" / ASSIGNMENT / "attention.ipynb"
    proc = subprocess.run([sys.executable, "-m", "grader", "check", "attention", "--format", "json",
                           "--submission", str(notebook), "--config", str(ROOT / "autograde.toml")],
                          cwd=ROOT, env=course["env"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr           # 1: something failed
    ours = {t["name"]: t["score"] for t in json.loads(proc.stdout)["tests"]}
    db = course["root"] / "gradebook.db"
    assert ours == _nbgrader_scores(db, "bob") == BUGGY_SDPA
    for student, result in graded.items():
        assert {e.id: e.points for e in result.exercises} == _nbgrader_scores(db, student)


# ------------------------------------------------------------------------------ write_scores
@pytest.mark.slow
def test_write_scores_lands_where_nbgrader_export_reads(course, graded, tmp_path):
    from grader.frontends.notebooks.nbgrader_export import write_scores
    db = tmp_path / "gradebook.db"
    shutil.copy(course["clean_db"], db)
    report = write_scores(str(db), ASSIGNMENT, {"carol": graded["alice"], "dave": graded["alice"]})
    assert report.written == {"carol": 4, "dave": 4} and not report.not_in_assignment
    again = write_scores(str(db), ASSIGNMENT, {"carol": graded["bob"]})      # a re-run updates in place
    assert again.written == {"carol": 4}
    rows = _export(course, db)
    assert (float(rows["carol"]["score"]), float(rows["carol"]["max_score"])) == (6.5, 9.0)
    assert float(rows["dave"]["score"]) == 9.0
    assert _nbgrader_scores(db, "carol") == BUGGY_SDPA


@pytest.mark.slow
def test_write_scores_says_what_is_missing(course, grade_dir, tmp_path, make_submission, config):
    """A missing gradebook or assignment names the nbgrader command to run; exercises without a cell,
    and points that differ from the notebook's, are reported (the score is capped at the cell's points)."""
    from grader.frontends.notebooks.nbgrader_export import GradebookError, write_scores
    db = tmp_path / "gradebook.db"
    shutil.copy(course["clean_db"], db)
    with pytest.raises(GradebookError, match="no such gradebook; run `nbgrader generate_assignment ps1`"):
        write_scores(str(tmp_path / "missing.db"), ASSIGNMENT, {})
    with pytest.raises(GradebookError, match="no assignment 'ps2'; did you forget to run"):
        write_scores(str(db), "ps2", {})
    five = dataclasses.replace(config,
                               exercises={**config.exercises, "attention.causal_mask": ExerciseConfig(points=5)})
    result = grade_dir(make_submission(), "attention.causal_mask", "activations.sigmoid", cfg=five)
    report = write_scores(str(db), ASSIGNMENT, {"erin": result})
    assert report.written == {"erin": 1} and report.not_in_assignment == {"erin": ["activations.sigmoid"]}
    assert report.max_points_differ == {"attention.causal_mask": (5.0, 1.0)}
    assert _nbgrader_scores(db, "erin")["attention.causal_mask"] == 1.0


@pytest.mark.slow
def test_grader_batch_records_scores_in_the_nbgrader_gradebook(course, tmp_path):
    """bob's submission only (one student keeps the batch short; alice's path is the same)."""
    db = tmp_path / "gradebook.db"
    shutil.copy(course["clean_db"], db)
    submitted = tmp_path / "submitted"
    shutil.copytree(course["root"] / "submitted" / "bob", submitted / "bob")
    _run([sys.executable, "-m", "grader", "batch", str(submitted), "attention", "--jobs", "1",
          "--out", str(tmp_path / "out"), "--assignment", ASSIGNMENT, "--nbgrader-db", str(db),
          "--config", str(ROOT / "autograde.toml")], ROOT, course["env"])
    rows = _export(course, db)
    assert {s: float(r["score"]) for s, r in rows.items()} == {"bob": 6.5}
    assert _nbgrader_scores(db, "bob") == BUGGY_SDPA


# ------------------------------------------------------------------ nbformat, and nbgrader by full path
def test_source_notebooks_are_written_by_nbformat(tmp_path, config):
    """What is on disk is nbformat's own serialisation of a notebook that passes nbformat.validate."""
    import nbformat
    path, = write_source_notebooks(str(SOLUTIONS), str(tmp_path), config, ["attention"])
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5) and len({c.id for c in nb.cells}) == len(nb.cells)
    assert Path(path).read_text(encoding="utf-8") == nbformat.writes(nb) + "\n"


def test_an_existing_nbgrader_config_is_kept_and_the_fix_is_said(tmp_path):
    from grader.frontends.notebooks.generate import PATH_LINE, write_nbgrader_config
    assert write_nbgrader_config(str(tmp_path)).startswith("wrote ")
    assert PATH_LINE in (tmp_path / "nbgrader_config.py").read_text()
    assert write_nbgrader_config(str(tmp_path)).startswith("kept ")
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    said = write_nbgrader_config(str(tmp_path))
    assert said.startswith("kept ") and "alembic" in said and PATH_LINE in said
    assert (tmp_path / "nbgrader_config.py").read_text() == "c = get_config()\n"


@pytest.mark.parametrize("name", ["ps 1/x", "../escape", "a+b", "ps*", " ps1", ".", "", "ps\x1b[31m"])
def test_an_assignment_name_that_is_not_one_folder_is_refused(tmp_path, capsys, name):
    """nbgrader takes the name as one folder of source/ (and as a glob; it refuses '+', strips spaces):
    anything else is refused with what is wrong, before a file is written."""
    from grader.cli import main
    with pytest.raises(SystemExit) as stop:
        main(["notebooks", "attention", "--out", str(tmp_path / "course"), "--assignment", name,
              "--config", str(ROOT / "autograde.toml")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "cannot be an nbgrader assignment name" in err and "\x1b" not in err, err
    assert not (tmp_path / "course").exists() and not (tmp_path / "escape").exists()


def test_the_next_command_quotes_an_assignment_name_with_a_space(tmp_path, capsys):
    import shlex
    from grader.cli import main
    course = tmp_path / "course"
    assert main(["notebooks", "attention", "--out", str(course), "--assignment", "problem set 1",
                 "--config", str(ROOT / "autograde.toml")]) == 0
    assert (course / "source" / "problem set 1" / "attention.ipynb").is_file()
    (step,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("next: ")]
    assert shlex.split(step)[-2:] == ["generate_assignment", "problem set 1"], step


@pytest.mark.slow
def test_the_venvs_nbgrader_by_full_path_generates_the_assignment(tmp_path):
    """`.venv/bin/nbgrader generate_assignment` with a PATH that lacks .venv/bin (nbgrader runs
    `alembic` by name): the nbgrader_config.py `grader notebooks` writes puts the folder on PATH."""
    import nbformat
    from grader.cli import main
    course = tmp_path / "course"
    assert main(["notebooks", "attention", "--out", str(course), "--assignment", ASSIGNMENT,
                 "--config", str(ROOT / "autograde.toml")]) == 0
    env = {k: v for k, v in _env(tmp_path).items() if k not in ("PATH", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/bin:/bin"
    bindir = os.path.dirname(sys.executable)
    assert shutil.which("alembic", path=env["PATH"]) is None and os.path.exists(os.path.join(bindir, "alembic"))
    proc = subprocess.run([os.path.join(bindir, "nbgrader"), "generate_assignment", ASSIGNMENT], cwd=course,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    release = nbformat.read(course / "release" / ASSIGNMENT / "attention.ipynb", as_version=4)
    nbformat.validate(release)
    assert "### BEGIN SOLUTION" not in nbformat.writes(release)


# ------------------------------------------------------------- modules that import other modules
CHAIN = ("attention", "transformer", "moe")          # transformer imports attention, moe imports transformer
CHAIN_ASSIGNMENT = "chain"
SDPA_NO_SCALE = {"attention-scaled_dot_product_attention-solution":
                 mistake_source("attention", "scaled_dot_product_attention__no_scale")}


def _hand_in_module(release: dict, source: str) -> dict:
    """The released notebook with a whole module as its answer, as benchmarks/batch_throughput.py hands in:
    all of it in the first solution cell (its imports included), the other solution cells emptied."""
    nb = copy.deepcopy(release)
    solutions = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    for i, cell in enumerate(solutions):
        cell["source"] = source if i == 0 else "# (answered above)"
    return nb


def _chain_exercises() -> list[str]:
    return [i for i, s in catalog().items() if s.module in CHAIN]


@pytest.fixture
def fresh_imports():
    """Undo what importing notebooks as modules leaves behind: the finder, and the modules."""
    from grader.frontends.notebooks.course_imports import uninstall
    before = {m: sys.modules.get(m) for m in CHAIN}
    yield
    uninstall()
    for name, module in before.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def test_every_notebook_starts_with_the_locked_course_imports_cell(tmp_path, config):
    """Before the module's own imports, a locked cell loads the extension; the submission loader comments
    it out (a magic), so `grader check` on the .ipynb never runs it."""
    import nbformat
    from grader.frontends.notebooks.course_imports import MAGIC
    from grader.submission.notebook import notebook_source
    for path in write_source_notebooks(str(SOLUTIONS), str(tmp_path), config, ["transformer", "attention"]):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        meta = code[0].metadata.nbgrader
        assert MAGIC in code[0].source and (meta.locked, meta.grade, meta.solution) == (True, False, False)
        assert MAGIC not in "\n".join(c.source for c in code[1:])
        assert not any(line.startswith("%") for line in notebook_source(path).splitlines())
    transformer = nbformat.read(tmp_path / "transformer.ipynb", as_version=4)
    assert "imports attention below" in transformer.cells[2].source
    assert transformer.cells[2].id == "transformer-setup"


def test_a_course_import_runs_the_sibling_notebooks_code_cells_not_its_tests(tmp_path, config, fresh_imports):
    """moe -> transformer -> attention, each from its notebook; a test cell that would raise is left out."""
    from grader.frontends.notebooks.course_imports import install
    write_source_notebooks(str(SOLUTIONS), str(tmp_path), config, list(CHAIN))
    nb = json.loads((tmp_path / "attention.ipynb").read_text())
    test_cell = next(c for c in nb["cells"] if c["metadata"]["nbgrader"]["grade"])
    test_cell["source"] = "raise RuntimeError('a test cell ran on import')"
    (tmp_path / "attention.ipynb").write_text(json.dumps(nb))
    install(str(tmp_path))
    import moe
    import transformer
    assert moe.feed_forward is transformer.feed_forward
    assert transformer.multi_head_attention is sys.modules["attention"].multi_head_attention
    assert sys.modules["attention"].__file__ == str(tmp_path / "attention.ipynb")
    assert transformer.causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_a_sibling_notebook_that_raises_is_imported_salvaged(tmp_path, fresh_imports, capsys):
    """As grader.pipeline.imports: a module whose body raises is imported with its imports and definitions."""
    from grader.frontends.notebooks.course_imports import install
    cells = ["import torch", "def causal_mask(T):\n    return torch.tril(torch.ones(T, T, dtype=torch.bool))",
             "raise SystemExit('a demo cell that stops')"]
    (tmp_path / "attention.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    install(str(tmp_path))
    from attention import causal_mask
    assert causal_mask(2).tolist() == [[True, False], [True, True]]
    assert "attention.ipynb could not be imported as written (SystemExit" in capsys.readouterr().err


def test_under_autograde_the_handed_in_folder_is_read(tmp_path):
    """autograded/<student>/<assignment>/ holds a notebook only once nbgrader has run it."""
    from grader.frontends.notebooks.course_imports import notebook_folder
    graded = tmp_path / "autograded" / "alice" / "ps1"
    graded.mkdir(parents=True)
    assert notebook_folder(str(graded)) == str(graded)               # no submitted/ folder: the kernel's
    (tmp_path / "submitted" / "alice" / "ps1").mkdir(parents=True)
    assert notebook_folder(str(graded)) == str(tmp_path / "submitted" / "alice" / "ps1")
    assert notebook_folder(str(tmp_path / "release" / "ps1")) == str(tmp_path / "release" / "ps1")


@pytest.fixture(scope="module")
def chain_course(tmp_path_factory):
    """attention, transformer and moe as one assignment, autograded by nbgrader, handed in by alice (each
    notebook's answer: the whole of solutions/<module>.py, `from attention import ...` included, as the
    benchmark hands in) and bob (the worked solution cell by cell, but scaled dot-product attention without
    1/sqrt(d_k))."""
    tmp = tmp_path_factory.mktemp("nbgrader-chain")
    root = tmp / "course"
    env = _env(tmp)
    _run([sys.executable, "-m", "grader", "notebooks", *CHAIN, "--out", str(root), "--assignment", CHAIN_ASSIGNMENT,
          "--config", str(ROOT / "autograde.toml")], ROOT, env)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.Execute.timeout = 300     # seconds per cell: the capstone trains a transformer on a busy machine\n")
    _nbgrader("generate_assignment", CHAIN_ASSIGNMENT, course=root, env=env)
    for student in ("alice", "bob"):
        folder = root / "submitted" / student / CHAIN_ASSIGNMENT
        folder.mkdir(parents=True)
        for module in CHAIN:
            release = json.loads((root / "release" / CHAIN_ASSIGNMENT / f"{module}.ipynb").read_text())
            source = json.loads((root / "source" / CHAIN_ASSIGNMENT / f"{module}.ipynb").read_text())
            nb = (_hand_in_module(release, (SOLUTIONS / f"{module}.py").read_text()) if student == "alice"
                  else _hand_in(release, source, SDPA_NO_SCALE))
            (folder / f"{module}.ipynb").write_text(json.dumps(nb, indent=1))
    _run([sys.executable, "-m", "nbgrader", "autograde", CHAIN_ASSIGNMENT], root, env, timeout=900)
    return {"root": root, "env": env}


def _chain_scores(course: dict, student: str) -> dict[str, float]:
    with Gradebook(f"sqlite:///{course['root'] / 'gradebook.db'}", "") as gb:
        sub = gb.find_submission(CHAIN_ASSIGNMENT, student)
        return {exercise_of_grade_id(g.name): g.auto_score for nb in sub.notebooks for g in nb.grades}


def _errors(course: dict, student: str) -> dict[str, list[str]]:
    """notebook -> the errors its code cells raised when nbgrader ran it (none expected: every test cell
    earns points, and no import may fail)."""
    out = {}
    for module in CHAIN:
        nb = json.loads((course["root"] / "autograded" / student / CHAIN_ASSIGNMENT / f"{module}.ipynb").read_text())
        out[module] = [f"{o['ename']}: {o['evalue']}" for c in nb["cells"] if c["cell_type"] == "code"
                       for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return out


def _grader_check(folder: Path, env: dict[str, str]) -> dict[str, float]:
    """`grader check attention transformer moe --submission FOLDER`, its scores."""
    proc = subprocess.run([sys.executable, "-m", "grader", "check", *CHAIN, "--format", "json",
                           "--submission", str(folder), "--config", str(ROOT / "autograde.toml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-4000:]
    return {t["name"]: t["score"] for t in json.loads(proc.stdout)["tests"]}


@pytest.mark.slow
def test_autograde_imports_the_handed_in_sibling_notebooks(chain_course, config):
    """The worked solutions score full marks under nbgrader, transformer and moe included (without the setup
    cell: ModuleNotFoundError in the answer's first line, 0 of 17 and 0 of 3), as `grader check` scores
    solutions/*.py; no cell of any notebook raised (the locked import cells included)."""
    full = {i: max_points(catalog()[i], config) for i in _chain_exercises()}
    assert _errors(chain_course, "alice") == {m: [] for m in CHAIN}
    assert _chain_scores(chain_course, "alice") == full
    assert _grader_check(SOLUTIONS, chain_course["env"]) == full


@pytest.mark.slow
def test_a_bug_in_attention_is_charged_once_in_both_routes(chain_course, make_submission, config):
    """bob's attention misses 1/sqrt(d_k): his transformer and moe, which import it, still earn full marks
    (each exercise runs with the grader's versions of what it depends on), in nbgrader as in `grader check`
    on the same modules as .py files, and on his handed-in notebooks."""
    assert _errors(chain_course, "bob") == {m: [] for m in CHAIN}
    nbgrader = _chain_scores(chain_course, "bob")
    assert {i: p for i, p in nbgrader.items() if i.startswith("attention.")} == BUGGY_SDPA
    assert all(nbgrader[i] == max_points(catalog()[i], config) for i in nbgrader if not i.startswith("attention."))
    py = make_submission({"attention.scaled_dot_product_attention":
                          mistake_source("attention", "scaled_dot_product_attention__no_scale")})
    assert _grader_check(py, chain_course["env"]) == nbgrader
    assert _grader_check(chain_course["root"] / "submitted" / "bob" / CHAIN_ASSIGNMENT, chain_course["env"]) == nbgrader
