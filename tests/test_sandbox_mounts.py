"""The child's private mount view (grader.sandbox.mounts): /tmp is hidden, except what the child
may read that lives beneath it — a clone of the course in /tmp with its .venv must still import
Python's packages in the child (a fresh-clone CI run in /tmp lost `.venv/bin/python` before)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile

import pytest

from grader.sandbox import mounts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root (as in CI)")


def _in_child(fn) -> dict:
    """Run fn() in a forked process (it enters a namespace of its own); its dict comes back."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = fn()
        except BaseException as e:                    # noqa: BLE001 - reported to the parent
            out = {"error": repr(e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def test_what_the_child_may_read_beneath_tmp_stays_and_nothing_else():
    base = tempfile.mkdtemp(prefix="mounts-", dir="/tmp")
    venv = os.path.join(base, ".venv", "lib", "site-packages")
    os.makedirs(venv)
    with open(os.path.join(venv, "mod.py"), "w") as f:
        f.write("VALUE = 1\n")
    with open(os.path.join(base, "solutions.py"), "w") as f:    # beside the venv: not readable
        f.write("secret\n")
    sock_path = os.path.join(base, "host.sock")
    host = socket.socket(socket.AF_UNIX)
    host.bind(sock_path)
    work = tempfile.mkdtemp(prefix="work-", dir="/tmp")
    with open(os.path.join(work, "attention.py"), "w") as f:
        f.write("x = 1\n")

    def look():
        notes = mounts.private_view(work, 65000, 8 << 20, read_paths=[os.path.dirname(venv), venv, "/usr"])
        writable = True
        try:
            open(os.path.join(venv, "new.py"), "w").close()
        except OSError:
            writable = False
        return {"notes": notes, "mod": os.path.exists(os.path.join(venv, "mod.py")),
                "solutions": os.path.exists(os.path.join(base, "solutions.py")),
                "socket": os.path.exists(sock_path), "work": sorted(os.listdir(work)),
                "writable": writable}

    try:
        seen = _in_child(look)
    finally:
        host.close()
        shutil.rmtree(base)
        shutil.rmtree(work)
    assert "error" not in seen, seen
    assert seen["mod"], seen                       # the packages beneath /tmp are still there
    assert not seen["solutions"] and not seen["socket"], seen     # the rest of /tmp is not
    assert seen["work"] == ["attention.py"] and not seen["writable"], seen
    assert not [n for n in seen["notes"] if "/tmp" in n], seen["notes"]


def test_a_read_path_that_is_the_whole_folder_keeps_it_and_says_so():
    assert mounts._beneath("/tmp", ["/tmp", "/tmp/a/b", "/usr"]) == ["/tmp"]
    assert mounts._beneath("/tmp", ["/tmp/a", "/tmp/a/b", "/tmpx", "/tmp/c"]) == ["/tmp/a", "/tmp/c"]

    work = tempfile.mkdtemp(prefix="work-", dir="/var/tmp")
    try:
        notes = _in_child(lambda: {"notes": mounts.private_view(work, 65000, 8 << 20, read_paths=["/tmp"])})["notes"]
    finally:
        shutil.rmtree(work)
    assert "no private /tmp (Python or its packages live there)" in notes, notes
