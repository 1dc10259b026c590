"""The parent's handle on the sandbox: a warm zygote, and one confined child per exercise.

    with Sandbox(limits) as sandbox:
        session = sandbox.open(workdir, "attention", forbidden=[...], substitutes={...})
        outcome = session.call("causal_mask", (4,), {}, timeout=10)
        session.close()

A session's child is killed (SIGTERM, then SIGKILL, its whole process group and, when the
grader runs as root, every process of the child's private uid) on timeout and on close.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable

from grader.sandbox import breakpoints, budgets, cgroups, launch, native_watch, processes, provision, uids, wire
from grader.sandbox.drain import Drain
from grader.sandbox.replies import Outcome
from grader.sandbox.replies import outcome as _outcome


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 2 << 30
    output_bytes: int = 64 << 10
    file_bytes: int = 64 << 20
    folder_bytes: int = 256 << 20       # the working folder's size (a tmpfs, as root), /dev/shm's too
    threads: int = 1
    isolate_network: bool = True
    max_message: int = 256 << 20


class SandboxError(Exception):
    """The sandbox itself could not start (not the student's fault)."""


class Sandbox:
    def __init__(self, limits: Limits | None = None, tripwires: Iterable[tuple[str, str]] = ()) -> None:
        """`tripwires`: the (rule, dotted target) pairs the children may install, made once in the zygote."""
        self.limits = limits or Limits()
        self._tripwires = sorted(set(tripwires))
        self._zygote: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._seen = breakpoints.Seen()
        self._lock = threading.Lock()
        self._budgets = budgets.Budgets(self.limits.memory_bytes)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def start(self) -> None:
        if self._zygote is not None:
            if self._zygote.poll() is None:
                return
            self.shutdown()           # it died (killed from outside): collected, its socket closed
        cgroups.remove_stale()        # groups of graders killed from outside
        provision.remove_stale_workdirs()   # what a grader killed from outside left behind
        # one launched early (before this process imported torch) if there is one, else a new one
        self._zygote, self._control = launch.take(self.limits.threads) or launch.launch(self.limits.threads)
        self._seen = breakpoints.Seen()     # the native watch's breakpoints read in this zygote (native_watch.place)
        line = self._zygote.stdout.readline()
        if line.strip() != b"ready":
            raise SandboxError("the sandbox process failed to start (is torch importable in this Python?)")
        if self._tripwires:         # before any request: grader.sandbox.zygote
            payload = json.dumps({"tripwires": self._tripwires}).encode()
            self._control.sendall(struct.pack(">I", len(payload)) + payload)

    def shutdown(self) -> None:
        """The zygote ended and collected (grader.sandbox.launch.end)."""
        if self._zygote is not None:
            launch.end(self._zygote, self._control)
            self._zygote = self._control = None

    def open(self, workdir: str, module: str, *, forbidden: list[dict[str, Any]] = (),
             substitutes: dict[str, str] | None = None, driver: str | None = None,
             import_timeout: float = 10.0, submission: str = "", count_kernels: bool = False,
             staged: tuple[str, list[list[str]]] | None = None, processes: bool = True) -> "Session":
        """A child with `module` imported; `submission` names the submission it belongs to, whose
        children share one memory budget (grader.sandbox.budgets); `count_kernels`: the kernel counts
        the forbidden rules' native kernels during each call (grader.sandbox.native_watch); `staged`:
        (folder, [name in workdir, name there]) of the files the child copies into its empty `workdir`
        itself (grader.sandbox.provision.Staged), where without it `workdir` holds them already;
        `processes`: whether the child may start processes (threads it may; grader.sandbox.syscall_filter)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        private = uids.reserve() if os.geteuid() == 0 else None
        uid = private.uid if private else None
        if private:
            provision.chown_tree(workdir, uid)
        within = self._budgets.enter(submission) if submission and uid is not None else ""
        group = cgroups.for_child(f"{within}grader-{os.getpid()}-{uid}", self.limits.memory_bytes) \
            if uid is not None else None
        watch, unwatched = native_watch.open_watch(list(forbidden), group.dirs.get("all") if group else None) \
            if count_kernels else (None, "")
        procs = (group.procs if group else []) + native_watch.procs_to_join(watch)
        modes = provision.Modes()
        read_paths = provision.read_paths(modes)
        setup = {"read_paths": read_paths, "keep_read_cap": not provision.world_readable(read_paths, modes),
                 "workdir": workdir, "module": module, "forbidden": list(forbidden),
                 "substitutes": dict(substitutes or {}), "driver": driver, "memory_bytes": self.limits.memory_bytes,
                 "file_bytes": self.limits.file_bytes, "folder_bytes": self.limits.folder_bytes,
                 "threads": self.limits.threads, "uid": uid, "processes": processes,
                 "isolate_network": self.limits.isolate_network, "cgroup_procs": procs,
                 "cgroup_missing": cgroups.missing_controllers(group) if uid is not None else [],
                 "staged": {"folder": staged[0], "files": staged[1]} if staged else None}
        payload = json.dumps(setup).encode()
        try:
            with self._lock:
                self.start()
                if watch is not None:       # the zygote's breakpoints, as its children copy them
                    unwatched = native_watch.place(watch, self._zygote.pid, self._seen) or unwatched
                socket.send_fds(self._control, [struct.pack(">I", len(payload)) + payload],
                                [theirs.fileno(), out_w])
                pid = struct.unpack(">I", self._control.recv(4))[0]
        except BaseException:
            if watch is not None:
                watch.close()
            if private:
                private.end()
            raise
        theirs.close()
        os.close(out_w)
        return Session(pid, private, ours, out_r, self.limits, import_timeout, group, watch, unwatched,
                       (self._budgets, submission) if within else None)


class Session:
    """One confined child with the student's module imported."""

    def __init__(self, pid: int, private: uids.PrivateUid | None, sock: socket.socket, out_fd: int,
                 limits: Limits, import_timeout: float, group: cgroups.Group | None = None,
                 watch: native_watch.Watch | None = None, unwatched: str = "",
                 budget: tuple[budgets.Budgets, str] | None = None) -> None:
        self.pid, self.private, self.sock, self.limits, self.group = pid, private, sock, limits, group
        self.budget = budget    # (the submissions' budgets, this one's key): left when the child's group goes
        self.watch = watch      # the kernel's count of forbidden kernels (None: not counted, `unwatched` says why)
        self._kernels, self._final = (watch.kernels if watch else []), [0] * len(watch.kernels if watch else [])
        self.drain = Drain(out_fd, limits.output_bytes)
        self.drain.start()
        self.alive = True
        try:
            self.ready = self._receive(import_timeout)
        except BaseException:   # whatever went wrong in the parent, no child outlives it
            self.kill()
            raise
        if self.ready.kind != "ok":
            self.kill()         # a child whose import failed has said so and ended: no calls to it
        elif watch is not None and not native_watch.joined(watch, pid, group.dirs.get("all")):
            self._unwatch()
            unwatched = "the child is not in its perf_event control group"
        if unwatched and self.ready.kind == "ok":
            self.ready.detail = "; ".join(filter(None, (self.ready.detail, f"no kernel count of forbidden "
                                                                              f"kernels ({unwatched})")))

    # -- calls ---------------------------------------------------------------------------
    def call(self, function: str, args: tuple = (), kwargs: dict | None = None, *,
             timeout: float = 10.0, plain: bool = False, encoded: bytes | None = None) -> Outcome:
        """Call `function` (through the session's driver unless `plain`) with a wall-time limit.
        `encoded`: wire.arguments(args, kwargs), made earlier (kept with the cases), sent as it is."""
        if not self.alive:
            return Outcome("crashed")     # no call to a stopped child
        encoded = wire.arguments(args, kwargs) if encoded is None else encoded
        if self.watch is None:
            return self._call(function, encoded, timeout, plain)
        counts = self.watch.read()
        outcome = self._call(function, encoded, timeout, plain)
        after = self.watch.read() if self.watch is not None else self._final   # counted, teardown included
        outcome.hits = outcome.hits + native_watch.hits(self._kernels, counts, after)
        return outcome

    def _call(self, function: str, encoded: bytes, timeout: float, plain: bool) -> Outcome:
        start = time.monotonic()
        try:
            self.sock.settimeout(max(timeout, 0.01))
            wire.send(self.sock, {"op": "call", "function": function, "plain": plain}, encoded)   # then its arguments
        except socket.timeout:      # a child that stopped reading: the call's time runs all the same
            self.kill()
            return Outcome("timeout", seconds=time.monotonic() - start)
        except OSError:
            return self._died()
        return self._receive(timeout - (time.monotonic() - start), start)

    def _receive(self, timeout: float, start: float | None = None) -> Outcome:
        """The child's next reply, all of it in by `start + timeout` (wall clock), as an Outcome.
        Whatever the bytes are, a reply that is not one is the child's failure ("protocol")."""
        start = time.monotonic() if start is None else start
        try:
            return _outcome(wire.recv(self.sock, self.limits.max_message, timeout=max(timeout, 0.01)))
        except socket.timeout:
            self.kill()
            return Outcome("timeout", seconds=time.monotonic() - start)
        except (EOFError, OSError):
            return self._died()
        except wire.WireError as e:
            self.kill()
            return Outcome("protocol", detail=str(e))

    def _died(self) -> Outcome:
        limit = budgets.limit_hit(self.group, self.budget, self.limits.memory_bytes)   # before the group goes
        self.kill()
        return Outcome("crashed", detail=limit)

    # -- teardown ------------------------------------------------------------------------
    def kill(self) -> str:
        """Stop the child and everything it started; returns how it ended, in words."""
        if not self.alive:
            return "stopped"
        self.alive = False
        try:
            self.sock.close()
        except OSError:
            pass
        for sig, wait in ((signal.SIGTERM, 0.2), (signal.SIGKILL, 0.0)):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            processes.wait_gone(self.pid, wait)
        if self.group is not None:       # every member at once: frozen processes cannot fork
            self._remove_group()
        if self.private is not None:
            self.private.end()
        self._unwatch()
        return "stopped"

    def _unwatch(self) -> None:
        """Keep the last counts (a call cut short by a kill still reports them) and close the counters."""
        if self.watch is not None:
            self._final = self.watch.read()
            self.watch.close()
            self.watch = None

    def close(self) -> None:
        if self.alive:
            try:
                wire.send(self.sock, {"op": "exit"})
            except OSError:
                pass
            self.kill()
        if self.group is not None:
            self._remove_group()
        self.drain.join(timeout=2.0)

    def _remove_group(self) -> None:
        """Remove the child's group, its members killed. Members that outlived every round of the kill
        (a process stuck in the kernel, say) are named on the grader's standard error and the group is
        kept: close() tries again, and a grader started after this one has ended removes it
        (cgroups.remove_stale)."""
        left = list(self.group.dirs.values())
        if not self.group.remove():
            sys.stderr.write(f"grader: processes {self.group.members()} of a sandboxed child outlived "
                             f"{cgroups.KILL_SECONDS:.0f} s of kills; its control group is kept "
                             f"({', '.join(left)}) for a later grader start to remove\n")
        self._leave_budget()

    def _leave_budget(self) -> None:
        if self.budget is not None:
            budget, self.budget = self.budget, None
            budget[0].leave(budget[1])

    @property
    def output(self) -> tuple[str, bool]:
        text = bytes(self.drain.data).decode("utf-8", "replace")
        return text, self.drain.total > len(self.drain.data)

    @property
    def output_total(self) -> int:
        return self.drain.total
