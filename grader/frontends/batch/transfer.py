"""A submission as content, for a worker that cannot see the client's files (grader batch --scheduler).

    packed = pack(path)                 # on the client: plain data (bytes, names, sizes), nothing to run
    with unpacked(packed) as where:     # on the worker: the same submission at `where`, a private folder
        api.grade(where, ...)

A .zip, .py or .ipynb travels whole. A folder travels as what the loader (grader.submission.loader)
looks at, which is its top level: the first MAX_FILES names, sorted; the bytes of its .py and
.ipynb files up to the size the loader reads; every other entry as its name, kind and size only
(a file is rebuilt sparse, a folder empty), so listings, size checks and messages come out the same.
A symbolic link stays a link, to nowhere: the loader follows none (it names each), so its target
is never read here either.

The worker's folder keeps the submission's own name (attention.ipynb stays attention.ipynb), and
relabel() turns the worker's path back into the client's in the result, so a row graded on a
cluster is the row the local pool writes. Nothing here imports or runs what it carries.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Any, Iterator

from grader.frontends.batch.discover import SOURCE_SUFFIXES
from grader.sandbox.provision import make_workdir
from grader.submission.limits import MAX_FILE, MAX_FILES
from grader.submission.notebook import MAX_NOTEBOOK

MAX_TRANSFER = 256 << 20        # bytes of one packed submission; beyond it, --shared-fs


class TransferError(Exception):
    """A submission too large to send as content (the message says what to do instead)."""


def pack(path: str) -> dict[str, Any]:
    """The content of the submission at `path` (raises TransferError when too large)."""
    name = os.path.basename(os.path.normpath(path))
    if not os.path.isdir(path):
        size = os.path.getsize(path)
        _check_size(path, size)
        with open(path, "rb") as f:
            return {"name": name, "file": f.read()}
    entries, total = [], 0
    for entry in sorted(os.listdir(path))[:MAX_FILES]:
        item = _entry(os.path.join(path, entry), entry)
        total += len(item.get("data") or b"")
        _check_size(path, total)
        entries.append(item)
    return {"name": name, "entries": entries}


def _check_size(path: str, size: int) -> None:
    if size > MAX_TRANSFER:
        raise TransferError(f"{path}: {size >> 20} MiB, too large to send to the cluster's workers "
                            f"(at most {MAX_TRANSFER >> 20} MiB); grade with --shared-fs (every worker reads "
                            "the submissions where they are) or with the local pool (no --scheduler/--cluster)")


def _readable_size(name: str) -> int:
    """The largest file of this name the loader reads (0: it never reads one)."""
    if name.endswith(".ipynb"):
        return MAX_NOTEBOOK
    return MAX_FILE if name.endswith(SOURCE_SUFFIXES) else 0


def _entry(full: str, name: str) -> dict[str, Any]:
    if os.path.islink(full):
        return {"name": name, "kind": "link"}
    if os.path.isdir(full):
        return {"name": name, "kind": "dir"}
    if os.path.isfile(full):
        return {"name": name, "kind": "file", "data": _source_bytes(full, name), "size": _size(full)}
    return {"name": name, "kind": "other"}       # a socket or fifo: the loader passes over it


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _source_bytes(path: str, name: str) -> bytes | None:
    """A source file's bytes when the loader would read them; None: it goes by name and size only."""
    if _size(path) > _readable_size(name):
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


@contextmanager
def unpacked(packed: dict[str, Any]) -> Iterator[str]:
    """The packed submission written to a private temporary folder; its path, removed afterwards.
    The folder lies in the worker's own (grader.sandbox.provision): a worker killed mid-task leaves
    it behind, and the next grader on the machine removes it with the rest of that worker's."""
    root = make_workdir(prefix="grader-transfer-")
    try:
        os.mkdir(os.path.join(root, "s"), 0o700)
        where = os.path.join(root, "s", _safe(packed["name"]))
        if "file" in packed:
            _write(where, packed["file"], len(packed["file"]))
        else:
            os.mkdir(where, 0o700)
            for e in packed["entries"]:
                _rebuild(os.path.join(where, _safe(e["name"])), e)
        yield where
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _safe(name: str) -> str:
    """One path component, whatever the client sent."""
    name = os.path.basename(str(name))
    return name if name not in ("", ".", "..") else "_"


def _rebuild(path: str, e: dict[str, Any]) -> None:
    kind = e.get("kind")
    if kind == "dir":
        os.mkdir(path, 0o700)
    elif kind == "file":
        _write(path, e.get("data"), int(e.get("size", 0)))
    elif kind == "link":
        os.symlink(path, path)            # to itself: no file behind it, whatever else the folder holds
    else:
        _write(path, None, 0)


def _write(path: str, data: bytes | None, size: int) -> None:
    with open(path, "wb") as f:
        if data is not None:
            f.write(data)
        else:
            f.truncate(max(0, size))      # sparse: the size without the bytes


def relabel(value: Any, worker_path: str, client_path: str) -> Any:
    """`value` (a result as to_dict made it) with the worker's path of the submission replaced by
    the client's in every string: where the loader and the engine quote the path."""
    if isinstance(value, str):
        return value.replace(worker_path, client_path) if worker_path in value else value
    if isinstance(value, list):
        return [relabel(v, worker_path, client_path) for v in value]
    if isinstance(value, dict):
        return {k: relabel(v, worker_path, client_path) for k, v in value.items()}
    return value
