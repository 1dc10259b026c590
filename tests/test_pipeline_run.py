"""grader.pipeline.run: a timed-out call says the limit that applied and why, in words that agree
with the per-call limit the report's header states (a fresh process's first call gets start-up
grace)."""
import dataclasses

import pytest
import torch

from grader.catalog.spec import Case, ExerciseSpec
from grader.pipeline import run
from grader.pipeline.engine import grade
from grader.results import FailureKind


def _cases(gen):
    return [Case("small", (torch.randn(2, 3, generator=gen),)), Case("wide", (torch.randn(3, 5, generator=gen),))]


SOURCE = '''
def loops(x):
    while True:
        pass


def loops_when_wide(x):
    while x.shape[1] == 5:
        pass
    return 2 * x
'''


def spec(function, **kw):
    return ExerciseSpec(id=f"toy.{function}", cases=_cases, reference=lambda x: 2 * x, reference_source="2 * x",
                        **kw)


@pytest.fixture
def quick(tmp_path, config, monkeypatch):
    monkeypatch.setattr(run, "STARTUP_GRACE", 1.0)
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "toy.py").write_text(SOURCE)
    return str(folder), dataclasses.replace(config, call_timeout=0.3)


def test_a_first_call_says_its_start_up_grace_and_the_later_limit(quick, sandbox):
    path, config = quick
    (e,) = grade(path, [spec("loops")], config, sandbox=sandbox).exercises
    first = e.cases[0]
    assert first.failure is FailureKind.TIMEOUT
    assert first.message.startswith("took longer than 1 s")
    assert "(the first call in a fresh process may take up to 1 s, start-up included; later calls 0.3 s)" \
        in first.message


def test_a_later_call_says_the_limit_of_the_header(quick, sandbox):
    path, config = quick
    result = grade(path, [spec("loops_when_wide")], config, sandbox=sandbox)
    (e,) = result.exercises
    assert e.cases[1].failure is FailureKind.TIMEOUT and result.settings["call_timeout_s"] == 0.3
    assert e.cases[1].message.startswith("took longer than 0.3 s: ") and "(" not in e.cases[1].message


def test_an_exercise_of_its_own_limit_says_so(quick, sandbox):
    path, config = quick
    (e,) = grade(path, [spec("loops_when_wide", call_timeout=0.4)], config, sandbox=sandbox).exercises
    assert e.cases[1].message.startswith("took longer than 0.4 s")
    assert "(this exercise's limit per call; the default is 0.3 s)" in e.cases[1].message
