"""`grader ci` and `grader init-ci` end to end (real subprocesses), plus the GitHub formats as units."""
import base64
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT
from grader import __version__
from grader.frontends.ci.annotations import command
from grader.reports.classroom import classroom_result
from grader.results import ExerciseResult, Status, SubmissionResult
from test_pytest_plugin import course_copy, solution

NAMES = ["attention.causal_mask", "attention.positional_encoding"]
LEAKY_PE = solution("positional_encoding").replace(
    '    """The sinusoidal',
    '    import os\n    print("seed=" + str(os.environ.get("GRADER_SECRET_SEED")))\n    """The sinusoidal', 1)


def grader(*args, cwd, env=None):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GRADER_SECRET"))}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**base, "NO_COLOR": "1", **(env or {})})


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def student(tmp_path):
    """causal_mask wrong (the mask inverted), positional_encoding right (and printing the secret seed)."""
    from conftest import mistake_source
    return course_copy(tmp_path / "course", {"causal_mask": mistake_source("attention", "causal_mask__inverted"),
                                             "positional_encoding": LEAKY_PE})


def test_pull_request_summary_annotations_reports_and_classroom(student, tmp_path):
    summary, output = tmp_path / "summary.md", tmp_path / "github_output"
    summary.write_text("earlier step\n")
    p = grader("ci", *NAMES, "--classroom", "--expect-config-sha256", sha256(student / "autograde.toml"),
               "--expect-grader-version", __version__, cwd=student,
               env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output), "GITHUB_ACTIONS": "true",
                    "GRADER_SECRET_SEED": "98765"})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "policy: every exercise must pass — not met" in p.stdout
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "### ❌" in text and "`attention.causal_mask`" in text

    line = 1 + next(i for i, s in enumerate((student / "exercises/attention.py").read_text().splitlines())
                    if s.startswith("def causal_mask("))
    errors = [s for s in p.stdout.splitlines() if s.startswith("::error")]
    assert len(errors) == 1, errors                             # positional_encoding passed: no annotation
    assert re.match(rf"::error file=exercises/attention.py,line={line},title=attention.causal_mask%3A 0 / 1 points::"
                    r".*%0ALooks like: ", errors[0]), errors[0]

    results = json.loads((student / "grader-results/results.json").read_text())
    assert results["max_score"] == 3 and any(t["name"].endswith("[hidden cases]") for t in results["tests"])
    junit = ET.parse(student / "grader-results/report.xml").getroot()
    assert junit.find(".//testcase[@name='causal_mask']/failure") is not None
    out = junit.find(".//testcase[@name='positional_encoding']/system-out").text
    assert "seed=None" in out and "98765" not in out          # the secret never reached the student's code

    assert output.read_text().startswith("result=")
    classroom = json.loads(base64.b64decode(output.read_text().strip().split("=", 1)[1]))
    assert classroom["version"] == 3 and classroom["status"] == "fail" and classroom["max_score"] == 3
    tests = {t["name"]: t for t in classroom["tests"]}
    assert tests["attention.positional_encoding"] == {**tests["attention.positional_encoding"],
                                                       "status": "pass", "score": 2.0, "message": ""}
    assert tests["attention.causal_mask"]["status"] == "fail" and tests["attention.causal_mask"]["score"] == 0
    assert "Looks like:" in tests["attention.causal_mask"]["message"]
    assert tests["attention.causal_mask"]["filename"] == "exercises/attention.py"


@pytest.mark.slow
@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
def test_a_step_file_of_the_environment_that_cannot_be_written_is_refused_before_grading(tmp_path, variable):
    """$GITHUB_STEP_SUMMARY naming a folder was an IsADirectoryError traceback (exit 3) after grading, the
    other reports written."""
    p = grader("ci", "attention.causal_mask", "--submission", "solutions", "--out", str(tmp_path / "out"),
               "--classroom", cwd=ROOT, env={variable: str(tmp_path)})
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"${variable}: {tmp_path} is a folder: name a file in it" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def test_score_threshold_policy(student):
    p = grader("ci", *NAMES, "--min-score", "60%", cwd=student)
    assert p.returncode == 0 and "policy: at least 1.8 of 3 points — 2: met" in p.stdout, p.stdout + p.stderr
    p = grader("ci", *NAMES, "--min-score", "2.5", cwd=student)
    assert p.returncode == 1 and "not met" in p.stdout
    p = grader("ci", *NAMES, "--min-score", "150", cwd=student)       # refused before grading
    assert p.returncode == 2 and "--min-score 150: more than the 3 points the graded exercises are worth" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_tampered_configuration_or_grader_is_refused(student):
    pinned = sha256(student / "autograde.toml")
    toml = student / "autograde.toml"
    toml.write_text(toml.read_text() + '\n[exercises."attention.causal_mask"]\npoints = 100\n')
    p = grader("ci", *NAMES, "--expect-config-sha256", pinned, cwd=student)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "autograde.toml has been modified" in p.stderr and "grading refused" in p.stderr
    assert pinned in p.stderr and "Traceback" not in p.stderr
    assert not (student / "grader-results").exists()          # refused before grading anything
    p = grader("ci", *NAMES, "--expect-grader-version", "9.9.9", cwd=student)
    assert p.returncode == 2 and f"this is grader {__version__}, the workflow pins grader 9.9.9" in p.stderr


def test_a_submission_symlinked_out_of_the_pull_request_is_refused(tmp_path):
    trusted = course_copy(tmp_path / "trusted", {})
    (tmp_path / "pr").mkdir()
    os.symlink(ROOT / "solutions", tmp_path / "pr" / "exercises")      # would grade the worked solutions
    p = grader("ci", *NAMES, "--config", "trusted/autograde.toml", "--submission", "pr/exercises",
               "--source-root", "pr", cwd=tmp_path)
    assert p.returncode == 2 and "outside pr" in p.stderr and "symbolic link" in p.stderr, p.stderr
    assert trusted.exists()


@pytest.mark.parametrize("how", ["symlink", "absolute path", "symlink under $GITHUB_WORKSPACE"])
def test_without_source_root_the_documented_default_is_enforced(tmp_path, how):
    """No --source-root: the submission must lie in $GITHUB_WORKSPACE, else in the working folder."""
    course_copy(tmp_path / "trusted", {})
    (tmp_path / "pr").mkdir()
    os.symlink(ROOT / "solutions", tmp_path / "pr" / "exercises")
    config = str(tmp_path / "trusted" / "autograde.toml")
    submission = str(ROOT / "solutions") if how == "absolute path" else "exercises"
    env = {"GITHUB_WORKSPACE": str(tmp_path / "pr")} if "GITHUB_WORKSPACE" in how else {}
    p = grader("ci", *NAMES, "--config", config, "--submission", submission, "--out", str(tmp_path / "out"),
               cwd=tmp_path / "pr", env=env)
    root, whence = ((str(tmp_path / "pr"), "$GITHUB_WORKSPACE") if env else
                    (".", "the working folder: neither --source-root nor $GITHUB_WORKSPACE is set"))
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{submission} resolves to {ROOT / 'solutions'}, outside {root} (the checked-out pull request, " \
           f"{whence})" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def workflow_command(text, program):
    """The `program ...` line of the generated workflow, as an argument list."""
    line = next(s.strip() for s in text.splitlines() if s.strip().startswith(program + " "))
    return shlex.split(line)


@pytest.mark.parametrize("min_score", ["200%", "abc", "4"])
def test_init_ci_refuses_a_min_score_that_grader_ci_would_refuse(tmp_path, min_score):
    """The same check, the same message: a workflow whose `grader ci` step would exit 2 on every run
    is never written (the two exercises are worth 3 points)."""
    config, workflow = str(ROOT / "autograde.toml"), tmp_path / "grade.yml"
    made = grader("init-ci", *NAMES, "--config", config, "--output", str(workflow), "--min-score", min_score,
                  cwd=tmp_path)
    graded = grader("ci", *NAMES, "--config", config, "--submission", str(ROOT / "solutions"), "--min-score",
                    min_score, cwd=tmp_path)
    assert made.returncode == graded.returncode == 2, made.stdout + made.stderr
    assert made.stderr == graded.stderr and made.stderr.startswith(f"grader: error: --min-score {min_score}: ")
    assert os.listdir(tmp_path) == []


def test_init_ci_passes_a_min_score_that_grader_ci_takes_on(tmp_path):
    config, workflow = str(ROOT / "autograde.toml"), tmp_path / "grade.yml"
    for accepted in ("3", "70%"):       # every point the two exercises are worth; a percentage
        assert grader("init-ci", *NAMES, "--config", config, "--output", str(workflow), "--force", "--min-score",
                      accepted, cwd=tmp_path).returncode == 0
        assert workflow_command(workflow.read_text(), "grader")[-2:] == ["--min-score", accepted]


@pytest.mark.slow
def test_init_ci_pins_the_configuration_and_its_grade_step_works(student, tmp_path):
    """The workflow's layout: trusted/ (base branch) and pr/ (the pull request's head)."""
    work = tmp_path / "workspace"
    trusted = course_copy(work / "trusted", {})
    p = grader("init-ci", *NAMES, cwd=trusted)
    assert p.returncode == 0, p.stderr
    text = (trusted / ".github/workflows/grade.yml").read_text()
    for fragment in ("pull_request_target:", "persist-credentials: false", "path: trusted", "path: pr",
                     "permissions:\n  contents: read", "SEED: ${{ secrets.GRADER_SECRET_SEED }}",
                     """printf '%s' "$SEED" > grader-seed"""):
        assert fragment in text, fragment
    args = workflow_command(text, "grader")
    assert args[args.index("--expect-config-sha256") + 1] == sha256(trusted / "autograde.toml")
    assert args[args.index("--expect-grader-version") + 1] == __version__
    assert args[args.index("--config") + 1] == "trusted/autograde.toml"
    assert grader("init-ci", cwd=trusted).returncode == 2          # no overwrite without --force

    # The pull request edits its own autograde.toml: ignored, the trusted one is read.
    os.rename(student, work / "pr")
    (work / "pr" / "autograde.toml").write_text("[exercises.\"attention.causal_mask\"]\npoints = 100\n")
    (work / "grader-seed").write_text("777")                     # what the workflow's seed step writes
    p = grader(*args[1:], cwd=work)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "::error file=exercises/attention.py," in p.stdout
    results = json.loads((work / "grader-results/results.json").read_text())
    assert results["max_score"] == 3 and any(t["name"].endswith("[hidden cases]") for t in results["tests"])
    assert not (work / "grader-seed").exists()                    # read, then deleted before grading

    # autograde.toml changed on the base branch without rerunning init-ci: refused.
    (trusted / "autograde.toml").write_text((trusted / "autograde.toml").read_text() + "\n# edited\n")
    p = grader(*args[1:], cwd=work)
    assert p.returncode == 2 and "trusted/autograde.toml has been modified" in p.stderr


def test_init_ci_classroom_flavour_reports_through_the_classroom_reporter(tmp_path):
    course = course_copy(tmp_path / "course", {})
    p = grader("init-ci", "--classroom", "attention", cwd=course)
    assert p.returncode == 0, p.stderr
    text = (course / ".github/workflows/classroom.yml").read_text()
    assert "classroom-resources/autograding-grading-reporter@d13b5912daf5042ac1b71bc38bdb4a6bcd61d8ca # v1" in text
    assert 'GRADER_RESULTS: "${{ steps.grader.outputs.result }}"' in text and "runners: grader" in text
    args = workflow_command(text, "grader")
    assert "--classroom" in args and args[args.index("--submission") + 1] == "exercises"


def test_workflow_command_escaping():
    assert command("error", "50% done\nnext", "dir/a,b.py", 3, "x: y") == \
        "::error file=dir/a%2Cb.py,line=3,title=x%3A y::50%25 done%0Anext"
    assert command("error", "whole submission") == "::error::whole submission"


def test_classroom_status_is_error_only_for_an_unreadable_submission():
    bad = ExerciseResult(id="attention.causal_mask", status=Status.ERROR, points=0.0, max_points=1.0, message="m")
    unreadable = SubmissionResult(submission="x.zip", exercises=(bad,), errors=("x.zip: not a zip",))
    assert classroom_result(unreadable)["status"] == "error"
    assert classroom_result(SubmissionResult(submission="d", exercises=(bad,)))["status"] == "fail"


# -- the generated workflows: pinned actions, pip cache, the empty-secret warning, zizmor ----------
USES = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w./-]+)@(\S+)(?: # (\S+))?\s*$")


@pytest.fixture(scope="module")
def workflows(tmp_path_factory):
    """Both flavours for this repository (it has constraints.txt), the pull-request one also for a
    course without it; written where zizmor looks for workflows."""
    import shutil
    from grader import api
    from grader.frontends.ci.workflow import WorkflowOptions, render_workflow
    root = tmp_path_factory.mktemp("workflows")
    bare = root / "bare"
    bare.mkdir()
    shutil.copy(ROOT / "autograde.toml", bare / "autograde.toml")
    folder = root / ".github" / "workflows"
    folder.mkdir(parents=True)
    texts = {"grade.yml": render_workflow(api.load(str(ROOT / "autograde.toml")), WorkflowOptions()),
             "classroom.yml": render_workflow(api.load(str(ROOT / "autograde.toml")),
                                              WorkflowOptions(flavour="classroom")),
             "bare.yml": render_workflow(api.load(str(bare / "autograde.toml")), WorkflowOptions())}
    for name, text in texts.items():
        (folder / name).write_text(text)
    return folder, texts


def _steps(text):
    import yaml
    (job,) = yaml.safe_load(text)["jobs"].values()
    return job["steps"]


def test_every_action_is_pinned_by_commit_with_its_tag(workflows):
    from grader.frontends.ci.workflow import ACTIONS
    _, texts = workflows
    for name, text in texts.items():
        pinned = [USES.match(line) for line in text.splitlines() if re.match(r"^\s*(- )?uses:", line)]
        assert pinned and all(pinned), name
        for m in pinned:
            action, ref, tag = m.groups()
            assert re.fullmatch(r"[0-9a-f]{40}", ref) and tag and tag.startswith("v"), m.group(0)
            assert (action, ref, tag) in ACTIONS.values(), m.group(0)


def test_pip_is_cached_on_the_constraints_and_saved_before_student_code_runs(workflows):
    _, texts = workflows
    names = [s.get("name", s.get("uses", "")) for s in _steps(texts["grade.yml"])]
    steps = {s.get("id") or s.get("name"): s for s in _steps(texts["grade.yml"])}
    restore, save = steps["pip-cache"], steps["Save pip's download cache (before any student code runs)"]
    key = "grader-pip-${{ runner.os }}-py3.11-${{ hashFiles('trusted/constraints.txt') }}"
    assert restore["with"] == save["with"] == {"path": "~/.cache/pip", "key": key}
    assert restore["uses"].startswith("actions/cache/restore@") and save["uses"].startswith("actions/cache/save@")
    install = next(i for i, n in enumerate(names) if n.startswith("Install"))
    assert names.index(restore["name"]) < install < names.index(save["name"]) < names.index("Grade")
    bare_key = r"key: grader-pip-\$\{\{ runner.os }}-py3.11-[0-9a-f]{16}"   # no constraints.txt: the install command
    assert "hashFiles" not in texts["bare.yml"] and re.search(bare_key, texts["bare.yml"])
    python = next(s for s in _steps(texts["classroom.yml"]) if s.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"] == {"python-version": "3.11", "cache": "pip", "cache-dependency-path": "constraints.txt"}


@pytest.mark.parametrize("flavour", ["grade.yml", "classroom.yml"])
def test_an_empty_secret_warns_in_the_job_summary(workflows, tmp_path, flavour):
    """The seed step, run as the runner runs it (bash -e), with the secret empty and then set."""
    _, texts = workflows
    step = next(s for s in _steps(texts[flavour]) if s.get("name", "").startswith("Hand the secret seed"))
    assert step["env"] == {"SEED": "${{ secrets.GRADER_SECRET_SEED }}"}
    summary = tmp_path / "summary.md"
    for seed in ("", "12345"):
        summary.write_text("")
        p = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "SEED": seed, "GITHUB_STEP_SUMMARY": str(summary)})
        assert p.returncode == 0, p.stderr
        assert (tmp_path / "grader-seed").read_text() == seed
        if seed:
            assert summary.read_text() == "" and "::warning" not in p.stdout
        else:
            assert p.stdout.startswith("::warning title=Hidden cases off::the repository secret GRADER_SECRET_SEED")
            assert summary.read_text().startswith("> [!WARNING]\n> **Hidden cases are off**: the repository secret "
                                                  "`GRADER_SECRET_SEED` is empty or not set")


def test_zizmor_finds_nothing_above_low_but_the_intended_trigger(workflows):
    """zizmor (the test extras install it) on the generated workflows, offline: the one finding above
    "low" is `pull_request_target`, which the template explains in its comments."""
    folder, texts = workflows
    zizmor = os.path.join(os.path.dirname(sys.executable), "zizmor")
    assert os.path.exists(zizmor), "zizmor is missing: pip install -c constraints.txt -e '.[test]'"
    p = subprocess.run([zizmor, "--offline", "--format", "json", str(folder)], capture_output=True, text=True,
                       timeout=120)
    findings = json.loads(p.stdout)
    above = [(f["ident"], f["locations"][0]["symbolic"]["key"]["Local"]["verbatim_path"]) for f in findings
             if f["determinations"]["severity"] not in ("Informational", "Low", "Unknown")]
    assert sorted(above) == [("dangerous-triggers", str(folder / "bare.yml")),
                             ("dangerous-triggers", str(folder / "grade.yml"))], p.stdout[-3000:]
    assert "zizmor flags `pull_request_target` as a dangerous trigger" in texts["grade.yml"]
