"""Deadlines hold whatever the child does, and a grader killed from outside leaves nothing behind.

- per submission: `submission_timeout` bounds the whole grade in wall-clock time (imports, every
  case, probes of a localiser); once it is used up, the remaining cases are "not run" for the
  time limit's reason and the remaining exercises are not started;
- stale folders: a grader killed with SIGKILL mid-grade leaves the student's code in its sandbox
  folder; the next grader to start removes it, never a live grader's folder, never anything that
  is not a grader's.
"""
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT, sandbox_folders_of
from grader.results import FailureKind
from grader.sandbox import provision

SLEEPS = {f"attention.{name}": f"def {name}(*args, **kwargs):\n    import time\n    time.sleep(1000)\n"
          for name in ("causal_mask", "scaled_dot_product_attention", "multi_head_attention")}
SLEEPS["attention.positional_encoding"] = "def positional_encoding(T, d_model):\n    while True:\n        pass\n"
SLEEPS["lstm.lstm_cell"] = "def lstm_cell(x_t, h_prev, c_prev, params):\n    while True:\n        pass\n"


@pytest.fixture
def short(config):
    return dataclasses.replace(config, submission_timeout=6.0, call_timeout=3.0)


def test_submission_timeout_bounds_a_grade_whose_every_function_hangs(make_submission, grade_dir, short):
    """Five exercises whose functions sleep or spin: the grade ends about when the submission's 6 s
    are used up (the first call of a fresh process would get a 10 s start-up grace, and every
    remaining case 3 s), each case a timeout cut to what was left or "not run" for the time limit."""
    path = make_submission(SLEEPS)
    start = time.monotonic()
    result = grade_dir(path, *SLEEPS, cfg=short)
    elapsed = time.monotonic() - start
    assert elapsed < 15, elapsed
    assert {e.id for e in result.exercises} == set(SLEEPS)
    for e in result.exercises:
        assert e.points == 0 and e.status.value in ("timeout", "not run"), (e.id, e.status)
        kinds = [c.failure for c in e.cases]
        assert set(kinds) <= {FailureKind.TIMEOUT, FailureKind.TIME_LIMIT}, (e.id, kinds)
        assert kinds[-1] is FailureKind.TIME_LIMIT, (e.id, kinds)
        for c in e.cases:
            if c.failure is FailureKind.TIME_LIMIT:
                assert c.message == "not run: the submission's time limit (6 s) was used up", c.message
            else:
                assert "what was left of the submission's 6 s" in c.message, c.message


def test_a_localiser_probe_that_hangs_stays_within_the_limits(make_submission, grade_dir, short):
    """lstm_cell answers its first call in a process wrongly (so the gate localiser probes it) and
    spins on every later call: each probe is cut at the call limit, the grade at the submission's."""
    wrong_then_spin = textwrap.dedent("""\
        CALLS = []
        def lstm_cell(x_t, h_prev, c_prev, params):
            CALLS.append(1)
            if len(CALLS) > 1:
                while True:
                    pass
            return h_prev + 1, c_prev + 1
        """)
    path = make_submission({"lstm.lstm_cell": wrong_then_spin})
    start = time.monotonic()
    result = grade_dir(path, "lstm.lstm_cell", cfg=short)
    elapsed = time.monotonic() - start
    assert elapsed < 15, elapsed
    e = result.exercises[0]
    assert e.points == 0
    assert e.cases[0].status.value == "failed", e.cases[0]      # its probe timed out: the case is judged all the same
    assert e.cases[-1].failure is FailureKind.TIME_LIMIT, [c.failure for c in e.cases]


# -- stale sandbox folders ---------------------------------------------------------------------------
GRADE_AND_HANG = """\
import sys
sys.path.insert(0, {root!r})
from grader.catalog import select
from grader.config import load_config
from grader.pipeline.engine import grade, limits_from
from grader.sandbox.runner import Sandbox
config = load_config({toml!r}, env={{}})
sandbox = Sandbox(limits_from(config))
sandbox.start()
print(sandbox._zygote.pid, flush=True)
grade({submission!r}, select(["attention.causal_mask"]), config, sandbox=sandbox)
"""

LIVE_GRADER = """\
import sys, time
sys.path.insert(0, {root!r})
from grader.sandbox.provision import make_workdir
workdir = make_workdir()
open(workdir + "/attention.py", "w").write("# a live grader's student")
print(workdir, flush=True)
time.sleep(120)
"""


def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)


def _kill_inside(folder: Path) -> None:
    """Processes still working in `folder` (a child of the killed grader, were one left)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(folder)):
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                continue


def test_a_grader_killed_mid_grade_leaves_nothing_for_long(make_submission, grade_dir, config):
    """A grader killed with SIGKILL while its child runs the student's sleeping function leaves its
    folder (the student's code in it); the next grade removes it, not the folder of a grader that
    is still running, nor anything in the temp folder that is not a grader's."""
    path = make_submission({"attention.causal_mask": SLEEPS["attention.causal_mask"]})
    live = _python(LIVE_GRADER.format(root=str(ROOT)))
    killed = _python(GRADE_AND_HANG.format(root=str(ROOT), toml=str(ROOT / "autograde.toml"), submission=str(path)))
    foreign = Path(tempfile.mkdtemp(prefix="grader-"))          # a name like ours, but not a grader's folder
    try:
        live_workdir = Path(live.stdout.readline().strip())
        zygote = int(killed.stdout.readline())
        deadline = time.monotonic() + 60
        # the student's code: in its child's folder, or staged for its children (grader.sandbox.provision.Staged)
        while not any(d.glob("grader-*/*.py") for d in sandbox_folders_of(killed.pid)):
            assert time.monotonic() < deadline and killed.poll() is None, "the grade never started its child"
            time.sleep(0.1)
        time.sleep(0.5)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        stale = sandbox_folders_of(killed.pid)
        assert stale and list(stale[0].glob("grader-*/*.py")), "the kill left no folder: nothing tested"

        grade_dir(make_submission(name="next"), "attention.causal_mask", cfg=config)

        assert not any(d.exists() for d in stale)
        assert (live_workdir / "attention.py").read_text() == "# a live grader's student"
        assert foreign.is_dir()
    finally:
        for d in sandbox_folders_of(killed.pid):
            _kill_inside(d)
        for p in (killed, live):
            if p.poll() is None:
                p.kill()
                p.wait()
        try:
            os.kill(zygote, signal.SIGKILL)
        except (OSError, UnboundLocalError):
            pass
        foreign.rmdir()
    provision.remove_stale_workdirs()           # the live grader is dead now: its folder goes too
    assert not live_workdir.parent.exists()


def test_only_folders_of_dead_graders_are_removed(tmp_path):
    """Named for this (live) process but with another start time (its pid reused), or for another
    boot: removed. This process's own name, a link with a stale name, a file, a folder of another
    owner, a folder of another name: kept."""
    pid, boot = os.getpid(), provision._boot_id()
    start = provision._start_time(pid)
    mine = tmp_path / f"grader-sandbox-{pid}-{start}-{boot}-abc"
    reused = tmp_path / f"grader-sandbox-{pid}-{start + 1}-{boot}-abc"
    rebooted = tmp_path / f"grader-sandbox-{pid}-{start}-{'f' * 8 if boot != 'f' * 8 else '0' * 8}-abc"
    other = tmp_path / "grader-sandbox-notapid"
    target = tmp_path / "instructor"
    for d in (mine, reused, rebooted, other, target):
        (d / "grader-x").mkdir(parents=True)
    (tmp_path / f"grader-sandbox-1-1-{boot}-link").symlink_to(target)
    (tmp_path / f"grader-sandbox-1-1-{boot}-file").write_text("")
    owned_by_other = tmp_path / f"grader-sandbox-1-1-{boot}-other"
    owned_by_other.mkdir()
    if os.geteuid() == 0:
        os.chown(owned_by_other, 12345, 12345)
    removed = provision.remove_stale_workdirs(str(tmp_path))
    assert sorted(removed) == sorted(map(str, (reused, rebooted) + (() if os.geteuid() == 0 else (owned_by_other,))))
    assert mine.is_dir() and other.is_dir() and (target / "grader-x").is_dir()
