"""End to end: the real `grader` command in a subprocess, its output lines and exit codes."""
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, handed_on, processes_running

GRADER = [sys.executable, "-m", "grader"]


def grader(*args, cwd=ROOT, env=None):
    return subprocess.run([*GRADER, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {}), "NO_COLOR": "1"})


def test_solutions_pass_with_exit_0():
    p = grader("check", "attention", "--submission", "solutions", "--color", "never")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASS      causal_mask" in p.stdout and "Score: 9 / 9" in p.stdout


def test_stubs_fail_with_exit_1_and_no_traceback():
    p = grader("check", "attention.causal_mask", "--color", "never")
    assert p.returncode == 1
    assert "1 exercise not started (1 point): replace each `raise NotImplementedError(...)`" in p.stdout
    assert "  attention  causal_mask" in p.stdout
    assert "Traceback" not in p.stdout + p.stderr


def test_console_script_is_the_same_command():
    p = subprocess.run([os.path.join(os.path.dirname(sys.executable), "grader"), "list"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "attention.scaled_dot_product_attention" in p.stdout


@pytest.mark.parametrize("args,fragment", [
    (("check", "attenton"), "unknown exercise or module 'attenton'. Did you mean 'attention'?"),
    (("check", "attention", "--submission", "no/such/dir"), "no such file or folder"),
    (("check", "attention", "--format", "pdf"), "unknown --format 'pdf'"),
])
def test_usage_errors_exit_2_with_a_clear_message(args, fragment):
    p = grader(*args)
    assert p.returncode == 2 and fragment in p.stderr and "Traceback" not in p.stderr


def test_a_fifo_as_the_submission_is_refused_not_waited_on(tmp_path):
    """grader check --submission on a FIFO waited for a writer forever."""
    fifo = tmp_path / "neurons.py"
    os.mkfifo(fifo)
    p = grader("check", "neurons.heaviside", "--submission", str(fifo))
    assert p.returncode == 2 and f"{fifo}: not a regular file or a folder (a pipe or a device)" in p.stderr, p.stderr


def test_bad_config_exits_2_naming_the_key(tmp_path):
    cfg = tmp_path / "autograde.toml"
    cfg.write_text("[limits]\nmemory = 10\n")
    p = grader("check", "attention", "--config", str(cfg))
    assert p.returncode == 2 and "unknown key 'memory'" in p.stderr and str(cfg) in p.stderr


def test_a_results_file_is_written_even_for_a_broken_submission(tmp_path):
    bad = tmp_path / "broken.zip"
    bad.write_bytes(b"not a zip at all")
    out = tmp_path / "results.json"
    p = grader("check", "attention", "--submission", str(bad), "--format", "json", "--output", str(out))
    assert p.returncode == 1
    data = json.loads(out.read_text())
    assert data["score"] == 0 and data["max_score"] == 9
    assert {t["name"] for t in data["tests"]} == {"attention.causal_mask", "attention.scaled_dot_product_attention",
                                                  "attention.multi_head_attention", "attention.positional_encoding"}
    assert "not a readable zip archive" in data["output"]


def test_zip_submission_and_html_report(tmp_path):
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.write(ROOT / "solutions" / "attention.py", "exercises/attention.py")
    out = tmp_path / "report.html"
    p = grader("check", "attention", "--submission", str(z), "--format", "html", "--output", str(out))
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert "<!DOCTYPE html>" in html and "9 / 9" in html and "http" not in html.replace("http-equiv", "")


def test_stubs_check_agrees():
    p = grader("stubs", "--check")
    assert p.returncode == 0, p.stdout


def test_output_cut_short_by_the_reader_is_not_an_internal_error():
    """`grader list | head -1`: the pipe closes under the command; it ends quietly (141), no traceback."""
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-m", "grader", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()              # before it writes (its imports come first): every write meets EPIPE
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141, err
    assert "internal error" not in err and "Traceback" not in err, err


def test_the_command_ends_only_after_what_must_finish_has():
    """console() skips the interpreter's teardown (os._exit), but not what a command leaves running:
    a thread that is not a daemon is joined, atexit handlers run, buffered output is written, and the
    command's exit code is the process's."""
    code = ("import atexit, sys, threading, time\n"
            "from grader import cli\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "def late():\n    time.sleep(0.3)\n    print('thread finished')\n"
            "def main():\n    threading.Thread(target=late).start()\n    sys.stdout.write('no newline')\n"
            "    return 3\n"
            "cli.main = main\n"
            "cli.console()\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stderr
    assert p.stdout.splitlines() == ["no newlinethread finished", "atexit ran"], p.stdout


def test_import_frozen_imports_without_collections_and_freezes_what_it_made():
    """Full collections during torch's import walk every object it made, none of them garbage:
    import_frozen imports with the collector off, freezes what it made, and turns it back on (if it
    was on)."""
    code = ("import gc\n"
            "from grader.imports import import_frozen\n"
            "gc.callbacks.append(lambda phase, info: phase == 'start' and info['generation'] == 2 and print('full'))\n"
            "import_frozen('grader.pipeline.engine', 'grader.catalog')\n"
            "import torch\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 100000, flush=True)\n"
            "gc.disable()\n"
            "import_frozen('json')\n"
            "print(gc.isenabled(), flush=True)\n"     # a process without the collector stays so
            "gc.callbacks.clear()\n")      # before the interpreter's own teardown, which collects
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "False"], out.stdout


def test_a_ctrl_c_that_an_import_swallows_is_raised_once_import_frozen_is_done(tmp_path):
    """torch's C initialisation clears whatever importing numpy raises, a KeyboardInterrupt included:
    import_frozen raises a Ctrl-C that came during the import once the import is done, never loses it."""
    (tmp_path / "swallows.py").write_text("import os, signal, time\ntry:\n    os.kill(os.getpid(), signal.SIGINT)\n"
                                          "    time.sleep(0.2)\nexcept BaseException:\n    pass\nDONE = True\n")
    code = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom grader.imports import import_frozen\n"
            "try:\n    import_frozen('swallows')\nexcept KeyboardInterrupt:\n"
            "    print('interrupted after', sys.modules['swallows'].DONE)\nelse:\n    print('lost')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["interrupted", "after", "True"], (out.stdout, out.stderr[-2000:])


@pytest.mark.parametrize("argv", [["check", "--submission", "{missing}", "attention.causal_mask"],
                                  ["batch", "{missing}", "--out", "{out}"]],
                         ids=["check", "batch"])
def test_the_commands_that_import_torch_freeze_it(argv, tmp_path):
    """A grading command and grader batch's parent (which holds every result until the class report)
    import torch through import_frozen: no full collection while they do, what it made frozen, the
    collector on after. Both commands are refused (no such submission) only once that is done."""
    code = ("import gc, sys\n"
            "from grader import cli\n"
            "import grader.frontends.commands.batch as batch\n"
            "batch.warm_up = lambda: None\n"       # no forkserver: the parent's own import is the subject
            "from grader.sandbox import launch\n"
            "launch.early = lambda: None\n"        # nor the check's zygote
            "gc.callbacks.append(lambda phase, info: phase == 'start' and info['generation'] == 2 and print('full'))\n"
            f"code = cli.main({[a.format(missing=tmp_path / 'missing', out=tmp_path / 'out') for a in argv]!r})\n"
            "print(code, 'torch' in sys.modules, gc.isenabled(), gc.get_freeze_count() > 100000, flush=True)\n"
            "gc.callbacks.clear()\n")        # a normal end: atexit removes the process's folders
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", "True", "True", "True"], (out.stdout, out.stderr[-2000:])


def test_grader_batch_collects_multiprocessings_helpers_before_it_ends(tmp_path):
    """grader batch's workers are forked from multiprocessing's forkserver, which runs beside its
    resource tracker: the command stops and collects both before it ends, rather than leave them to
    end after it, as orphans whose zombies pid 1 must collect."""
    from fixtures.batch.build import make_class
    subs = make_class(tmp_path / "subs", {"alice": "correct"})
    argv = ["grader", "batch", str(subs), "--out", str(tmp_path / "out"), "attention.causal_mask", "--jobs", "1"]
    code = ("import atexit, json, sys\n"
            "from grader import cli\n"
            "def record():\n"      # the last atexit handler: the helpers still run
            "    import multiprocessing.forkserver as f, multiprocessing.resource_tracker as r\n"
            "    print(json.dumps([f._forkserver._forkserver_pid, r._resource_tracker._pid]))\n"
            "atexit.register(record)\n"
            f"sys.argv = {argv!r}\n"
            "cli.console()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    helpers = json.loads(out.stdout.splitlines()[-1])
    assert all(isinstance(pid, int) for pid in helpers), helpers
    assert [pid for pid in helpers if os.path.exists(f"/proc/{pid}")] == [], "left to end after the command"


@pytest.mark.parametrize("exercise, code", [("attention.causal_mask", 0), ("no_such_exercise", 2)])
def test_a_check_leaves_no_process_of_its_own_behind(exercise, code):
    """A check launches its sandbox's zygote before it imports torch (grader.sandbox.launch.early), and
    ends it before it exits, graded or refused (no such exercise: the zygote was never used, and is
    likely importing torch still). Left to end after the command, it was an orphan for pid 1 to
    collect. What may outlive a check is the kernel counters' keeper alone, by design."""
    got, handed, err = handed_on([*GRADER, "check", "--submission", "solutions", exercise], cwd=ROOT, timeout=300)
    assert got == code, err
    assert [c for c in handed if "grader/sandbox/keeper.py" not in c] == [], handed


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_ctrl_c_during_a_check_ends_it_with_one_line_and_no_traceback():
    """Ctrl-C at the terminal reaches the whole process group, the sandbox's zygote included: the
    command says it was interrupted and exits 130; no process of its prints a traceback."""
    import signal
    import time
    p = subprocess.Popen([*GRADER, "check", "--submission", "solutions"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline and \
                p.pid not in map(_parent, processes_running("grader.sandbox.zygote import main")):
            time.sleep(0.05)
        time.sleep(0.3)                     # grading under way
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "grader: interrupted" in err, err[-2000:]
