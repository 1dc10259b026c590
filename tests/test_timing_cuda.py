"""The CUDA path of the performance checks. Without a GPU (this project's CI): it imports,
says "skipped: needs CUDA" and never passes silently; the GPU benchmark and `grader bench
--device cuda` exit cleanly with that message. With a GPU, one real check runs on it."""
import os
import subprocess
import sys

import pytest
import torch

from conftest import ROOT, SOLUTIONS
from grader.results import Status
from grader.timing import driver, policy
from grader.timing.config import with_overrides
from grader.timing.timers import CudaTimer, TimerUnavailable

CUDA = torch.cuda.is_available()
no_cuda = pytest.mark.skipif(CUDA, reason="this machine has CUDA")
MHA = "attention.multi_head_attention"


@no_cuda
def test_the_cuda_timer_says_it_needs_cuda():
    with pytest.raises(TimerUnavailable, match="needs CUDA"):
        CudaTimer()
    with pytest.raises(TimerUnavailable):
        driver.make_driver(lambda: None, {"exercise": MHA, "device": "cuda"})


@no_cuda
def test_a_cuda_check_without_cuda_is_skipped_not_passed(grade_dir, config):
    cfg = with_overrides(config, enabled=True, device="cuda")
    (e,) = grade_dir(SOLUTIONS, MHA, cfg=cfg).exercises
    (p,) = e.performance
    assert e.passed and p.status is Status.SKIPPED and p.device == "cuda" and p.ratio is None
    assert p.message.startswith(policy.NEEDS_CUDA) and "cpu_fallback" in p.message


@no_cuda
@pytest.mark.slow
def test_cpu_fallback_times_it_on_the_cpu_instead(grade_dir, config):
    cfg = with_overrides(config, enabled=True, device="cuda", cpu_fallback=True, budget_s=1.0)
    (e,) = grade_dir(SOLUTIONS, MHA, cfg=cfg).exercises
    (p,) = e.performance
    assert p.device == "cpu" and p.status is Status.PASSED, p.message
    assert "no CUDA here: timed on the CPU with CPU sizes and limits" in p.message


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@no_cuda
def test_the_gpu_benchmark_exits_cleanly_without_cuda():
    proc = run("benchmarks/gpu_timing_quality.py")
    assert proc.returncode == 0 and "skipped: needs CUDA" in proc.stdout and not proc.stderr, proc.stderr


@no_cuda
def test_grader_bench_on_cuda_without_cuda_is_a_usage_error():
    proc = run("-m", "grader", "bench", MHA, "--device", "cuda", "--submission", str(SOLUTIONS))
    assert proc.returncode == 2 and "needs CUDA: this machine has none" in proc.stderr


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
@pytest.mark.slow
def test_a_real_check_on_the_gpu(grade_dir, config):
    cfg = with_overrides(config, enabled=True, device="cuda", budget_s=3.0)
    (e,) = grade_dir(SOLUTIONS, MHA, cfg=cfg).exercises
    (p,) = e.performance
    assert p.device == "cuda" and p.details["timer"] == "cuda", p.message
    assert p.ratio is not None and p.details["checked_outputs"] >= 5, p.message
