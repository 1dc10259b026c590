"""What travels to a cluster worker (grader.frontends.batch.transfer): a submission packed on the client
and unpacked on the worker reads, through the real loader, as the original does, its paths relabelled
back to the client's; nothing but plain data travels; too large a submission is refused with the fix."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, SOLUTIONS
from grader.frontends.batch import transfer
from grader.frontends.batch.transfer import TransferError, pack, relabel, unpacked
from grader.sandbox import provision
from grader.submission.loader import SubmissionError, load_submission
from grader.submission.limits import MAX_FILE


def loaded(path):
    try:
        s = load_submission(str(path))
    except SubmissionError as e:
        return ("error", str(e))
    return (s.files, s.origin, s.problems)


def same_as_original(path):
    """The loader's view of `path`, and of its packed copy with the copy's path put back."""
    packed = pack(str(path))
    assert set(pickle.loads(pickle.dumps(packed))) <= {"name", "file", "entries"}
    with unpacked(pickle.loads(pickle.dumps(packed))) as copy:
        assert os.path.basename(copy) == os.path.basename(str(path))
        there = relabel(json.loads(json.dumps(loaded(copy))), copy, str(path))
    assert not os.path.exists(copy), "the worker's copy outlived its task"
    return json.loads(json.dumps(loaded(path))), there


def test_a_folder_reads_the_same_with_notebooks_links_big_and_odd_files(tmp_path):
    sub = tmp_path / "alice"
    sub.mkdir()
    (sub / "attention.py").write_text((SOLUTIONS / "attention.py").read_text())
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": "def f():\n    return 1\n",
                           "outputs": [], "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "elsewhere.ipynb").write_text(json.dumps(notebook))
    os.symlink(tmp_path / "elsewhere.ipynb", sub / "linked.ipynb")          # the loader follows no link,
    os.symlink(SOLUTIONS / "mlp.py", sub / "mlp.py")                         # notebook or module
    os.symlink(tmp_path / "missing.py", sub / "dangling.py")
    (sub / "huge.py").write_bytes(b"#" * (MAX_FILE + 10))                    # refused by size, whole or not
    (sub / "data.bin").write_bytes(os.urandom(1 << 16))
    (sub / "helpers").mkdir()
    (sub / "helpers" / "deep.py").write_text("x = 1\n")
    local, remote = same_as_original(sub)
    assert local == remote
    assert local[0] == "error" and "huge.py" in local[1]                     # the whole folder refused, as locally
    (sub / "huge.py").unlink()
    local, remote = same_as_original(sub)
    assert local == remote and set(local[0]) == {"attention"}
    assert {"linked.ipynb", "mlp.py"} <= {p.split(":")[0] for p in local[2]}, local
    assert len(pack(str(sub))["entries"]) == len(os.listdir(sub))
    sizes = {e["name"]: len(e.get("data") or b"") for e in pack(str(sub))["entries"]}
    assert sizes["data.bin"] == 0, "a file the loader never reads travels as its size only"


def test_zips_notebooks_and_empty_folders_read_the_same(tmp_path):
    good = tmp_path / "bob.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("bob/attention.py", (SOLUTIONS / "attention.py").read_text())
    bad = tmp_path / "carol.zip"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    empty = tmp_path / "dave"
    empty.mkdir()
    single = tmp_path / "attention.ipynb"
    single.write_text('{"cells": [ broken')
    for path in (good, bad, empty, single):
        local, remote = same_as_original(path)
        assert local == remote, path


def test_relabel_reaches_every_string_and_nothing_else():
    data = {"submission": "/w/x/alice", "errors": ["/w/x/alice: no .py modules found"], "n": 3,
            "exercises": [{"source_file": "/w/x/alice/attention.py", "cases": [{"output": "ok"}]}]}
    out = relabel(data, "/w/x/alice", "subs/alice")
    assert out == {"submission": "subs/alice", "errors": ["subs/alice: no .py modules found"], "n": 3,
                   "exercises": [{"source_file": "subs/alice/attention.py", "cases": [{"output": "ok"}]}]}


def test_names_from_the_client_cannot_leave_the_workers_folder():
    packed = {"name": "../../escape", "entries": [{"name": "../../../etc/evil.py", "kind": "file", "data": b"x",
                                                   "size": 1}]}
    with unpacked(packed) as copy:
        root = os.path.dirname(os.path.dirname(copy))
        assert os.path.realpath(copy).startswith(os.path.realpath(root))
        assert os.listdir(copy) == ["evil.py"]


def test_too_large_a_submission_is_refused_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "MAX_TRANSFER", 1000)
    sub = tmp_path / "erin"
    sub.mkdir()
    (sub / "attention.py").write_text("#" * 2000)
    with pytest.raises(TransferError, match="--shared-fs"):
        pack(str(sub))


def test_a_worker_killed_mid_task_leaves_its_copy_for_the_next_grader_to_remove(tmp_path):
    """unpacked's folder lies in the process's own folder (grader.sandbox.provision): a worker
    killed with SIGKILL mid-task cannot remove it, and the next grader's sweep does."""
    sub = tmp_path / "alice"
    sub.mkdir()
    (sub / "attention.py").write_text("x = 1\n")
    code = (f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
            "from grader.frontends.batch.transfer import pack, unpacked\n"
            f"with unpacked(pack({str(sub)!r})) as where:\n    print(where, flush=True); time.sleep(120)\n")
    worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        where = worker.stdout.readline().strip()
        assert os.path.isfile(os.path.join(where, "attention.py"))
    finally:
        worker.kill()
        worker.wait()
    assert os.path.isdir(where), "the kill removed the copy: nothing tested"
    provision.remove_stale_workdirs()
    assert not os.path.exists(where)
