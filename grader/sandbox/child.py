"""The sandboxed side: imports the student's module and calls its functions on request.

Runs in a process forked from the zygote (grader.sandbox.zygote). Everything it sends back
is data in the wire format; nothing it says decides a grade by itself.
"""
from __future__ import annotations

import importlib
import importlib.abc
import inspect
import io
import os
import socket
import sys
import time
import traceback
from typing import Any

import torch

from grader import threads
from grader.sandbox import absent_modules, tripwires, wire
from grader.sandbox.substitutes import recorded
from grader.sandbox.confine import confine


def _student_traceback(exc: BaseException, workdir: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(workdir)]
    lines = []
    for f in frames[-6:]:
        lines.append(f"  {os.path.relpath(f.filename, workdir)}, line {f.lineno}, in {f.name}")
        if f.line:
            lines.append(f"    {f.line.strip()}")
    return "\n".join(lines)


def _error(exc: BaseException, workdir: str) -> dict[str, Any]:
    msg = str(exc)
    if len(msg) > 2000:
        msg = msg[:2000] + " ..."
    return {"type": type(exc).__name__, "message": msg, "traceback": _student_traceback(exc, workdir)}


def _snapshot(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, (list, tuple)):
        return [_snapshot(v) for v in x]
    if isinstance(x, dict):
        return {k: _snapshot(v) for k, v in x.items()}
    return None


def _changed(before: Any, after: Any) -> bool:
    if isinstance(before, torch.Tensor):
        return not isinstance(after, torch.Tensor) or after.shape != before.shape or not torch.equal(
            torch.nan_to_num(after.detach()), torch.nan_to_num(before))
    if isinstance(before, list):
        return not isinstance(after, (list, tuple)) or len(after) != len(before) or any(
            _changed(b, a) for b, a in zip(before, after))
    if isinstance(before, dict):
        return not isinstance(after, dict) or any(_changed(v, after.get(k)) for k, v in before.items())
    return False


# The only grader code a child may import (see grader.sandbox.trusted): substitutes and drivers
# of the trusted package, and the timing driver of a performance check's child.
TRUSTED_PREFIXES = ("grader.sandbox.trusted.", "grader.timing.driver:")


def _load(ref: str) -> Any:
    if not ref.startswith(TRUSTED_PREFIXES):
        raise ImportError(f"{ref} is not trusted code: a child imports only {', '.join(TRUSTED_PREFIXES)}")
    mod, _, name = ref.partition(":")
    return getattr(importlib.import_module(mod), name)


class _SealedGrader(importlib.abc.MetaPathFinder):
    """Refuses every grader module not imported before the student's code runs, whatever finder
    (sys.path, an editable install's finder, the package's __path__) would have found it.
    Defence in depth: the student's own code could remove it; Landlock, which does not let the
    child read the grader package at all, is what holds (grader.sandbox.provision.read_paths)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if (name == "grader" or name.startswith("grader.")) and name not in sys.modules:
            raise ModuleNotFoundError(f"No module named {name!r}: the grader's own modules are not "
                                      "available to submitted code", name=name)
        return None


def _staged(staged: dict[str, Any] | None) -> dict[str, bytes] | None:
    """The files the parent staged for this child (grader.sandbox.provision.Staged), by their names in
    its working folder, read before it is confined; None: the folder holds them already."""
    if not staged:
        return None
    files = {}
    for name, kept in staged["files"]:
        with open(os.path.join(staged["folder"], kept), "rb") as f:
            files[name] = f.read()
    return files


def serve(sock: socket.socket, setup: dict[str, Any]) -> None:
    workdir = setup["workdir"]
    # Trusted code the child needs is imported before the path is narrowed to the student's folder.
    substitutes = {name: _load(ref) for name, ref in setup.get("substitutes", {}).items()}
    driver = _load(setup["driver"]) if setup.get("driver") else None
    notes = confine(workdir, int(setup["memory_bytes"]), int(setup.get("file_bytes", 64 << 20)),
                    setup.get("uid"), bool(setup.get("isolate_network", True)),
                    setup.get("read_paths", []), bool(setup.get("keep_read_cap", True)),
                    setup.get("cgroup_procs", []), setup.get("cgroup_missing", []),
                    int(setup.get("folder_bytes", 256 << 20)), _staged(setup.get("staged")),
                    bool(setup.get("processes", True)))
    os.chdir(workdir)
    sys.path[:] = [workdir] + [p for p in sys.path if p and os.path.isdir(p)
                                and not os.path.exists(os.path.join(p, "solutions"))
                                and not os.path.exists(os.path.join(p, "grader", "catalog"))]
    sys.meta_path.insert(0, _SealedGrader())
    threads.configure(int(setup.get("threads", 1)))
    torch.default_generator.manual_seed(0)    # the devices' lazy seeds (0) were queued by the zygote (_warm)
    hits = tripwires.Hits()
    rules = setup.get("forbidden", [])
    tripwires.install(rules, hits)   # for the life of this process: nothing to restore
    try:
        module, absent = absent_modules.imported(setup["module"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import are student errors too
        sys.stdout.flush()
        wire.send(sock, {"ready": False, "error": _error(exc, workdir), "hits": hits.items, "notes": notes})
        return
    # What the module's top level called is said, not charged with the calls: a notebook's last
    # cell often checks the student's answer against PyTorch's own function. A copy it made of a
    # forbidden function's code is charged (grader.sandbox.tripped_code): it is there to be called.
    at_import, hits.items = [h for h in hits.items if h not in hits.lasting], list(hits.lasting)
    called: set[str] = set()
    for name, fn in substitutes.items():
        setattr(module, name, recorded(name, fn, called, getattr(module, name, None)))
    wire.send(sock, {"ready": True, "notes": notes, "hits": at_import, "absent": absent,
                     "functions": sorted(n for n in dir(module) if callable(getattr(module, n, None)))})
    while True:
        try:
            req = wire.recv(sock)
            if req.get("op") != "call":
                return
            args, kwargs = wire.recv(sock)      # the call's arguments follow it (wire.arguments)
        except EOFError:
            return
        called.clear()
        reply = _call(module, req, args, kwargs, rules, hits, driver, workdir)
        reply["substitutes_called"] = sorted(called)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        try:        # encoded whole before a byte is sent: a failure leaves nothing half-written
            wire.send(sock, reply)
        except BaseException as e:  # anything the student returned that cannot travel: their error
            why = str(e) if isinstance(e, wire.WireError) else \
                f"encoding the value your function returned raised {type(e).__name__}"
            wire.send(sock, {"ok": False, "hits": hits.items, "substitutes_called": sorted(called),
                             "error": {"type": "UnsendableResult", "message": why, "traceback": ""}})


def _call(module, req, args, kwargs, rules, hits, driver, workdir) -> dict[str, Any]:
    name = req["function"]
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        return {"ok": False, "missing": True, "hits": hits.items,
                "error": {"type": "MissingFunction", "message": name, "traceback": ""}}
    before = [_snapshot(a) for a in args], {k: _snapshot(v) for k, v in kwargs.items()}
    watch = tripwires.AtenWatch(rules, hits) if any(r.get("aten") for r in rules) else None
    start = time.perf_counter()
    try:
        if watch is not None:
            watch.__enter__()
        try:
            if driver is not None and not req.get("plain"):
                value = driver(module, name, *args, **kwargs)
            else:
                value = fn(*args, **kwargs)
        finally:
            if watch is not None:
                watch.__exit__(None, None, None)
    except BaseException as exc:
        return {"ok": False, "hits": hits.items, "error": _error(exc, workdir),
                "seconds": time.perf_counter() - start}
    seconds = time.perf_counter() - start
    return {"ok": True, "value": value, "hits": hits.items, "modified": modified_inputs(fn, before, args, kwargs),
            "seconds": seconds}


def modified_inputs(fn: Any, before: tuple[list, dict], args: tuple, kwargs: dict) -> list[str]:
    """The inputs a call of `fn` changed in place (`before`: their snapshots), as the report names them."""
    return ([_argument(fn, i) for i, (b, a) in enumerate(zip(before[0], args)) if _changed(b, a)]
            + [k for k, b in before[1].items() if _changed(b, kwargs[k])])


def _argument(fn: Any, i: int) -> str:
    """How the report names positional argument `i` (from 0) of the student's function: its
    parameter's name where it has one ("Q"), else its position ("argument 3")."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
        return params[i].name[:40]
    return f"argument {i + 1}"


def main(sock_fd: int, out_fd: int, setup: dict[str, Any]) -> None:
    """Entry point after fork; never returns."""
    code = 0
    try:
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(out_fd)
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", 0), write_through=True)
        sock = socket.socket(fileno=sock_fd)
        serve(sock, setup)
    except BaseException:
        code = 3
    finally:
        os._exit(code)
