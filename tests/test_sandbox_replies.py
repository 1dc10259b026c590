"""Hostile replies: a submission that writes its own bytes to the reply socket.

The child's reply socket is an inherited file descriptor (grader.sandbox.child.main); a student
finds it by trying descriptors. Whatever it writes there, at import or during a call, must hold:
the grade completes within its limits, the exercise fails as the student's fault (crashed, timeout
or error: never a grader fault), the parent's memory is not blown up, and no process of the child
(nor a helper it started) outlives the grade.
"""
import dataclasses
import os
import time

import pytest

from conftest import processes_running, statuses
from grader.sandbox import processes, runner
from grader.sandbox.provision import copy_submission
from grader.sandbox.runner import Sandbox

ATTENTION = {"attention.causal_mask", "attention.scaled_dot_product_attention",
             "attention.multi_head_attention", "attention.positional_encoding"}

# Student code: the reply socket, a helper process named by a marker, and hostile bytes.
HOSTILE = '''
import os, struct, time


def _reply_socket():
    import socket
    for fd in range(3, 256):
        try:
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        if s.family == socket.AF_UNIX and s.type == socket.SOCK_STREAM:
            return s
        s.close()


def _helper(marker):
    import subprocess, sys
    subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)  # " + marker])


def _header(text):
    import struct
    return struct.pack(">Q", 8 + len(text)) + struct.pack(">Q", len(text)) + text
'''

ATTACKS = {
    # a length, then bytes that are not JSON
    "malformed": "sock.sendall(struct.pack('>Q', 24) + b'this is not a reply!!!!!')",
    # 100,000 nested lists: RecursionError in the JSON parser
    "deep": "sock.sendall(_header(b'{\"sizes\":[],\"value\":' + b'[' * 100000 + b']' * 100000 + b'}'))",
    # 24 MiB of JSON in one well-framed message (was +1.2 GB of the parent's memory to decode)
    "huge": "sock.sendall(_header(b'{\"sizes\":[],\"value\":[' + b','.join([b'[]'] * (8 << 20)) + b']}'))",
    # a reply of 1,000 bytes, sent one byte every 0.1 s: each read succeeds, the whole never ends
    "trickle": "sock.sendall(struct.pack('>Q', 1000))\n    while True:\n"
               "        sock.sendall(b' ')\n        time.sleep(0.1)",
    # a well-formed message whose fields have the wrong types
    "fields": "sock.sendall(_header(b'{\"sizes\":[],\"value\":{\"dict\":[[\"ok\",true],[\"hits\",7]]}}'))",
}


def _attack(name: str, marker: str) -> str:
    return (f"    _helper({marker!r})\n    sock = _reply_socket()\n    {ATTACKS[name]}\n"
            "    time.sleep(60)\n")


def _gone(marker: str, pids: tuple[int, ...] = ()) -> bool:
    """Neither a helper with `marker` nor any of `pids` is alive (a moment's grace to be reaped)."""
    for _ in range(50):
        if not processes_running(marker) and not any(processes.alive(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def quick(config):
    return dataclasses.replace(config, call_timeout=3.0)


def _module(body: str) -> dict[str, str]:
    return {"m": "import os, struct, time\n" + HOSTILE + "\n\ndef f():\n    return 1\n" + body}


# -- start-up: the reply to the import, straight on a Session ------------------------------------

@pytest.mark.parametrize("attack,kind", [("malformed", "protocol"), ("deep", "protocol"), ("huge", "protocol"),
                                         ("fields", "protocol"), ("trickle", "timeout")])
def test_a_hostile_reply_at_start_up_is_the_childs_failure_and_the_child_is_killed(attack, kind, tmp_path):
    marker = f"replies-startup-{attack}-{os.getpid()}"
    top_level = _attack(attack, marker).replace("\n    ", "\n").lstrip()
    copy_submission(_module(top_level), str(tmp_path))
    start = time.monotonic()
    with Sandbox() as sb:
        session = sb.open(str(tmp_path), "m", import_timeout=3.0)
        assert session.ready.kind == kind, session.ready
        assert not session.alive
        session.close()
    assert time.monotonic() - start < 20
    assert _gone(marker, (session.pid,)), processes_running(marker)


def test_the_child_is_killed_when_the_parent_raises_during_start_up(tmp_path, monkeypatch):
    """Not the student's doing: the parent itself raising while reading the first reply."""
    copy_submission({"m": "def f():\n    return 1\n"}, str(tmp_path))
    pids = []
    real_init = runner.Session.__init__

    def init(self, pid, *args):
        pids.append(pid)
        real_init(self, pid, *args)

    def boom(reply):
        raise RuntimeError("the parent failed")
    monkeypatch.setattr(runner.Session, "__init__", init)
    monkeypatch.setattr(runner, "_outcome", boom)
    with Sandbox() as sb:
        with pytest.raises(RuntimeError, match="the parent failed"):
            sb.open(str(tmp_path), "m")
        assert pids and _gone("no marker", tuple(pids))


# -- during a call: the whole grade ---------------------------------------------------------------

def _graded(grade_dir, make_submission, body: str, cfg):
    source = "def causal_mask(T):\n    import os, struct, time\n" + body + HOSTILE
    start = time.monotonic()
    result = grade_dir(make_submission({"attention.causal_mask": source}), "attention", cfg=cfg)
    return result, time.monotonic() - start


@pytest.mark.parametrize("attack,status", [("malformed", "crashed"), ("deep", "crashed"), ("huge", "crashed"),
                                           ("fields", "crashed"), ("trickle", "timeout")])
def test_a_hostile_reply_to_a_call_fails_only_that_exercise(attack, status, grade_dir, make_submission, quick, request):
    if status == "timeout":
        request.getfixturevalue("short_grace")
    marker = f"replies-call-{attack}-{os.getpid()}"
    result, seconds = _graded(grade_dir, make_submission, _attack(attack, marker), quick)
    got = statuses(result)
    assert got["attention.causal_mask"] == status, got
    assert all(got[e] == "passed" for e in ATTENTION - {"attention.causal_mask"}), got
    assert not result.grader_faults
    assert seconds < 60            # two strikes of the start-up grace at most, and the other three
    assert _gone(marker), processes_running(marker)


def test_a_hostile_reply_at_import_is_no_grader_fault(grade_dir, make_submission, quick):
    """At import the module cannot be used as written: it is salvaged, and the fault is the student's."""
    marker = f"replies-import-{os.getpid()}"
    top = _attack("malformed", marker).replace("\n    ", "\n").lstrip()
    folder = make_submission()
    path = folder / "attention.py"
    path.write_text(path.read_text() + HOSTILE + "\n" + top)
    result = grade_dir(folder, "attention", cfg=quick)
    assert not result.grader_faults, statuses(result)
    assert any("does not import as written" in err for err in result.errors), result.errors
    assert _gone(marker), processes_running(marker)


def test_a_numpy_array_is_refused_with_what_to_return(grade_dir, make_submission, quick):
    source = "def causal_mask(T):\n    import numpy\n    return numpy.triu(numpy.ones((T, T), dtype=bool), 1)\n"
    result = grade_dir(make_submission({"attention.causal_mask": source}), "attention", cfg=quick)
    e = next(x for x in result.exercises if x.id == "attention.causal_mask")
    assert e.status.value == "error" and not result.grader_faults
    assert "numpy.ndarray" in e.cases[0].message and "return a torch.Tensor" in e.cases[0].message
