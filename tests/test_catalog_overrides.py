"""A per-exercise atol/rtol in autograde.toml reaches every exercise's verdict.

These four exercises used to be judged by a special judge that compared with the spec's own
tolerance only, so an instructor's `atol` in [exercises."<id>"] changed nothing there. Each is
graded here with a submission that is the worked solution slightly off (1e-3 added to every
float it returns): it must fail with the course's configuration and pass once autograde.toml
gives that exercise a loose atol.
"""
from __future__ import annotations

import ast

import pytest

from conftest import ROOT, SOLUTIONS
from grader.config import load_config
from grader.results import Status

# exercise -> which part of the return value is made slightly off ("all": every float tensor)
OFF = {"losses.mse_loss": "all", "losses.cross_entropy": "all", "mlp.mlp_backward": "all",
       "mlp.adam_step": "params"}     # adam_step's state travels on to the next step: only the params drift
LOOSE_ATOL = 1e-2

SLIGHTLY_OFF = '''
def _off(x):
    """x with 1e-3 added to every floating tensor in it (nested tuples, lists and dicts)."""
    if isinstance(x, torch.Tensor):
        return x + 1e-3 if x.is_floating_point() else x
    if isinstance(x, (tuple, list)):
        return type(x)(_off(v) for v in x)
    if isinstance(x, dict):
        return {k: _off(v) for k, v in x.items()}
    return x
'''


def _slightly_off(module: str, function: str, part: str) -> str:
    """`function` of solutions/<module>.py renamed `_exact_<function>`, and `function` returning
    what it returns, slightly off."""
    source = (SOLUTIONS / f"{module}.py").read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function)
    exact = ast.get_source_segment(source, node).replace(f"def {function}(", f"def _exact_{function}(", 1)
    result = "_off(out)" if part == "all" else "(_off(out[0]), *out[1:])"
    return (f"{exact}\n\n\ndef {function}(*args, **kwargs):\n"
            f"    out = _exact_{function}(*args, **kwargs)\n"
            f"    return {result}\n")


@pytest.fixture(scope="module")
def submission(tmp_path_factory):
    dest = tmp_path_factory.mktemp("slightly_off")
    for f in SOLUTIONS.glob("*.py"):
        (dest / f.name).write_text(f.read_text())
    for module in {e.split(".")[0] for e in OFF}:
        path = dest / f"{module}.py"
        source = path.read_text() + SLIGHTLY_OFF
        for exercise, part in OFF.items():
            m, function = exercise.split(".")
            if m == module:
                source += "\n\n" + _slightly_off(module, function, part)
        path.write_text(source)
    return dest


def _loose_config(tmp_path):
    text = (ROOT / "autograde.toml").read_text()
    text += "".join(f'\n[exercises."{e}"]\natol = {LOOSE_ATOL}\n' for e in OFF)
    path = tmp_path / "autograde.toml"
    path.write_text(text)
    return load_config(str(path), env={})


def test_a_per_exercise_atol_changes_the_verdict(submission, grade_dir, config, tmp_path):
    strict = {e.id: e for e in grade_dir(submission, *OFF).exercises}
    loose = {e.id: e for e in grade_dir(submission, *OFF, cfg=_loose_config(tmp_path)).exercises}
    for exercise in OFF:
        assert strict[exercise].status is Status.FAILED, (exercise, strict[exercise].message)
        e = loose[exercise]
        assert e.status is Status.PASSED and e.points == e.max_points, \
            (exercise, e.message, [c.message for c in e.cases if c.status is not Status.PASSED])
        # the figures the feedback states are the override's
        assert all(c.atol == LOOSE_ATOL for case in e.cases for c in case.comparisons if c.atol is not None), exercise
