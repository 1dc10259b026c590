"""Issue 18: a submission's files are staged once for all of its children (grader.sandbox.provision
.Staged); each child copies those it gets into its own working folder (grader.sandbox.mounts).

- a child sees in its folder exactly what it saw when the parent copied the files into it: the same
  names, the same bytes, the bytecode of its import closure and none other; the folder on the host
  stays empty while it runs;
- the parent writes each file once a submission, a changed source (a salvaged module) as a file of
  its own, and nothing is left behind once the submission is graded;
- where the child has no private working folder (no mount namespace, or no tmpfs over the folder),
  it writes the files into the folder on disk itself, owned by its private uid, as the parent did;
- where children get no private uid (a grader not run as root), which could write a staged file
  that later children read, the parent writes each child's files into its folder, as before.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import sys

import pytest

from conftest import ROOT, sandbox_folders_of
from grader.catalog import select
from grader.pipeline import static
from grader.pipeline.context import Context
from grader.pipeline.engine import grade
from grader.sandbox import bytecode, mounts
from grader.sandbox.provision import Staged, copy_submission, make_workdir, remove_workdir
from grader.submission.loader import load_submission

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a private uid and mount namespace need root (as in CI)")

LISTER = '''import hashlib, os
import helper


def listing():
    """Every file in the working folder (and its subfolders): its bytes' hash and its owner."""
    out = {}
    for folder, _, names in os.walk("."):
        for name in names:
            path = os.path.join(folder, name)[2:]
            with open(path, "rb") as f:
                out[path] = [hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_uid == os.getuid()]
    return out
'''
FILES = {"lister": LISTER, "helper": "VALUE = 1\n", "unrelated": "def g():\n    return 2\n"}


def _listing(sandbox, workdir: str, **open_args) -> dict:
    session = sandbox.open(workdir, "lister", import_timeout=60, **open_args)
    try:
        assert session.ready.kind == "ok", session.ready
        reply = session.call("listing", (), {}, timeout=60)
        assert reply.kind == "ok", reply
        return reply.value
    finally:
        session.close()


def test_a_child_sees_the_files_it_saw_when_the_parent_copied_them(sandbox):
    closure = static.import_closure("lister", FILES)
    assert set(closure) == {"lister", "helper"}
    copied, empty, staged = make_workdir(), make_workdir(), Staged()
    try:
        copy_submission(FILES, copied, closure)
        before = _listing(sandbox, copied)
        after = _listing(sandbox, empty, staged=staged.for_child(FILES, closure))
        assert after == before
        assert set(after) == {"lister.py", "helper.py", "unrelated.py", bytecode.beside("lister"),
                              bytecode.beside("helper")}
        assert os.listdir(empty) == []          # the copies were the child's own
    finally:
        for folder in (copied, empty):
            remove_workdir(folder)
        staged.remove()


def test_each_file_is_written_once_a_submission_and_removed_with_it():
    staged = Staged()
    try:
        folder, pairs = staged.for_child(FILES, ["lister"])
        first = {name: os.stat(os.path.join(folder, kept)).st_mtime_ns for name, kept in pairs}
        kept_files = sorted(os.listdir(folder))
        assert len(kept_files) == len(FILES) + 1            # the sources, and the one module's bytecode
        again, pairs_again = staged.for_child(FILES, ["lister"])
        assert again == folder and pairs_again == pairs and sorted(os.listdir(folder)) == kept_files
        assert {name: os.stat(os.path.join(folder, kept)).st_mtime_ns for name, kept in pairs} == first
        salvaged = {**FILES, "helper": "VALUE = 2\n"}       # the same module, other bytes: a file of its own
        _, pairs_salvaged = staged.for_child(salvaged, [])
        kept = dict(pairs_salvaged)["helper.py"]
        with open(os.path.join(folder, kept)) as f:
            assert f.read() == "VALUE = 2\n"
        assert kept != dict(pairs)["helper.py"] and len(os.listdir(folder)) == len(kept_files) + 1
    finally:
        staged.remove()
    assert not os.path.exists(folder)


def test_grading_leaves_no_staged_files_behind(sandbox, config):
    result = grade(str(ROOT / "solutions"), select(["attention.causal_mask", "activations.relu"]), config,
                   sandbox=sandbox)
    assert result.score == result.max_score
    left = [p for root in sandbox_folders_of(os.getpid()) for p in root.iterdir()]
    assert not [p for p in left if p.name.startswith("grader-files-")], left


def test_without_private_uids_each_child_gets_its_own_copy(sandbox, config, monkeypatch):
    ctx = Context(load_submission(str(ROOT / "solutions")), config, sandbox, 0.0)
    workdir, other = make_workdir(), make_workdir()
    try:
        monkeypatch.setattr(os, "geteuid", lambda: 1000)
        options = ctx.child_options(FILES, ["lister"], workdir)
        assert options["staged"] is None and ctx.staged.folder == ""
        assert sorted(os.listdir(workdir)) == [bytecode.FOLDER, "helper.py", "lister.py", "unrelated.py"]
        monkeypatch.undo()
        if os.geteuid() == 0:       # with private uids: staged, the folder left empty for the child
            assert ctx.child_options(FILES, ["lister"], other)["staged"][0] == ctx.staged.folder != ""
            assert os.listdir(other) == []
    finally:
        remove_workdir(workdir)
        remove_workdir(other)
        ctx.staged.remove()


class _NoTmpfsOver:
    """libc, but mounting a tmpfs over `folder` fails (a kernel or policy that refuses it)."""

    def __init__(self, libc, folder: str, refuse_namespace: bool) -> None:
        self._libc, self._folder, self._refuse = libc, folder.encode(), refuse_namespace

    def unshare(self, flags):
        return -1 if self._refuse else self._libc.unshare(flags)

    def mount(self, source, target, *rest):
        return -1 if target == self._folder else self._libc.mount(source, target, *rest)

    def __getattr__(self, name):
        return getattr(self._libc, name)


@root_only
@pytest.mark.parametrize("refuse_namespace", [True, False], ids=["no mount namespace", "no tmpfs over the folder"])
def test_without_a_private_folder_the_child_writes_the_files_into_the_folder_on_disk(refuse_namespace):
    import ctypes

    workdir, staged, uid = make_workdir(), Staged(), 65123
    os.chown(workdir, uid, uid)
    folder, pairs = staged.for_child(FILES, ["lister"])
    files = {}
    for name, kept in pairs:
        with open(os.path.join(folder, kept), "rb") as f:
            files[name] = f.read()
    r, w = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            libc = _NoTmpfsOver(ctypes.CDLL(None, use_errno=True), workdir, refuse_namespace)
            notes = mounts.private_view(workdir, uid, 8 << 20, libc, files=files)
            w.sendall(json.dumps({"notes": notes, "seen": _seen(workdir)}).encode())
        finally:
            os._exit(0)
    w.close()
    got = json.loads(r.makefile().read())
    os.waitpid(pid, 0)
    try:
        assert got["notes"] == (["no mount namespace (host sockets and temporary folders are visible)"]
                                if refuse_namespace else ["no size limit on the working folder"])
        expected = {name: [hashlib.sha256(data).hexdigest(), uid] for name, data in files.items()}
        assert got["seen"] == {**expected, bytecode.FOLDER: [None, uid]}
    finally:
        remove_workdir(workdir)
        staged.remove()


def _seen(workdir: str) -> dict:
    """What is in `workdir` as this process sees it: file -> [hash of its bytes, owner]; folder -> [None, owner]."""
    seen = {}
    for sub, folders, names in os.walk(workdir):
        for name in folders:
            seen[os.path.relpath(os.path.join(sub, name), workdir)] = [None, os.stat(os.path.join(sub, name)).st_uid]
        for name in names:
            path = os.path.join(sub, name)
            with open(path, "rb") as f:
                seen[os.path.relpath(path, workdir)] = [hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_uid]
    return seen

if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
