"""Command-line overrides are validated as the autograde.toml keys they stand for: a bad one is a
clear error naming the flag and the limit, with exit 2, before anything is graded (or torch loads).

The real `grader` command in a subprocess, as a user types it.
"""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SOLUTIONS
from grader.reports import FORMATS

SUB = ("--submission", str(SOLUTIONS))
BATCH = ("batch", str(SOLUTIONS), "--out", "never-written")


def grader(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.parametrize("args,message", [
    (("check", "attention", "--timeout", "0", *SUB),
     "--timeout 0: must be more than 0 seconds — wall-time limit for one call of a student function"),
    (("check", "attention", "--timeout", "-5", *SUB), "--timeout -5: must be more than 0 seconds"),
    (("check", "attention", "--timeout", "nan", *SUB), "--timeout nan: must be a finite number, more than 0 seconds"),
    (("check", "attention", "--timeout", "inf", *SUB), "--timeout inf: must be a finite number"),
    (("check", "attention", "--jobs", "-1", *SUB), "--jobs -1: must be 0 or more — exercises graded at once"),
    (("check", "attention", "--format", "pdf", *SUB), "unknown --format 'pdf': choose from " + ", ".join(FORMATS)),
    (("check", "attention", "--format", "htm", *SUB), "(did you mean 'html'?)"),
    (("check", "attention", "--color", "blue", *SUB), "argument --color: invalid choice: 'blue'"),
    (("check", "attention", "--timeout", "ten", *SUB), "argument --timeout: invalid float value: 'ten'"),
    ((*BATCH, "--timeout", "0"), "--timeout 0: must be more than 0 seconds"),
    ((*BATCH, "--timeout", "-5"), "--timeout -5: must be more than 0 seconds"),
    ((*BATCH, "--jobs", "-1"), "--jobs -1: must be 0 or more — submissions graded at once (0: one per CPU core)"),
    (("ci", "attention", *SUB, "--min-score", "-1"), "--min-score -1: give points (6.5, 0 or more) or a percentage"),
    (("ci", "attention", *SUB, "--min-score", "150%"), "from 0% to 100%"),
    (("ci", "attention", *SUB, "--min-score", "nan"), "--min-score nan: give points"),
    (("ci", "attention", *SUB, "--min-score", "lots"), "--min-score lots: give points"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--budget", "0"),
     "--budget: [performance] budget_s (seconds of measurement per check, warm-up included): must be positive"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--budget", "inf"),
     "--budget: [performance] budget_s (seconds of measurement per check, warm-up included): must be a finite number"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--budget", "nan"),
     "--budget: [performance] budget_s (seconds of measurement per check, warm-up included): must be a finite number"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--sizes", "64,0"),
     "--sizes 64,0: give whole numbers of 1 or more"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--sizes", "64", "x"),
     "--sizes 64 x: give whole numbers of 1 or more separated by commas or spaces, e.g. 64,128,256"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--sizes", "8,8"),
     "--sizes 8,8: 8 given more than once; give each size once, e.g. 64,128,256"),
    (("bench", "attention.scaled_dot_product_attention", *SUB, "--sizes", "8", "16,8"),
     "--sizes 8 16,8: 8 given more than once"),
])
def test_a_bad_override_exits_2_naming_the_flag_and_the_limit(args, message):
    p = grader(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert not (ROOT / "never-written").exists()


def test_jobs_0_the_default_is_accepted_as_in_autograde_toml(tmp_path):
    p = grader("check", "attention.causal_mask", *SUB, "--jobs", "0", "--timeout", "5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "call limit 5.0 s" in p.stdout
    (tmp_path / "empty").mkdir()
    p = grader("batch", str(tmp_path / "empty"), "--out", str(tmp_path / "out"), "--jobs", "0")
    assert p.returncode == 2 and "no submissions in" in p.stderr and "--jobs" not in p.stderr, p.stderr
