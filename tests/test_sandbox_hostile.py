"""Hostile submissions are contained: the right exercise at zero, the others unaffected,
nothing written outside the sandbox, no process left behind.

Each scenario under tests/fixtures/submissions/<scenario>/ holds the hostile or broken part of the
worked attention module, its docstring stating the attack and what must hold; tests/scenarios.py
builds the real submission from solutions/attention.py.
"""
import dataclasses
import os
import platform
from pathlib import Path

import pytest

from conftest import ROOT, processes_running, statuses
from scenarios import submission

ALL = {"attention.causal_mask", "attention.scaled_dot_product_attention",
       "attention.multi_head_attention", "attention.positional_encoding"}


@pytest.fixture(scope="module")
def quick(config):
    """A short call limit so endless loops cost seconds, not minutes."""
    return dataclasses.replace(config, call_timeout=3.0)


def run(grade_dir, scenario, cfg=None):
    return grade_dir(submission(scenario), "attention", cfg=cfg)


def only_failing(result, exercise, status):
    got = statuses(result)
    assert got[exercise] == status, got
    assert all(got[e] == "passed" for e in ALL - {exercise}), got
    e = next(x for x in result.exercises if x.id == exercise)
    assert e.points == 0
    return e


def test_infinite_loop_times_out(grade_dir, quick, short_grace):
    e = only_failing(run(grade_dir, "hostile_infinite_loop", quick), "attention.causal_mask", "timeout")
    assert f"took longer than {short_grace:g} s" in e.cases[0].message     # a fresh process's first call: grace
    assert e.cases[2].status.value == "not run"               # two strikes: the rest is not tried


def test_exit_at_import_does_not_pass_and_is_reported(grade_dir):
    """sys.exit(0) at import: the grader is not fooled into a clean exit; the functions are graded
    on their merits from a salvaged module, and the submission carries the import error."""
    result = run(grade_dir, "hostile_exit_at_import")
    assert any("does not import as written" in err and "sys.exit" in err for err in result.errors)
    assert not result.all_passed
    assert all(any("could not be imported as written" in n for n in e.notes) for e in result.exercises)


def test_os_exit_inside_a_function_crashes_only_that_exercise(grade_dir):
    only_failing(run(grade_dir, "hostile_os_exit"), "attention.positional_encoding", "crashed")


@pytest.mark.skipif(os.geteuid() != 0, reason="private uids need root; process groups are used otherwise")
def test_sigterm_ignoring_loop_and_its_escaped_grandchild_are_killed(grade_dir, quick, short_grace):
    result = run(grade_dir, "hostile_ignores_sigterm", quick)
    only_failing(result, "attention.causal_mask", "timeout")
    assert processes_running("time.sleep(0.05)") == []       # the grandchild in its own session


def test_six_gib_allocation_hits_the_memory_limit(grade_dir):
    e = only_failing(run(grade_dir, "hostile_big_allocation"), "attention.scaled_dot_product_attention", "error")
    assert "ran out of memory" in e.cases[0].message and "2048 MiB" in e.cases[0].message


def test_300_mb_of_prints_are_truncated_and_cost_nothing(grade_dir, config):
    result = run(grade_dir, "hostile_prints")
    assert all(s == "passed" for s in statuses(result).values())
    mha = next(e for e in result.exercises if e.id == "attention.multi_head_attention")
    assert mha.output_truncated and 0 < len(mha.output) <= config.output_kb << 10


def test_patched_allclose_and_pass_prints_change_nothing(grade_dir):
    e = only_failing(run(grade_dir, "hostile_patches_allclose"), "attention.scaled_dot_product_attention", "failed")
    assert "PASS" in e.output           # it printed, and it still failed


def test_tensor_subclass_claiming_equality_is_rejected(grade_dir):
    e = only_failing(run(grade_dir, "hostile_tensor_subclass"), "attention.causal_mask", "failed")
    assert "not a plain torch.Tensor" in e.cases[0].message


def test_syntax_error_costs_only_the_broken_function(grade_dir):
    result = run(grade_dir, "syntax_error")
    e = only_failing(result, "attention.positional_encoding", "error")
    assert "SyntaxError" in result.errors[0] and "line 125" in result.errors[0]
    assert "positional_encoding could not be loaded" in e.cases[0].message


def test_forbidden_api_reached_directly_is_caught_statically(grade_dir):
    e = only_failing(run(grade_dir, "forbidden_direct"), "attention.scaled_dot_product_attention", "forbidden")
    assert "torch.nn.functional.scaled_dot_product_attention" in e.message and "line" in e.message


def test_forbidden_api_reached_through_getattr_is_caught_at_run_time(grade_dir):
    e = only_failing(run(grade_dir, "forbidden_getattr"), "attention.scaled_dot_product_attention", "forbidden")
    assert "while running" in e.message


def test_forbidden_module_reached_through_getattr_is_caught(grade_dir):
    e = only_failing(run(grade_dir, "forbidden_mha_module"), "attention.multi_head_attention", "forbidden")
    assert "MultiheadAttention" in e.message


def test_importing_the_solutions_is_forbidden(grade_dir):
    only_failing(run(grade_dir, "reads_solutions"), "attention.causal_mask", "forbidden")


def test_writes_outside_the_sandbox_fail(grade_dir):
    result = run(grade_dir, "writes_outside")
    assert statuses(result)["attention.causal_mask"] == "passed"   # it swallowed the errors
    for target in (ROOT / "PWNED", ROOT / "tests" / "PWNED", Path("/tmp/grader-PWNED")):
        assert not target.exists(), target


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="system-call numbers for two machines")
def test_the_kernels_keyrings_are_out_of_reach(grade_dir):
    got = statuses(run(grade_dir, "keyrings"))
    assert all(got[e] == "passed" for e in ALL), got


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root (as in CI)")
def test_the_machines_terminals_are_out_of_reach(grade_dir):
    got = statuses(run(grade_dir, "terminals"))
    assert all(got[e] == "passed" for e in ALL), got


def test_reads_outside_the_sandbox_fail(grade_dir):
    """Solutions, configuration and the grader's environment are out of reach at run time."""
    result = run(grade_dir, "reads_outside")
    e = next(x for x in result.exercises if x.id == "attention.causal_mask")
    assert e.passed
    assert "BEGIN SOLUTION" not in e.output and "[limits]" not in e.output
    assert "READ " not in e.output and e.output.count("DENIED") >= 3, e.output


def test_student_code_sees_no_secrets_from_the_environment(monkeypatch, config, tmp_path):
    """The sandbox starts with an allow-listed environment: a CI token or the seed never reaches it."""
    from grader.sandbox.provision import copy_submission
    from grader.sandbox.runner import Sandbox
    monkeypatch.setenv("GRADER_SECRET_SEED", "424242")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    copy_submission({"m": "import os\ndef env():\n    return dict(os.environ)\n"}, str(tmp_path))
    with Sandbox() as sb:
        session = sb.open(str(tmp_path), "m")
        seen = session.call("env").value
        session.close()
    assert "GRADER_SECRET_SEED" not in seen and "GITHUB_TOKEN" not in seen and "PATH" in seen
