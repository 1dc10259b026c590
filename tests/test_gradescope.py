"""The Gradescope bundle: built by `grader gradescope`, run by run_autograder in a fake /autograder tree.

run_autograder runs with AUTOGRADER_ROOT (the fake tree) and GRADER_PYTHON (this venv: setup.sh
installs torch, which is not possible offline); the grader it runs is the bundle's copy.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, SOLUTIONS, mistake_source, replace_function
from grader.config import load_config
from grader.frontends.gradescope.bundle import build
from grader.frontends.gradescope.run import find_submission

NAMES = ["attention.causal_mask", "attention.positional_encoding"]


def unpack(bundle, root):
    """Lay out a Gradescope-like /autograder: source/ (the bundle), run_autograder, submission/."""
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():      # zipfile drops permissions; Gradescope's unzip keeps them
            os.chmod(root / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    return root


def run_autograder(root, submission_files, python=sys.executable):
    shutil.rmtree(root / "submission", ignore_errors=True)
    (root / "submission").mkdir()
    for name, text in submission_files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_SECRET")}
    p = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True, text=True, timeout=600,
                       env={**env, "AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": python})
    assert p.returncode == 0, p.stdout + p.stderr
    return p, json.loads((root / "results" / "results.json").read_text())


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """A bundle with hidden cases (seed from the environment) whose visibility is `hidden`."""
    course = tmp_path_factory.mktemp("course")
    text = (ROOT / "autograde.toml").read_text().replace('visibility = "after_published"', 'visibility = "hidden"')
    (course / "autograde.toml").write_text(text)
    out = course / "autograder.zip"
    p = subprocess.run([sys.executable, "-m", "grader", "gradescope", *NAMES, "--out", str(out)], cwd=course,
                       capture_output=True, text=True, timeout=300, env={**os.environ, "GRADER_SECRET_SEED": "4242"})
    assert p.returncode == 0, p.stderr
    assert "2 exercises, 3 points; hidden cases on (visibility hidden)" in p.stdout
    return out


def test_bundle_layout(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
        manifest = json.loads(zf.read("bundle.json"))
        assert zf.read("grader.env") == b"GRADER_SECRET_SEED=4242\n"
        assert b"torch" in zf.read("requirements.txt") and zf.read("constraints.txt").startswith(b"torch==")
    assert {"setup.sh", "run_autograder", "autograde.toml", "lib/grader/__init__.py",
            "lib/grader/pipeline/engine.py", "lib/grader/reports/templates/report.md.j2"} <= names
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert manifest["names"] == NAMES and manifest["hidden_cases"] is True


def test_bundle_is_reproducible_and_has_no_secret_without_a_seed(tmp_path):
    config = load_config(str(ROOT / "autograde.toml"), env={})
    a = build(config, ("attention",), str(tmp_path / "a.zip"), None)
    build(config, ("attention",), str(tmp_path / "b.zip"), None)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()
    assert "grader.env" not in a.entries and not a.hidden
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        assert zf.read("constraints.txt") == (ROOT / "constraints.txt").read_bytes()


@pytest.mark.slow
def test_three_submissions_graded_in_a_fake_autograder_tree(bundle, tmp_path):
    root = unpack(bundle, tmp_path / "autograder")
    correct = (SOLUTIONS / "attention.py").read_text()

    p, good = run_autograder(root, {"attention.py": correct})
    assert f"from {root / 'source' / 'lib' / 'grader'}" in p.stdout        # the bundle's grader, not the venv's
    assert good["score"] == good["max_score"] == 3
    tests = {t["name"]: t for t in good["tests"]}
    assert tests["attention.causal_mask [hidden cases]"]["visibility"] == "hidden"
    assert tests["attention.causal_mask"]["visibility"] == "visible"

    # A GitHub submission of the whole repository: the module is found in exercises/.
    buggy = replace_function(correct, "causal_mask", mistake_source("attention", "causal_mask__transposed"))
    _, bad = run_autograder(root, {"exercises/attention.py": buggy, "README.md": "my work"})
    tests = {t["name"]: t for t in bad["tests"]}
    assert tests["attention.causal_mask"]["score"] < tests["attention.causal_mask"]["max_score"]
    assert "transpose" in tests["attention.causal_mask"]["output"].lower()
    assert tests["attention.positional_encoding"]["score"] == tests["attention.positional_encoding"]["max_score"]
    assert bad["score"] == pytest.approx(sum(t["score"] for t in bad["tests"])) and 2 <= bad["score"] < 3

    _, broken = run_autograder(root, {"attention.py": "import torch\ndef causal_mask(T:\n    return 1\n"})
    assert broken["score"] == 0 and broken["max_score"] == 3
    assert all(t["score"] == 0 for t in broken["tests"]) and "import" in broken["output"] + json.dumps(broken["tests"])


def test_a_results_file_even_when_the_grader_cannot_start(bundle, tmp_path):
    root = unpack(bundle, tmp_path / "autograder")
    p, results = run_autograder(root, {"attention.py": "x = 1\n"}, python="/bin/false")
    assert results["score"] == 0 and "not a problem with your code" in results["output"]
    assert "without results" in p.stderr


def test_find_submission_prefers_the_course_folder(tmp_path):
    (tmp_path / "repo" / "exercises").mkdir(parents=True)
    (tmp_path / "repo" / "solutions").mkdir()
    (tmp_path / "repo" / "exercises" / "attention.py").write_text("")
    (tmp_path / "repo" / "solutions" / "attention.py").write_text("")
    assert find_submission(str(tmp_path), {"attention"}, "exercises") == str(tmp_path / "repo" / "exercises")
    (tmp_path / "attention.py").write_text("")
    assert find_submission(str(tmp_path), {"attention"}, "exercises") == str(tmp_path)
