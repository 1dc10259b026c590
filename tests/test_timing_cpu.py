"""Performance checks for real, on this CPU, through the engine and the sandbox.

The worked solutions pass their limits; the typical slow variants fail theirs; and each attack
on the measurement (the scenarios tests/fixtures/submissions/perf_<scenario>/, built by
tests/scenarios.py) is caught. Each check gets a short budget: the limits are calibrated with wide
margins (benchmarks/calibrate_perf.py).
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SOLUTIONS, mistake_source
from grader.catalog import catalog
from grader.reports import render
from grader.results import Status
from grader.sandbox import native_watch
from grader.timing.config import with_overrides
from grader.timing.specs import REGISTRY
from scenarios import submission

pytestmark = pytest.mark.slow
BUDGET = 1.5
PRESENT = [e for e in REGISTRY if e in catalog()]


@pytest.fixture(scope="module")
def perf_cfg(config):
    return with_overrides(config, enabled=True, device="cpu", budget_s=BUDGET)


def timed(grade_dir, path, exercise, cfg):
    (e,) = grade_dir(path, exercise, cfg=cfg).exercises
    assert e.passed, f"only a correct function is timed, and this one failed: {e.message}"
    (p,) = e.performance
    return p


@pytest.fixture(scope="module")
def mha_result(grade_dir, perf_cfg):
    return grade_dir(SOLUTIONS, "attention.multi_head_attention", cfg=perf_cfg)


@pytest.mark.parametrize("exercise", PRESENT)
def test_the_worked_solution_passes_its_limit(grade_dir, config, mha_result, exercise):
    """With the default budget, the one the limits are calibrated at (benchmarks/calibrate_perf.py):
    a shorter one measures some correct code slower (scaled_dot_product_attention's solution at
    1.5 s: 1.6-2.7x against a limit of 2, at 3 s: 1.6-1.8x, on one machine on one day)."""
    if exercise == "attention.multi_head_attention":
        result = mha_result       # 0.6-0.9x against 1.4: far inside, whatever the budget
    else:
        result = grade_dir(SOLUTIONS, exercise, cfg=with_overrides(config, enabled=True, device="cpu"))
    (e,) = result.exercises
    (p,) = e.performance
    assert p.status is Status.PASSED, p.message
    assert p.ratio is not None and p.details["checked_outputs"] == p.details["timed_calls"] >= 5
    assert "1 thread for both sides" in p.message and p.device == "cpu"


def test_a_loop_over_the_heads_fails(grade_dir, perf_cfg):
    p = timed(grade_dir, submission("perf_loop_over_heads"), "attention.multi_head_attention", perf_cfg)
    assert p.status is Status.FAILED and p.ratio > p.threshold, p.message
    assert "Slower than the limit" in p.message and "loop over the heads" in p.message


LOOP_OVER_BATCH = '''
def conv2d(X, K, b=None, stride=1, padding=0):
    """Correct, one image at a time."""
    C_out, _, kh, kw = K.shape
    out = []
    for n in range(X.shape[0]):
        x = X[n:n + 1]
        H_out = (x.shape[2] + 2 * padding - kh) // stride + 1
        W_out = (x.shape[3] + 2 * padding - kw) // stride + 1
        cols = F.unfold(x, (kh, kw), padding=padding, stride=stride)
        y = (K.reshape(C_out, -1) @ cols).reshape(1, C_out, H_out, W_out)
        out.append(y if b is None else y + b.reshape(1, C_out, 1, 1))
    return torch.cat(out)
'''


@pytest.mark.skipif("cnn.conv2d" not in catalog(), reason="the cnn chapter is not in the catalog")
def test_a_loop_over_the_batch_in_conv2d_fails(grade_dir, perf_cfg, make_submission):
    p = timed(grade_dir, make_submission({"cnn.conv2d": LOOP_OVER_BATCH}), "cnn.conv2d", perf_cfg)
    assert p.status is Status.FAILED and p.ratio > p.threshold, p.message


def test_replaying_cached_answers_fails(grade_dir, perf_cfg):
    """perf_caches_output: SDPA replays the answer it stored for a shape (all correctness cases
    differ in shape, so it passes them); fresh inputs of one shape expose it."""
    p = timed(grade_dir, submission("perf_caches_output"), "attention.scaled_dot_product_attention",
              perf_cfg)
    assert p.status is Status.FAILED and p.details["flag"] == "wrong output"
    assert "a timed call returned a wrong output" in p.message and p.ratio is None


def test_patching_time_perf_counter_is_caught(grade_dir, perf_cfg):
    """perf_patches_perf_counter: the slow loop over heads leaves time.perf_counter running at 1%
    speed; the harness reads its own clock and reports the replacement."""
    p = timed(grade_dir, submission("perf_patches_perf_counter"), "attention.multi_head_attention",
              perf_cfg)
    assert p.status is Status.FAILED and p.details["flag"] == "problem"
    assert "replaced time.perf_counter" in p.message and p.ratio is None


def test_patching_the_harness_clock_is_caught_by_the_kernels_account(grade_dir, perf_cfg):
    """perf_patches_harness_clock: the student's code replaces the timing driver's own clock and
    hides 90% of its time; the CPU time the kernel accounted to the process gives it away."""
    p = timed(grade_dir, submission("perf_patches_harness_clock"), "attention.multi_head_attention",
              perf_cfg)
    assert p.status is Status.FAILED and p.details["flag"] == "work accounts for student", p.message
    assert p.ratio is None and p.details["claimed_ratio"] < p.threshold       # the lie would have passed


def test_work_hidden_in_the_loads_is_caught(grade_dir, perf_cfg):
    """perf_works_while_loading: the slow loop over heads computes every input set's heads while
    it is loaded (an untimed request), so its timed calls only project them. The CPU its loads
    cost against a clean child's gives it away, confirming loads included (on this machine the
    guard on the kernel's account of its calls objects too, and first)."""
    p = timed(grade_dir, submission("perf_works_while_loading"), "attention.multi_head_attention",
              perf_cfg)
    assert p.status is Status.FAILED and p.details["flag"] in ("loads match", "work accounts for student"), p.message
    assert p.ratio is None and p.details["claimed_ratio"] < p.threshold       # the lie would have passed
    assert p.details["load_cpu_s_yours"] > 2 * p.details["load_cpu_s_clean"], p.details


@pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")
def test_calling_the_timing_reference_is_caught_by_the_kernel_count(grade_dir, perf_cfg):
    """perf_calls_the_timing_reference: a slow conv2d that, timed, calls the timing reference its
    child holds (PyTorch's F.conv2d, bound before the tripwires); its timed calls enter PyTorch's
    convolution kernel, which the kernel counts for the student's blocks alone (the reference's own
    blocks enter it too)."""
    p = timed(grade_dir, submission("perf_calls_the_timing_reference"), "cnn.conv2d", perf_cfg)
    assert p.status is Status.FAILED and "called a forbidden API: at::native::convolution" in p.message, p.message


def test_slowing_the_reference_down_is_caught(grade_dir, perf_cfg):
    """perf_slows_reference: a background thread keeps the interpreter busy except while the
    student's (slow) function runs, so the reference beside it looks slow. Whichever guard objects
    first: the thread's CPU during the student's own calls can give it away too (the kernel's
    account of those calls, as in test_work_hidden_in_the_loads_is_caught)."""
    p = timed(grade_dir, submission("perf_slows_reference"), "attention.multi_head_attention",
              perf_cfg)
    assert p.status is Status.FAILED and p.ratio is None
    assert p.details["flag"] in ("no other threads", "reference undisturbed", "loads match",
                                 "work accounts for student"), p.message


def test_keeping_the_reference_waiting_is_caught(grade_dir, perf_cfg):
    """perf_keeps_reference_waiting: a hook sleeps whenever conv2d is called, which only the timing
    reference does; asleep, it uses no CPU. The reference's calls take longer next to the module than
    in the clean child, block for block."""
    p = timed(grade_dir, submission("perf_keeps_reference_waiting"), "cnn.conv2d", perf_cfg)
    assert p.status is Status.FAILED and p.ratio is None
    assert p.details["flag"] in ("reference not kept waiting", "reference undisturbed"), p.message


def test_a_wrong_function_is_not_timed(grade_dir, perf_cfg, make_submission):
    no_bias = mistake_source("attention", "multi_head_attention__no_bias")
    sub = make_submission({"attention.multi_head_attention": no_bias})
    (e,) = grade_dir(sub, "attention.multi_head_attention", cfg=perf_cfg).exercises
    (p,) = e.performance
    assert not e.passed and p.status is Status.SKIPPED and p.message.startswith("not timed")


def test_performance_is_off_unless_asked(grade_dir, config):
    (e,) = grade_dir(SOLUTIONS, "attention.multi_head_attention", cfg=config).exercises
    assert e.passed and e.performance == ()


def test_reports_show_the_performance_entry(mha_result):
    p = mha_result.exercises[0].performance[0]
    terminal = render(mha_result, "terminal", color=False)
    assert f"PASS      speed on cpu (1 thread): {p.ratio:.2f}x the reference (limit {p.threshold}x)" in terminal
    md = render(mha_result, "md")
    assert "| speed on cpu (1 thread) |" in md and f"{p.ratio:.2f}x" in md
    gradescope = json.loads(render(mha_result, "json"))
    entry = next(t for t in gradescope["tests"] if t["name"] == "attention.multi_head_attention [performance]")
    assert entry["status"] == "passed" and entry["tags"] == ["attention", "performance"]
    assert gradescope["leaderboard"] == [{"name": "attention.multi_head_attention time ratio",
                                          "value": round(p.ratio, 4), "order": "asc"}]
    html = render(mha_result, "html")     # a passed check is one line in the passed list (charts: failures)
    assert "performance, speed on cpu (1 thread): " in html, html[-3000:]


def test_grader_check_perf_end_to_end(tmp_path):
    """The real command: `--perf` turns the checks on; the course configuration's [performance]
    section sets the budget."""
    toml = tmp_path / "autograde.toml"
    text = (ROOT / "autograde.toml").read_text()
    assert "\nbudget_s = 3.0" in text
    toml.write_text(text.replace("\nbudget_s = 3.0", "\nbudget_s = 1.0", 1))
    proc = subprocess.run([sys.executable, "-m", "grader", "check", "attention.multi_head_attention", "--perf",
                           "--submission", str(SOLUTIONS), "--config", str(toml), "--color", "never"],
                          capture_output=True, text=True, cwd=ROOT, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "PASS      speed on cpu (1 thread): " in proc.stdout, proc.stdout


FORKS_A_HELPER = '''def scaled_dot_product_attention(Q, K, V, mask=None):
    import math, os
    helper = os.fork()          # a helper process, as the red team's that computed the timed answers
    if helper == 0:
        os._exit(0)
    os.waitpid(helper, 0)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
'''


def test_the_timing_child_may_start_no_process(grade_dir, perf_cfg, make_submission):
    """A forked helper's CPU is none the guards count: a red team's computed a slow loop's answers in
    one and passed its speed check. The correctness children may fork (the function passes there); the
    student's timing child may not, and says so."""
    sub = make_submission({"attention.scaled_dot_product_attention": FORKS_A_HELPER})
    (e,) = grade_dir(sub, "attention.scaled_dot_product_attention", cfg=perf_cfg).exercises
    assert e.passed, e.message
    (p,) = e.performance
    assert p.status is not Status.PASSED and "PermissionError" in p.message, p.message
    assert "the timing process may start threads, not processes" in p.message
