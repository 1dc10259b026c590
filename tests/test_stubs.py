"""Stubs are generated from solutions; exercises/ must be exactly what the generator makes."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from grader.stubs import StubError, generate, make_stub, stale


def test_exercises_match_the_generator():
    bad = stale(str(ROOT / "solutions"), str(ROOT / "exercises"))
    assert not bad, f"regenerate with `grader stubs`: {bad}"


def test_regions_become_not_implemented_naming_the_exercise():
    src = 'def f(x):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n'
    stub = make_stub(src, "mod").text
    assert 'raise NotImplementedError("mod.f: not implemented yet")' in stub
    assert "return x" not in stub and '"""Doc."""' in stub


def test_no_solution_text_leaks_into_any_stub():
    for path in (ROOT / "solutions").glob("*.py"):
        stub = (ROOT / "exercises" / path.name).read_text()
        assert "BEGIN SOLUTION" not in stub and "END SOLUTION" not in stub


@pytest.mark.parametrize("src", [
    "def f():\n    ### BEGIN SOLUTION\n    return 1\n",
    "def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n",
])
def test_malformed_regions(src):
    with pytest.raises(StubError):
        make_stub(src, "mod", "mod.py")


# A stub must never hold a worked solution by accident: every way a region could be lost is refused
# (StubError, a UsageError: exit 2, one line naming file:line and the fix), never copied.

SOLVED = 'def f(x):\n    """Doc."""\n    {begin}\n    return x + 42\n    {end}\n'


def _refused(src, exercises=("f",)):
    with pytest.raises(StubError) as e:
        make_stub(src, "mod", "solutions/mod.py", exercises)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_an_end_without_its_begin_is_refused():
    """The outside tester's orphan END: its BEGIN deleted, the old generator copied the solution."""
    msg = _refused(SOLVED.format(begin="# the solution", end="### END SOLUTION"))
    assert msg.startswith("solutions/mod.py:5: ### END SOLUTION without a ### BEGIN SOLUTION"), msg


@pytest.mark.parametrize("begin,end,line,fix", [
    ("### begin solution", "### END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("###  BEGIN SOLUTION", "### END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("### BEGIN  SOLUTION", "### END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("## BEGIN SOLUTION", "## END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("#BEGIN SOLUTION", "### END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("###BEGIN_SOLUTION", "### END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION: the loop", "### END SOLUTION", 3, "### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION", "### End Solution", 5, "### END SOLUTION"),
])
def test_a_marker_in_another_spelling_is_refused(begin, end, line, fix):
    msg = _refused(SOLVED.format(begin=begin, end=end))
    assert msg.startswith(f"solutions/mod.py:{line}: ") and "looks like a solution marker" in msg, msg
    assert f"write exactly `{fix}`" in msg


def test_a_begin_without_its_end_names_the_begin_left_open():
    src = ("def f(x):\n    ### BEGIN SOLUTION\n    return x\n\n\n"
           "def g(x):\n    ### BEGIN SOLUTION\n    return -x\n    ### END SOLUTION\n")
    msg = _refused(src, ("f", "g"))
    assert msg.startswith("solutions/mod.py:2: ### BEGIN SOLUTION without a ### END SOLUTION before the next "
                          "### BEGIN SOLUTION (line 7)"), msg


def test_nested_regions_are_refused():
    src = ("def f(x):\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    return x\n"
           "    ### END SOLUTION\n    ### END SOLUTION\n")
    assert _refused(src).startswith("solutions/mod.py:3: ### BEGIN SOLUTION inside the region opened at line 2")


def test_a_region_outside_any_function_is_refused():
    """A module-level region became a top-level raise NotImplementedError: every exercise of the module
    failed to import, and the stub was written with exit 0."""
    src = SOLVED.format(begin="### BEGIN SOLUTION", end="### END SOLUTION") + \
        "\n\n### BEGIN SOLUTION\nSCALE = 1.0\n### END SOLUTION\n"
    msg = _refused(src)
    assert msg.startswith("solutions/mod.py:8: ### BEGIN SOLUTION outside any function: its stub would raise "
                          "NotImplementedError as the module is imported"), msg
    in_class = "class C:\n    ### BEGIN SOLUTION\n    scale = 1.0\n    ### END SOLUTION\n"
    assert _refused(in_class, ()).startswith("solutions/mod.py:2: ### BEGIN SOLUTION outside any function")


def test_a_syntax_error_is_refused_with_its_line():
    assert _refused(SOLVED.format(begin="### BEGIN SOLUTION", end="### END SOLUTION") + "def g(:\n").startswith(
        "solutions/mod.py:6: the solution does not parse")


def test_an_exercise_with_no_region_is_refused_naming_it():
    """A solutions module with no region at all would publish its solutions as the stub."""
    src = 'def helper(x):\n    return x\n\n\ndef f(x):\n    """Doc."""\n    return helper(x) + 42\n'
    msg = _refused(src, ("f",))
    assert msg.startswith("solutions/mod.py:5: f is the exercise mod.f but its body has no solution region"), msg
    other = 'def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\n\ndef g(x):\n    return -x\n'
    assert _refused(other, ("f", "g")).startswith("solutions/mod.py:7: g is the exercise mod.g")


def test_a_module_with_no_exercise_is_copied_and_says_so():
    src = "def secret():\n    return 42\n"
    stub = make_stub(src, "helpers", "solutions/helpers.py", exercises=())
    assert stub.regions == 0 and stub.text.endswith(src)
    assert make_stub(SOLVED.format(begin="### BEGIN SOLUTION", end="### END SOLUTION"), "mod").regions == 1


def test_a_refused_module_writes_no_stub(tmp_path):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "a.py").write_text(SOLVED.format(begin="### BEGIN SOLUTION", end="### END SOLUTION"))
    (tmp_path / "solutions" / "b.py").write_text("def g():\n    return 1\n    ### END SOLUTION\n")
    with pytest.raises(StubError, match="b.py:3: ### END SOLUTION without"):
        generate(str(tmp_path / "solutions"), str(tmp_path / "exercises"), exercises={})
    assert not (tmp_path / "exercises").exists()


def _course(tmp_path, neurons: str, extra: dict[str, str] | None = None) -> Path:
    """A course folder: autograde.toml, solutions/ of this repository with neurons.py replaced."""
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    (tmp_path / "solutions" / "neurons.py").write_text(neurons)
    for name, text in (extra or {}).items():
        (tmp_path / "solutions" / name).write_text(text)
    (tmp_path / "autograde.toml").write_text('[course]\nsubmission = "exercises"\nsolutions = "solutions"\n')
    return tmp_path


def _stubs(course: Path, *args: str):
    """The command of this tree (PYTHONPATH: run from the course folder, not this repository's)."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "grader", "stubs", *args, "--config", str(course / "autograde.toml")],
                          cwd=course, capture_output=True, text=True, timeout=300, env=env)


NEURONS = (ROOT / "solutions" / "neurons.py").read_text()
BEGIN_1, END_1 = (1 + NEURONS.splitlines().index(f"    ### {m} SOLUTION") for m in ("BEGIN", "END"))


# Each refusal is tested on make_stub above; the command's own path (the error class, exit 2, one
# line, nothing written) is the same for all, so three of them run it, --check among them.
@pytest.mark.parametrize("change,fragment,check", [
    (lambda s: s.replace("### BEGIN SOLUTION", "# solution", 1), f":{END_1}: ### END SOLUTION without a ### BEGIN",
     False),
    (lambda s: s.replace("### BEGIN SOLUTION", "### begin solution"), f":{BEGIN_1}: '### begin solution' looks like",
     True),
    (lambda s: "\n".join(x for x in s.splitlines() if "SOLUTION" not in x) + "\n",
     ": heaviside is the exercise neurons.heaviside but its body has no solution region", True),
])
def test_the_command_refuses_with_one_line_and_exit_2(tmp_path, change, fragment, check):
    """`grader stubs` and `grader stubs --check` alike: the instructor's input error, not a grader bug (exit 3)."""
    p = _stubs(_course(tmp_path, change(NEURONS)), *(["--check"] if check else []))
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.startswith("grader: error: solutions/neurons.py:") and fragment in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr and not (tmp_path / "exercises").exists()


def test_the_command_says_a_helper_module_is_copied_as_it_is(tmp_path):
    p = _stubs(_course(tmp_path, NEURONS, {"helpers.py": "def secret():\n    return 42\n"}))
    assert p.returncode == 0, p.stderr
    assert "wrote exercises/helpers.py (copied as it is: no exercise in it)" in p.stdout.splitlines()
    assert "wrote exercises/neurons.py" in p.stdout.splitlines()
