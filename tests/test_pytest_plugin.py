"""The pytest front-end (grader/pytest_plugin.py): `pytest` in a student's copy grades the exercises.

End to end through a real `python -m pytest` subprocess on a temporary course copy; the
"graded once" check runs pytest in-process to count calls of the engine.
"""
import ast
import importlib.metadata
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, mistake_source, replace_function

# Once the `pytest11` entry point is installed, pytest loads the plugin by itself; loading it
# again with -p would register it twice.
INSTALLED = any(ep.value == "grader.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
PLUGIN = [] if INSTALLED else ["-p", "grader.pytest_plugin"]
pytest_plugins = ["pytester"]
TWO = ["-m", "attention.causal_mask or attention.scaled_dot_product_attention"]


def solution(function: str) -> str:
    source = (ROOT / "solutions" / "attention.py").read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function)
    return "\n".join(source.splitlines()[node.lineno - 1:node.end_lineno])


def course_copy(root, functions):
    """A student's copy: autograde.toml and exercises/attention.py, the stub with `functions` filled in."""
    (root / "exercises").mkdir(parents=True)
    shutil.copy(ROOT / "autograde.toml", root / "autograde.toml")
    source = (ROOT / "exercises" / "attention.py").read_text()
    for name, code in functions.items():
        source = replace_function(source, name, code)
    (root / "exercises" / "attention.py").write_text(source)
    return root


@pytest.fixture
def student(tmp_path):
    return course_copy(tmp_path / "course", {
        "causal_mask": solution("causal_mask"),
        "scaled_dot_product_attention": mistake_source("attention", "scaled_dot_product_attention__no_scale")})


def pytest_run(cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRADER_SECRET"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *PLUGIN, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600, env={**env, "NO_COLOR": "1"})


def test_one_item_per_exercise_with_markers(student):
    p = pytest_run(student, "--collect-only", "-q", "--strict-markers", "-m", "attention")
    assert p.returncode == 0, p.stdout + p.stderr
    ids = [line for line in p.stdout.splitlines() if "::" in line]
    assert ids == ["exercises/attention.py::causal_mask", "exercises/attention.py::scaled_dot_product_attention",
                   "exercises/attention.py::multi_head_attention", "exercises/attention.py::positional_encoding"]
    p = pytest_run(student, "--collect-only", "-q", "-m", "attention.positional_encoding")
    assert [line for line in p.stdout.splitlines() if "::" in line] == ["exercises/attention.py::positional_encoding"]


def test_pass_fail_with_diagnosis_junit_and_points(student):
    xml = student / "junit.xml"
    p = pytest_run(student, "-rA", *TWO, f"--junitxml={xml}")
    out = p.stdout
    assert p.returncode == 1, out + p.stderr
    assert "PASSED exercises/attention.py::causal_mask" in out
    assert "FAILED exercises/attention.py::scaled_dot_product_attention" in out
    assert "Looks like: missing 1/sqrt(d_k)" in out                     # the grader's diagnosis, not a traceback
    assert "your function: exercises/attention.py:" in out and "Traceback" not in out
    assert "grader: 1.5 / 4 points for exercises" in out
    cases = {c.get("name"): c for c in ET.parse(xml).getroot().iter("testcase")}
    assert set(cases) == {"causal_mask", "scaled_dot_product_attention"}
    assert cases["causal_mask"].find("failure") is None
    failure = cases["scaled_dot_product_attention"].find("failure")
    assert "missing 1/sqrt(d_k)" in failure.get("message") and "1 of 6 cases passed" in failure.text
    props = {p.get("name"): p.get("value") for p in cases["scaled_dot_product_attention"].iter("property")}
    assert props == {"points": "0.5", "max_points": "3"}


def test_the_module_is_graded_once_for_all_its_items(student, monkeypatch, pytester):
    import grader.pipeline.engine
    calls = []
    real = grader.pipeline.engine.grade

    def counting(path, specs, config, sandbox=None, **options):
        calls.append(sorted(s.id for s in specs))
        return real(path, specs, config, sandbox, **options)

    monkeypatch.setattr(grader.pipeline.engine, "grade", counting)
    monkeypatch.chdir(student)
    result = pytester.runpytest_inprocess(*PLUGIN, *TWO, str(student))
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    assert calls == [["attention.causal_mask", "attention.scaled_dot_product_attention"]]


def test_a_project_test_suite_beside_exercises_is_untouched(tmp_path):
    """The project's own layout: autograde.toml, exercises/ and tests/ with testpaths = tests."""
    root = course_copy(tmp_path / "project", {})
    (root / "tests" / "fixtures").mkdir(parents=True)
    (root / "tests" / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    shutil.copy(root / "exercises" / "attention.py", root / "tests" / "fixtures" / "attention.py")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    p = pytest_run(root)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
    assert "attention.py" not in p.stdout and "grader:" not in p.stdout
    p = pytest_run(root, "tests", "exercises", "--collect-only", "-q")      # named explicitly, exercises/ is graded
    assert "exercises/attention.py::causal_mask" in p.stdout and "tests/fixtures" not in p.stdout


def test_this_repository_collects_no_exercises():
    """tests/fixtures/submissions/*/attention.py lie under autograde.toml but outside exercises/."""
    p = pytest_run(ROOT, "--collect-only", "-q", "tests/fixtures")
    assert p.returncode == 5 and "no tests collected" in p.stdout, p.stdout + p.stderr
    assert "attention.py::" not in p.stdout


def test_switched_off_by_the_ini_option(student):
    p = pytest_run(student, "--collect-only", "-q", "-o", "grader_collect=off")
    assert p.returncode == 5 and "no tests collected" in p.stdout, p.stdout


def test_a_bad_configuration_is_a_collection_error_naming_the_key(student):
    (student / "autograde.toml").write_text('[course]\nsubmission = "exercises"\n[limits]\nmemory = 1\n')
    p = pytest_run(student, "--collect-only", "-q")
    assert p.returncode != 0
    assert "unknown key 'memory'" in p.stdout and "autograde.toml" in p.stdout


# ------------------------------------------------------------------ the student's code stays in the sandbox
WRITES_AT_IMPORT = '\nimport pathlib\npathlib.Path({target!r}).write_text("ran in the pytest process")\n'
ALL_FOUR = ("causal_mask", "scaled_dot_product_attention", "multi_head_attention", "positional_encoding")


def writing_course(root):
    """A correct attention.py whose top level writes `root/PWNED`: a file only the pytest process,
    never the sandbox, could create."""
    root = course_copy(root, {f: solution(f) for f in ALL_FOUR})
    module = root / "exercises" / "attention.py"
    module.write_text(module.read_text() + WRITES_AT_IMPORT.format(target=str(root / "PWNED")))
    return root


def test_a_file_named_on_the_command_line_runs_only_in_the_sandbox(tmp_path):
    """pytest's python plugin makes a Module, which imports the file, for a file named on the
    command line; the plugin's collector replaces it, so the write at import happens (and fails)
    in the sandbox only, and the grades are reported."""
    root = writing_course(tmp_path / "course")
    p = pytest_run(root, "exercises/attention.py", "-q")
    assert p.returncode == 0 and "4 passed" in p.stdout, p.stdout + p.stderr
    assert "grader: 9 / 9 points for exercises" in p.stdout
    assert not (root / "PWNED").exists(), "the module's top level ran in the pytest process"


@pytest.mark.parametrize("route", [
    ["exercises/attention.py::causal_mask"], ["exercises/attention.py", "-k", "causal_mask"],
    ["exercises/attention.py", "-m", "attention.causal_mask"], ["exercises", "-k", "causal_mask"],
    ["exercises/attention.py::causal_mask", "--doctest-modules"],
    ["exercises/attention.py::causal_mask", "-o", "python_files=*.py"],
], ids=["node id", "-k", "-m", "folder -k", "doctest-modules", "python_files *.py"])
def test_no_route_imports_the_submission_in_the_pytest_process(tmp_path, route):
    root = writing_course(tmp_path / "course")
    p = pytest_run(root, "--collect-only", "-q", *route)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [line for line in p.stdout.splitlines() if "::" in line] == ["exercises/attention.py::causal_mask"]
    assert not (root / "PWNED").exists(), "collecting imported the module in the pytest process"


def test_a_submission_folder_with_an_init_is_not_a_package(tmp_path):
    """pytest's Package imports its __init__.py (for setup_module) before running its items."""
    root = writing_course(tmp_path / "course")
    (root / "exercises" / "__init__.py").write_text(WRITES_AT_IMPORT.format(target=str(root / "PWNED")))
    p = pytest_run(root, "exercises", "-q", "-m", "attention.causal_mask")
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr
    assert not (root / "PWNED").exists(), "the package's __init__.py ran in the pytest process"


def test_a_syntax_error_is_the_graders_feedback_not_a_collection_error(tmp_path):
    root = course_copy(tmp_path / "course", {"causal_mask": solution("causal_mask")})
    module = root / "exercises" / "attention.py"
    module.write_text(module.read_text() + "\n\ndef helper(x:\n    return x\n")
    p = pytest_run(root, "exercises/attention.py", "-q", "-rA")
    out = p.stdout + p.stderr
    assert "error during collection" not in out and "Interrupted" not in out and "Traceback" not in out, out
    assert "PASSED exercises/attention.py::causal_mask" in out
    assert "attention.py does not import as written: SyntaxError" in out
    assert "grader: 1 / 9 points for exercises" in out


def test_this_repository_collects_the_same_tests_with_and_without_the_plugin(tmp_path):
    """Both collections at once, each into its own file (each imports every test module: 15 s together)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GRADER_SECRET"))}
    runs = {}
    for name, args in {"with": PLUGIN, "without": ["-p", "no:grader"]}.items():
        with open(tmp_path / name, "w") as out:
            runs[name] = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args,
                                           "--collect-only", "-q", "tests"], cwd=ROOT, env={**env, "NO_COLOR": "1"},
                                          stdout=out, stderr=subprocess.STDOUT)
    codes = {name: p.wait(timeout=600) for name, p in runs.items()}
    outs = {name: (tmp_path / name).read_text() for name in runs}
    items = {name: [line for line in out.splitlines() if "::" in line] for name, out in outs.items()}
    assert codes == {"with": 0, "without": 0}, outs["with"][-2000:] + outs["without"][-2000:]
    assert items["with"] == items["without"] and len(items["with"]) > 100
