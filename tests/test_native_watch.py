"""The authoritative run-time check of forbidden APIs (grader.sandbox.native_watch): the parent counts,
through uprobe perf events on the child's control group, every entry into the native kernels a rule
names, so no route, thread or helper process of the child escapes it and nothing the child does can
undo it. Each attack below is a function of one module graded in one child under the SDPA rule.

As an ordinary user (or without the uprobe PMU) the counting tests are skipped and the fallback test
checks that the missing layer is named; the kernel-name tests run everywhere.
"""
from __future__ import annotations

import dataclasses
import os
import re
import resource
import shutil
import time

import pytest

import grader.catalog.rules as rules
from grader.catalog.spec import Forbidden
from grader.sandbox import breakpoints, kernel_symbols, native_watch, watch_slots
from grader.sandbox.provision import copy_submission, make_workdir

COUNTED = "counted by the operating system"
NEEDS_PROBES = pytest.mark.skipif(bool(native_watch.unavailable()), reason=native_watch.unavailable() or "")

ATTACKS = '''
import os, threading
import torch
import torch.nn.functional as F

Q = torch.randn(2, 3, 4)
F.scaled_dot_product_attention(Q, Q, Q)     # at import, outside every call: not counted


def by_hand(q):
    """Correct: scores, softmax, weighted sum. Must hold: no native hit."""
    w = torch.softmax(q @ q.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return w @ q


def aten_op(q):
    """Attack: torch.ops.aten by a built name (decomposed before any dispatch mode sees it)."""
    return getattr(torch.ops.aten, "scaled_dot_product_" + "attention")(q, q, q)


def unwrapped(q):
    """Attack: the untripped original, dug out of the tripwire's closure."""
    f = F.scaled_dot_product_attention
    return next(c.cell_contents for c in f.__closure__ if getattr(c.cell_contents, "__name__", "") == f.__name__
                and c.cell_contents is not f)(q, q, q)


def c_nn(q):
    """Attack: the C binding under torch.nn.functional."""
    return torch._C._nn.scaled_dot_product_attention(q, q, q)


def math_kernel(q):
    """Attack: the math kernel SDPA dispatches to, by its own operator."""
    return torch.ops.aten._scaled_dot_product_attention_math(q, q, q)[0]


def in_thread(q):
    """Attack: the call in a helper thread."""
    out = []
    t = threading.Thread(target=lambda: out.append(torch._C._nn.scaled_dot_product_attention(q, q, q)))
    t.start()
    t.join()
    return out[0]


def in_helper_process(q):
    """Attack: the call in a forked helper process, the answer sent back through a pipe."""
    r, w = os.pipe()
    if os.fork() == 0:
        out = torch._C._nn.scaled_dot_product_attention(q, q, q)
        os.write(w, out.numpy().tobytes())
        os._exit(0)
    os.close(w)
    data = b""
    while len(data) < q.numel() * 4:
        data += os.read(r, 1 << 16)
    os.wait()
    return torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(q.shape)
'''


def test_mangled_prefix_names_every_overload():
    assert kernel_symbols.mangled_prefix("at::native::softmax") == b"_ZN2at6native7softmaxE"
    assert kernel_symbols.mangled_prefix("at::native::structured_tanh_out::impl") == \
        b"_ZN2at6native19structured_tanh_out4implE"


def test_offsets_finds_every_overload_in_both_spellings():
    """One scan finds what a scan for each spelling finds: `_ZN<name>E...` and a const method's
    `_ZNK<name>E...`, defined functions only."""
    library = kernel_symbols.library()
    names, functions = kernel_symbols._symbols(library)
    const = _a_const_method(names, functions)
    for name in (const, "at::native::softmax", "at::native::structured_tanh_out::impl"):
        prefix = kernel_symbols.mangled_prefix(name)
        expected = {functions[at + 1] for spelling in (b"\0" + prefix, b"\0_ZNK" + prefix[3:])
                    for at in _every(names, spelling) if at + 1 in functions}
        assert expected and kernel_symbols.offsets(library, name) == tuple(sorted(expected)), name


def _every(haystack: bytes, needle: bytes) -> list[int]:
    found, at = [], haystack.find(needle)
    while at >= 0:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _a_const_method(names: bytes, functions: dict[int, int]) -> str:
    """The qualified name of a const method the library defines (a plain `_ZNK<len><part>...E` symbol)."""
    for at in _every(names, b"\0_ZNK"):
        i, parts = at + 5, []
        while names[i:i + 1].isdigit():
            j = i
            while names[j:j + 1].isdigit():
                j += 1
            size = int(names[i:j])
            parts.append(names[j:j + size].decode())
            i = j + size
        if len(parts) >= 2 and names[i:i + 1] == b"E" and at + 1 in functions:
            return "::".join(parts)
    raise AssertionError("no const method in the library")


def test_every_rule_kernel_is_in_this_torch():
    """A kernel a rule names that this build of torch lacks would be a silent hole: each must resolve."""
    library = kernel_symbols.library()
    named = [(r.name, k) for r in vars(rules).values() if isinstance(r, Forbidden) for k in r.native]
    assert len(named) > 40
    missing = [(rule, k) for rule, k in named if not kernel_symbols.offsets(library, k)]
    assert not missing, missing


def _siblings(name: str) -> set[str]:
    """The names the same kernel's other overloads take in at::native: the out= kernel of a functional
    one and the reverse, a backend's (_cpu) and a symbolic-size (_symint) spelling."""
    base = name.removeprefix("at::native::")
    stems = {base, base.removesuffix("_cpu"), base.removesuffix("_symint")}
    endings = ("", "_out", "_out_cpu", "_cpu_out", "_cpu", "_out_symint", "_symint")
    return {f"at::native::{stem}{end}" for stem in stems for end in endings} - {name}


def test_every_rule_kernel_has_its_other_overloads_listed():
    """A kernel's out= overload is another native function (slow_conv2d_forward_out_cpu beside
    slow_conv2d_forward_cpu): reached through torch.ops.aten.<op>.out by a built name, with the dispatch
    mode off, an unlisted one let the red team's conv2d, max_pool2d and cross_entropy through."""
    library = kernel_symbols.library()
    missing = []
    for rule in (r for r in vars(rules).values() if isinstance(r, Forbidden)):
        for name in rule.native:
            missing += [(rule.name, other) for other in sorted(_siblings(name))
                        if other not in rule.native and kernel_symbols.offsets(library, other)]
    assert not missing, missing


# Backends this CPU build never runs a kernel of: their entries stay unwatched.
_DEVICE_ONLY = re.compile(r"cuda|mps|miopen|cudnn|triton|xpu|hip")


def _native_functions(library: str) -> set[str]:
    """The names of the functions of at::native in the library (a class's name for its methods)."""
    names, functions = kernel_symbols._symbols(library)
    found = set()
    for m in re.finditer(rb"\0_ZNK?2at6native(\d+)", names):
        if m.start() + 1 in functions:
            found.add(names[m.end():m.end() + int(m.group(1))].decode())
    return found


def test_every_kernel_of_a_rules_family_is_listed():
    """The same computation has kernels for other layouts and backends, which torch.ops reaches on a
    CPU tensor of that kind: the red team passed softmax through torch.sparse.softmax (softmax_sparse_cpu)
    and conv2d and both pools through MKL-DNN's (mkldnn_convolution_pointwise, mkldnn_max_pool2d). Each
    rule's family names them all; every one this torch has must be counted."""
    library = kernel_symbols.library()
    present = _native_functions(library)
    families = [r for r in vars(rules).values() if isinstance(r, Forbidden) and r.family]
    assert len(families) >= 15 and {"softmax_sparse_cpu", "mkldnn_max_pool2d"} <= present
    missing = []
    for rule in families:
        listed = {n.split("::")[2] for n in rule.native if n.startswith("at::native::")}
        missing += [(rule.name, name) for name in sorted(present)
                    if re.search(rule.family, name) and name not in listed and not _DEVICE_ONLY.search(name)]
    assert not missing, missing


@pytest.fixture(scope="module")
def watched(sandbox):
    workdir = make_workdir()
    copy_submission({"attacks": ATTACKS}, workdir)
    session = sandbox.open(workdir, "attacks", forbidden=[dataclasses.asdict(rules.SDPA)],
                           import_timeout=30, count_kernels=True)
    yield session
    session.close()
    shutil.rmtree(workdir, ignore_errors=True)


def _counted(outcome) -> list[str]:
    return [h["via"] for h in outcome.hits if COUNTED in h["via"]]


@NEEDS_PROBES
def test_a_correct_call_is_never_counted(watched):
    import torch
    assert watched.ready.kind == "ok", watched.ready
    assert "kernel count" not in watched.ready.detail
    q = torch.randn(2, 3, 4)
    outcome = watched.call("by_hand", (q,), timeout=30)
    assert outcome.kind == "ok", outcome
    assert _counted(outcome) == []          # the import-time use lies outside every call


@NEEDS_PROBES
@pytest.mark.parametrize("attack", ["aten_op", "unwrapped", "c_nn", "math_kernel", "in_thread",
                                    "in_helper_process"])
def test_every_route_into_the_kernel_is_counted(watched, attack):
    import torch
    q = torch.randn(2, 3, 4)
    # the parent running the kernel itself (a reference) between calls is not the child's
    torch.nn.functional.scaled_dot_product_attention(q, q, q)
    outcome = watched.call(attack, (q,), timeout=30)
    assert outcome.kind == "ok", outcome
    via = _counted(outcome)
    assert via and all(v.startswith("at::native::") for v in via), outcome.hits
    assert {h["rule"] for h in outcome.hits if COUNTED in h["via"]} == {rules.SDPA.name}
    after = watched.call("by_hand", (q,), timeout=30)
    assert _counted(after) == [], "a count from the previous call leaked into the next"


@NEEDS_PROBES
def test_a_zygote_started_while_counters_are_open_keeps_their_breakpoints(watched, config):
    """The zygote unmaps the page-cache pages of its code, so that fork copies fewer entries
    (grader.sandbox.zygote), but not its private ones. A zygote that maps libtorch while counters
    are open gets the breakpoints then, in private copies of their pages: it keeps them, and a call
    in its child is counted."""
    import torch

    from grader.pipeline.engine import limits_from
    from grader.sandbox.runner import Sandbox

    assert watched.call("c_nn", (torch.randn(2, 3, 4),), timeout=30).kind == "ok"     # the counters are open
    workdir = make_workdir()
    copy_submission({"attacks": ATTACKS}, workdir)
    with Sandbox(limits_from(config)) as second:
        second.start()
        with open(f"/proc/{second._zygote.pid}/smaps") as f:
            lines = f.read().splitlines()
        start = next(i for i, line in enumerate(lines) if " r-xp " in line and line.endswith("libtorch_cpu.so"))
        kb = dict(line.split()[:2] for line in lines[start + 1:start + 25] if line.endswith(" kB"))
        session = second.open(workdir, "attacks", forbidden=[dataclasses.asdict(rules.SDPA)], import_timeout=30,
                              count_kernels=True)
        try:
            outcome = session.call("c_nn", (torch.randn(2, 3, 4),), timeout=30)
        finally:
            session.close()
            shutil.rmtree(workdir, ignore_errors=True)
    assert int(kb["Anonymous:"]) > 0 and int(kb["Rss:"]) <= int(kb["Anonymous:"]) + 256, kb
    assert outcome.kind == "ok" and _counted(outcome), outcome.hits


def _erase_breakpoints(pid: int, offsets: list[int]) -> int:
    """Write the library's own bytes over the breakpoints at `offsets` in the memory of process `pid`
    and of its children (a spare): what a zygote that dropped their pages as they were written has
    (grader.sandbox.breakpoints). The number of entries that held one."""
    library = kernel_symbols.library()
    erased = 0
    for p in [pid] + [int(c) for t in os.listdir(f"/proc/{pid}/task")
                      for c in open(f"/proc/{pid}/task/{t}/children").read().split()]:
        maps = [line.split() for line in open(f"/proc/{p}/maps")]
        spans = [(int(f[0].split("-")[0], 16), int(f[0].split("-")[1], 16), int(f[2], 16)) for f in maps
                 if len(f) >= 6 and f[5] == library and "x" in f[1]]
        with open(library, "rb") as lib, open(f"/proc/{p}/mem", "r+b", buffering=0) as mem:
            for off in offsets:
                low, high, start = next(s for s in spans if s[2] <= off < s[2] + s[1] - s[0])
                mem.seek(low + off - start)
                if mem.read(len(breakpoints.INSTRUCTION)) == breakpoints.INSTRUCTION:
                    erased += 1
                    lib.seek(off)
                    mem.seek(low + off - start)
                    mem.write(lib.read(len(breakpoints.INSTRUCTION)))
    return erased


@NEEDS_PROBES
def test_a_breakpoint_the_zygote_lost_is_written_again(watched, config):
    """A zygote that drops its code pages just as a counter writes its breakpoint loses it, and every
    child it forks then runs that kernel uncounted (CI: 3 kernel-count scenarios passed). Before a
    watched child is handed over, the parent finds the breakpoint missing in the zygote and writes
    it again: the child's call is counted, and so is the next child's."""
    import torch

    from grader.pipeline.engine import limits_from
    from grader.sandbox.runner import Sandbox

    assert watched.call("c_nn", (torch.randn(2, 3, 4),), timeout=30).kind == "ok"     # the counters are open
    offsets = sorted({o for k in rules.SDPA.native for o in kernel_symbols.offsets(kernel_symbols.library(), k)})
    workdir = make_workdir()
    copy_submission({"attacks": ATTACKS}, workdir)
    counted = []
    try:
        with Sandbox(limits_from(config)) as second:
            second.start()
            assert _erase_breakpoints(second._zygote.pid, offsets) >= len(offsets)
            for _ in range(2):
                session = second.open(workdir, "attacks", forbidden=[dataclasses.asdict(rules.SDPA)],
                                      import_timeout=30, count_kernels=True)
                try:
                    assert "kernel count" not in session.ready.detail, session.ready.detail
                    counted.append(_counted(session.call("c_nn", (torch.randn(2, 3, 4),), timeout=30)))
                finally:
                    session.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert all(counted), counted


def test_without_the_layer_the_feedback_says_so(sandbox, monkeypatch):
    """Where the kernel cannot count (not root, no uprobe PMU...) the in-child tripwires remain and the
    missing layer is named in the session's notes."""
    monkeypatch.setattr(native_watch, "unavailable", lambda: "not running as root")
    workdir = make_workdir()
    copy_submission({"attacks": "def f():\n    return 1\n"}, workdir)
    session = sandbox.open(workdir, "attacks", forbidden=[dataclasses.asdict(rules.SDPA)],
                           import_timeout=30, count_kernels=True)
    try:
        assert session.ready.kind == "ok", session.ready
        assert "no kernel count of forbidden kernels (not running as root)" in session.ready.detail
        assert session.watch is None
    finally:
        session.close()
        shutil.rmtree(workdir, ignore_errors=True)


def test_rules_without_kernels_open_nothing(sandbox):
    workdir = make_workdir()
    copy_submission({"attacks": "def f():\n    return 1\n"}, workdir)
    session = sandbox.open(workdir, "attacks", forbidden=[dataclasses.asdict(rules.XAVIER)],
                           import_timeout=30, count_kernels=True)
    try:
        assert session.watch is None and "kernel count" not in session.ready.detail
    finally:
        session.close()
        shutil.rmtree(workdir, ignore_errors=True)


BACKEND_CONV = '''
import torch


def slow_conv(x, k):
    """Attack: a convolution backend kernel called directly, past at::native::convolution."""
    return torch.ops.aten._slow_conv2d_forward(x, k, [k.shape[-2], k.shape[-1]], None, [1, 1], [0, 0])
'''


@NEEDS_PROBES
def test_a_backend_kernel_called_directly_is_counted(sandbox):
    import torch
    workdir = make_workdir()
    copy_submission({"convs": BACKEND_CONV}, workdir)
    session = sandbox.open(workdir, "convs", forbidden=[dataclasses.asdict(rules.CONVOLUTION)],
                           import_timeout=30, count_kernels=True)
    try:
        outcome = session.call("slow_conv", (torch.randn(1, 1, 5, 5), torch.randn(1, 1, 3, 3)), timeout=30)
        assert outcome.kind == "ok", outcome
        assert any("slow_conv2d_forward_cpu" in v for v in _counted(outcome)), outcome.hits
    finally:
        session.close()
        shutil.rmtree(workdir, ignore_errors=True)


SIDE_BY_SIDE = '''
import time
import torch
import torch.nn.functional as F


def busy(q, seconds):
    """Forbidden, for a while: the kernel entered again and again."""
    end, out = time.monotonic() + seconds, q
    while time.monotonic() < end:
        out = torch._C._nn.scaled_dot_product_attention(q, q, q)
    return out


def by_hand(q):
    w = torch.softmax(q @ q.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return w @ q
'''


def _open_side(sandbox, workdirs):
    workdir = make_workdir()
    workdirs.append(workdir)
    copy_submission({"side": SIDE_BY_SIDE}, workdir)
    return sandbox.open(workdir, "side", forbidden=[dataclasses.asdict(rules.SDPA)], import_timeout=30,
                        count_kernels=True)


@NEEDS_PROBES
def test_children_watched_side_by_side_are_counted_apart(sandbox):
    """Two children of the same rule run at once, each in its own slot: one enters the kernel for a
    second while the other calls its correct function again and again; only the first is counted, and
    neither waits for the other."""
    import threading
    import time

    import torch
    workdirs: list[str] = []
    a, b = _open_side(sandbox, workdirs), _open_side(sandbox, workdirs)
    try:
        assert a.ready.kind == b.ready.kind == "ok", (a.ready, b.ready)
        if a.watch.slot is not None:
            assert a.watch.slot != b.watch.slot and len(a.watch.slot.cpus) >= 1
        q = torch.randn(2, 3, 4)
        got = {}
        busy = threading.Thread(target=lambda: got.setdefault("a", a.call("busy", (q, 1.0), timeout=30)))
        start = time.monotonic()
        busy.start()
        clean = []
        while busy.is_alive() or not clean:
            clean.append(b.call("by_hand", (q,), timeout=30))
        busy.join()
        assert time.monotonic() - start < 5
        assert len(clean) > 3, "the clean child waited for the busy one"
        assert all(o.kind == "ok" and _counted(o) == [] for o in clean), [o.hits for o in clean]
        assert got["a"].kind == "ok" and _counted(got["a"]), got["a"].hits
    finally:
        slots = [s.watch.slot for s in (a, b) if s.watch is not None]
        a.close()
        b.close()
        for workdir in workdirs:
            shutil.rmtree(workdir, ignore_errors=True)
    again = []
    try:
        again.append(_open_side(sandbox, workdirs))
        assert again[0].watch is None or again[0].watch.slot in slots     # a slot given back serves the next
    finally:
        for s in again:
            s.close()
        for workdir in workdirs:
            shutil.rmtree(workdir, ignore_errors=True)


EXITS_WITH_COUNTERS = '''
import dataclasses, os, sys, time
from grader.catalog import catalog
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Sandbox
from grader.catalog.rules import SDPA
# SDPA's kernels (the next grader adopts this one's slot to count them, ADOPTS), then others up to 80:
# enough for the point, not the catalog's ~340 (slow to open and to close)
rules, kernels = {SDPA.name: dataclasses.asdict(SDPA)}, len(SDPA.native)
for rule in (r for s in catalog().values() for r in s.forbidden if r.native):
    if kernels < 80 and rule.name not in rules:
        rules[rule.name], kernels = dataclasses.asdict(rule), kernels + len(rule.native)
with Sandbox() as sandbox:
    workdir = make_workdir()
    copy_submission({"m": "def f():\\n    return 1\\n"}, workdir)
    session = sandbox.open(workdir, "m", forbidden=list(rules.values()), import_timeout=60, count_kernels=True)
    assert session.ready.kind == "ok" and session.watch is not None, session.ready
    print(sum(len(per_cpu) for per_cpu in session.watch.fds), *session.watch.slot.folders, flush=True)
    session.close()
    remove_workdir(workdir)
print(time.monotonic(), flush=True)
'''


@NEEDS_PROBES
def test_a_grading_process_ends_at_once_and_its_keeper_cleans_up(tmp_path):
    """Its exit closes every counter it opened; were those the last descriptors, the exit would wait
    for the kernel once per counter (~80 ms each). The keeper holds copies, closes them once the
    process has gone, and removes its watch slots' folders."""
    import os
    import subprocess
    import sys
    import time

    from conftest import ROOT
    # this suite's own sandbox runs meanwhile: the keeper would wait for it to end (PATIENCE)
    p = subprocess.Popen([sys.executable, "-c", EXITS_WITH_COUNTERS], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "GRADER_KEEPER_PATIENCE": "0"})
    counters, *folders = p.stdout.readline().split()
    last = float(p.stdout.readline())
    p.wait(timeout=60)
    ended = time.monotonic()
    assert p.returncode == 0 and int(counters) > 50 and folders
    assert ended - last < 2.0, f"the exit took {ended - last:.1f} s with {counters} counters open"
    deadline = time.monotonic() + 120
    while any(os.path.exists(f) for f in folders) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(os.path.exists(f) for f in folders), folders


def test_a_new_slot_takes_the_cpu_the_fewest_slots_hold():
    """Slots of every grader on the machine are spread: a new one goes where the fewest are pinned
    (ties: the last CPU), so two graders' children, or one grader's two, do not share a CPU while
    another is free."""
    assert watch_slots.least_held([0, 1], []) == 1
    assert watch_slots.least_held([0, 1], [[1]]) == 0
    assert watch_slots.least_held([0, 1, 2, 3], [[3], [2], [0], [3]]) == 1
    assert watch_slots.least_held([2, 3], [[0], [1], [3]]) == 2      # pins outside our CPUs do not count
    assert watch_slots.cpu_list("0-2,5\n") == [0, 1, 2, 5] and watch_slots.cpu_list("") == []


def test_a_lock_held_on_the_hierarchy_stalls_no_grader_past_its_bound(tmp_path):
    """A sandboxed child can read /sys and so flock the cpuset hierarchy's root, which graders lock
    while they pin a new slot (a red team's child held it for its whole submission): a slot is
    still pinned, the lock given up after PIN_LOCK_WAIT."""
    import fcntl
    for key, value in (("cpuset.effective_cpus", "0-1"), ("cpuset.effective_mems", "0")):
        (tmp_path / key).write_text(value + "\n")
    held = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        start = time.monotonic()
        cpu = watch_slots._pin(str(tmp_path / "grader-1-watch1"), str(tmp_path))
        waited = time.monotonic() - start
    finally:
        os.close(held)
    assert cpu == 1 and (tmp_path / "grader-1-watch1" / "cpuset.cpus").read_text() == "1"
    assert watch_slots.PIN_LOCK_WAIT <= waited < watch_slots.PIN_LOCK_WAIT + 5, waited
    start = time.monotonic()        # free: no wait, and the CPU the first slot (pid 1 lives) holds is passed over
    assert watch_slots._pin(str(tmp_path / "grader-1-watch2"), str(tmp_path)) == 0
    assert time.monotonic() - start < watch_slots.PIN_LOCK_WAIT


def test_a_keeper_waits_while_a_grader_runs(sandbox):
    """Closing counters stalls other processes' opening of theirs: a keeper closes only while no
    grader runs, and a running sandbox is one."""
    from grader.sandbox import keeper
    sandbox.start()
    assert keeper.graders_running()


def test_a_keeper_pauses_after_each_close(monkeypatch):
    """Closed one after another, counters return at once and their removals pile up in the kernel,
    where they hold up every fork on the machine for seconds (benchmarks/counter_closes.py). The
    keeper pauses after each close: the counters it closes at once as well as those it keeps."""
    import os
    import socket
    import subprocess
    import time
    import types

    from grader.sandbox import keeper
    events: list[str] = []
    real_close = os.close
    fake_os = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    fake_os.close = lambda fd: (events.append("close"), real_close(fd))
    monkeypatch.setattr(keeper, "os", fake_os)
    monkeypatch.setattr(keeper, "time", types.SimpleNamespace(monotonic=time.monotonic,
                                                              sleep=lambda s: events.append(f"pause {s:g}")))
    monkeypatch.setattr(keeper, "graders_running", lambda: False)
    monkeypatch.setattr(keeper.resource, "setrlimit", lambda *a: None)
    gone = subprocess.Popen(["true"])
    gone.wait()                 # the grading process: ended already
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pipes = [os.pipe() for _ in range(5)]
    socket.send_fds(ours, [b"close"], [r for r, _ in pipes[:2]])
    socket.send_fds(ours, [b"keep"], [r for r, _ in pipes[2:]])
    for r, _ in pipes:
        real_close(r)
    ours.close()
    keeper.main(theirs.detach(), gone.pid)
    assert keeper.PAUSE_S > 0
    assert events == ["close", f"pause {keeper.PAUSE_S:g}"] * 5
    for _, w in pipes:          # every read end closed: the write ends have no reader left
        with pytest.raises(BrokenPipeError):
            os.write(w, b"x")
        real_close(w)


def _offered(monkeypatch, spares: list[dict], claim, seconds: float = 10, uids: tuple[int, int] = (0, 0)):
    """`keeper.offer` of `spares` for `seconds` in a thread, and `keeper.adopt` here until it has taken
    something or the offer has ended, under a name of the test's own: (what adopt returned, what
    offer gave, what adopt handed this process's keeper to close). `uids`: the peer's uid as the
    keeper sees it, and as the adopter does."""
    import os
    import threading
    import time

    from grader.sandbox import keeper
    here = threading.current_thread()
    monkeypatch.setattr(keeper, "SPARES", f"nn-grader-test-spares-{os.getpid()}-{time.monotonic_ns()}-")
    monkeypatch.setattr(keeper, "peer_uid", lambda conn: uids[threading.current_thread() is here])
    closed_here: list[int] = []
    monkeypatch.setattr(keeper, "hand", lambda fds, counter=None, close=False: closed_here.extend(fds) or True)
    given: dict = {}
    t = threading.Thread(target=lambda: given.update(keeper.offer(spares, time.monotonic() + seconds)))
    t.start()
    adopted: list = []
    while t.is_alive() and not adopted:
        adopted = keeper.adopt("0:0", claim)
        time.sleep(0.05)
    t.join()
    return adopted, given, closed_here


def _spare(name: str, pipes: list[tuple[int, int]]) -> dict:
    return {"folders": [f"/nowhere/{name}"], "inodes": [1], "cpus": [0], "library": "0:0",
            "counters": {100 + i: [r] for i, (r, _) in enumerate(pipes)}}


def test_a_keeper_hands_its_slots_to_the_next_grader(monkeypatch):
    """An ended grader's keeper offers its slots with their counters; the next grader takes those it
    can use: it receives working copies of their descriptors, the keeper learns which it may close
    at once (not the last) and which folders are no longer its own; the rest it keeps, and what the
    grader received and left is handed to its own keeper to close."""
    import os
    pipes = [os.pipe() for _ in range(3)]
    spares = [_spare("a", pipes[:2]), _spare("b", pipes[2:])]
    seen: list[dict] = []

    def claim(spare):
        seen.append(spare)
        return ("mine", spare["counters"]) if spare["folders"] == ["/nowhere/a"] else None

    adopted, given, closed_here = _offered(monkeypatch, spares, claim)
    assert [s["folders"] for s in seen] == [["/nowhere/a"], ["/nowhere/b"]]
    assert [s["counters"].keys() for s in seen] == [{100, 101}, {100}] and seen[0]["cpus"] == [0]
    assert len(adopted) == 1 and adopted[0][0] == "mine"
    for (r, w), (_, fds) in zip(pipes[:2], sorted(adopted[0][1].items())):
        os.write(w, b"x")
        assert len(fds) == 1 and fds[0] != r and os.read(fds[0], 1) == b"x"     # a copy of the same pipe
        os.close(fds[0])
    assert given["fds"] == {pipes[0][0], pipes[1][0]} and given["folders"] == {"/nowhere/a"}
    assert len(closed_here) == 1        # b's descriptor, received and not taken
    for r, w in pipes:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("uids", [(1000, 0), (0, 1000)], ids=["adopter-not-root", "keeper-not-root"])
def test_nothing_is_handed_to_or_taken_from_a_process_not_of_root(monkeypatch, uids):
    """Counters go only from a root grader's keeper to another root grader: a peer of another uid gets
    no descriptor and the keeper gives nothing away; an adopter takes nothing from such a keeper."""
    import os
    pipes = [os.pipe()]
    claims: list = []
    adopted, given, closed_here = _offered(monkeypatch, [_spare("a", pipes)], lambda s: claims.append(s) or ("x", {}),
                                           seconds=1.0, uids=uids)
    assert adopted == [] and claims == [] and closed_here == []
    assert given == {"fds": set(), "folders": set()}
    for d in pipes[0]:
        os.close(d)


@pytest.mark.skipif(not watch_slots.possible(), reason="no watch slots on this machine (not root, or cgroup2 only)")
def test_an_adopted_slot_is_checked_and_renamed():
    """A slot offered is taken only while its folders are the same groups (inodes), in this machine's
    hierarchies, and empty; its cpuset folder is renamed after the adopter, which new slots pass over."""
    import os
    import signal
    import time

    from grader.sandbox import cgroups
    slot = watch_slots._new()
    assert slot is not None
    made = slot.folders
    try:
        inodes = list(watch_slots.inodes(slot.folders))
        folders, cpus = list(slot.folders), list(slot.cpus)
        assert watch_slots.adopt(folders, [i + 1 for i in inodes], cpus) is None            # another group
        assert watch_slots.adopt(["/tmp/" + os.path.basename(folders[0])] + folders[1:], inodes, cpus) is None
        r, w = os.pipe()
        member = os.fork()
        if member == 0:         # a process left in the slot: its counts would mix with the adopter's child's
            os.close(r)
            os._exit(0 if not cgroups.join([os.path.join(f, "cgroup.procs") for f in folders])
                     and os.write(w, b"in") and time.sleep(60) is None else 1)
        os.close(w)
        joined = os.read(r, 2)
        try:
            assert joined == b"in" and watch_slots.adopt(folders, inodes, cpus) is None          # not empty
        finally:
            os.kill(member, signal.SIGKILL)
            os.waitpid(member, 0)
            os.close(r)
        deadline = time.monotonic() + 5
        while not slot.empty() and time.monotonic() < deadline:
            time.sleep(0.05)
        taken = watch_slots.adopt(folders, inodes, cpus)
        made += taken.folders if taken else ()
        assert taken is not None and taken.folders[0] == folders[0] and taken.cpus == slot.cpus
        if len(folders) == 2:
            assert taken.folders[1] != folders[1] and f"grader-{os.getpid()}-watch" in taken.folders[1]
            assert not os.path.exists(folders[1]) and list(watch_slots.inodes(taken.folders)) == inodes
        watch_slots.disown(taken, folders)
        assert all(os.path.isdir(f) for f in folders) and list(watch_slots.inodes(slot.folders)) == inodes
    finally:
        for folder in set(made):
            if os.path.isdir(folder):
                os.rmdir(folder)


@pytest.mark.skipif(not watch_slots.possible(), reason="no watch slots on this machine (not root, or cgroup2 only)")
def test_stale_groups_are_removed_but_a_keepers_slots_are_left_to_it(monkeypatch):
    """A grader killed from outside leaves its groups, which the next grader removes; an ended grader's
    watch slots are its keeper's (to hand over or remove), so they stay while a keeper runs. Under a
    prefix of the test's own: with no keeper said to run, the real prefix would also take the slots
    that live graders adopted (their perf_event folders keep their first grader's name), this
    suite's own among them."""
    import os
    import subprocess

    from grader.sandbox import cgroups, hierarchies, keeper
    gone = subprocess.Popen(["true"])
    gone.wait()
    base, prefix = hierarchies.bases()["perf_event"], f"nn-grader-test-{os.getpid()}-"
    slot, other = (os.path.join(base, f"{prefix}{gone.pid}-{what}") for what in ("watch1", "4242"))
    for folder in (slot, other):
        os.mkdir(folder)
    try:
        monkeypatch.setattr(keeper, "keepers_running", lambda: True)
        cgroups.remove_stale(prefix)
        assert os.path.isdir(slot) and not os.path.exists(other)
        monkeypatch.setattr(keeper, "keepers_running", lambda: False)
        cgroups.remove_stale(prefix)
        assert not os.path.exists(slot)
    finally:
        for folder in (slot, other):
            if os.path.isdir(folder):
                os.rmdir(folder)


@pytest.mark.skipif(not watch_slots.possible(), reason="no watch slots on this machine (not root, or cgroup2 only)")
def test_a_slot_called_stale_is_removed_once_empty_never_killed(monkeypatch):
    """remove_stale goes by names, and on cgroup2 an adopted slot keeps the name of the grader that
    made it: a watch slot it calls stale loses no process (a live grader's child could be in it), and
    goes once it is empty."""
    import subprocess
    import time

    from grader.sandbox import cgroups, hierarchies, keeper
    gone = subprocess.Popen(["true"])
    gone.wait()
    prefix = f"nn-grader-test-{os.getpid()}-"
    slot = os.path.join(hierarchies.bases()["perf_event"], f"{prefix}{gone.pid}-watch1")
    os.mkdir(slot)
    member = subprocess.Popen(["sleep", "60"])
    try:
        with open(os.path.join(slot, "cgroup.procs"), "w") as f:
            f.write(str(member.pid))
        monkeypatch.setattr(keeper, "keepers_running", lambda: False)
        cgroups.remove_stale(prefix)
        assert member.poll() is None and os.path.isdir(slot)
        member.kill()
        member.wait()
        deadline = time.monotonic() + 5          # the kernel lets go of a dead member shortly after
        while os.path.isdir(slot) and time.monotonic() < deadline:
            cgroups.remove_stale(prefix)
            time.sleep(0.05)
        assert not os.path.exists(slot)
    finally:
        if member.poll() is None:
            member.kill()
            member.wait()
        if os.path.isdir(slot):
            os.rmdir(slot)


@NEEDS_PROBES
@pytest.mark.skipif(not watch_slots.possible(), reason="no watch slots on this machine (not root, or cgroup2 only)")
@pytest.mark.parametrize("how", ["removed", "made again"])
def test_a_slot_whose_groups_are_gone_is_dropped_and_the_next_child_counted(sandbox, how):
    """A free slot's groups may be removed from outside this process (another grader's clean-up, which
    goes by names: an adopted slot's perf_event folder keeps its first grader's), and a group made again
    under the name: the next child gets a slot that counts it, and the old slot's counters are let go."""
    import torch
    workdir = make_workdir()
    copy_submission({"attacks": ATTACKS}, workdir)
    forbidden = [dataclasses.asdict(rules.SDPA)]
    first = sandbox.open(workdir, "attacks", forbidden=forbidden, import_timeout=30, count_kernels=True)
    slot = first.watch.slot
    first.close()
    assert watch_slots._FREE[os.getpid()][-1:] == [slot], "the slot is the next one taken"
    counters = {k: v for k, v in native_watch._SHARED.items() if k[:2] == (os.getpid(), slot.folders[0])}
    assert counters
    for folder in slot.folders:
        os.rmdir(folder)
    if how == "made again":
        os.mkdir(slot.folders[0])
    try:
        second = sandbox.open(workdir, "attacks", forbidden=forbidden, import_timeout=30, count_kernels=True)
        try:
            assert second.watch is not None, second.ready
            assert second.watch.slot != slot and second.watch.slot.whole()
            outcome = second.call("aten_op", (torch.randn(2, 3, 4),), timeout=30)
            assert {h["rule"] for h in outcome.hits if COUNTED in h["via"]} == {rules.SDPA.name}, outcome
        finally:
            second.close()
        assert not set(counters) & set(native_watch._SHARED)        # closed (their numbers serve again)
    finally:
        if os.path.isdir(slot.folders[0]):
            os.rmdir(slot.folders[0])
        shutil.rmtree(workdir, ignore_errors=True)


ADOPTS = '''
import dataclasses, json, os, sys, time
import torch
from grader.catalog import rules
from grader.sandbox import native_watch, watch_slots
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Sandbox
opened = []
real_open = native_watch._open
native_watch._open = lambda *a: opened.append(a) or real_open(*a)
for _ in range(100):        # the keeper offering may be another grader's, with no slot to spare
    native_watch._adopt()
    if watch_slots.any_free():
        break
    time.sleep(0.2)
with Sandbox() as sandbox:
    workdir = make_workdir()
    copy_submission({"attacks": sys.argv[1]}, workdir)
    session = sandbox.open(workdir, "attacks", forbidden=[dataclasses.asdict(rules.SDPA)], import_timeout=60,
                           count_kernels=True)
    q = torch.randn(2, 3, 4)
    hit, clean = session.call("c_nn", (q,), timeout=30), session.call("by_hand", (q,), timeout=30)
    print(json.dumps({"pid": os.getpid(), "slot": session.watch.slot.folders[0], "opened": len(opened), "hit": hit.hits,
                      "clean": clean.hits, "kinds": [hit.kind, clean.kind]}), flush=True)
    session.close()
    remove_workdir(workdir)
'''


@NEEDS_PROBES
@pytest.mark.skipif(not watch_slots.possible(), reason="no watch slots on this machine (not root, or cgroup2 only)")
def test_the_next_grader_counts_in_slots_it_adopted():
    """A grader started after another has ended takes over the slots its keeper offers, with their
    counters open: a forbidden kernel is still counted there, a correct call is not, and where the
    slot is the first grader's (all its rules' kernels open) no counter is opened again."""
    import json
    import os
    import subprocess
    import sys

    from conftest import ROOT
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADER_KEEPER_PATIENCE": "60"}
    first = subprocess.run([sys.executable, "-c", EXITS_WITH_COUNTERS], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=120)
    assert first.returncode == 0, first.stderr[-2000:]
    second = subprocess.run([sys.executable, "-c", ADOPTS, ATTACKS], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-2000:]
    got = json.loads(second.stdout.splitlines()[-1])
    assert got["kinds"] == ["ok", "ok"]
    assert not os.path.basename(got["slot"]).startswith(f"grader-{got['pid']}-"), got      # adopted
    assert {h["rule"] for h in got["hit"] if COUNTED in h["via"]} == {rules.SDPA.name}, got["hit"]
    assert not [h for h in got["clean"] if COUNTED in h["via"]], got["clean"]
    if got["slot"] == first.stdout.split()[1]:     # its counters, its slot's folders, ...
        assert got["opened"] == 0, got


@pytest.mark.parametrize("hard,soft", [(20000, 20000), (resource.RLIM_INFINITY, 1 << 16)])
def test_a_grading_process_may_open_as_many_counters_as_its_hard_limit_allows(monkeypatch, hard, soft):
    """A counter is a descriptor: the soft limit goes to the hard one, or to 65,536 where the hard one
    is unlimited (a soft limit above the kernel's nr_open is refused, and would leave 1,024)."""
    set_to = []
    monkeypatch.setattr(resource, "getrlimit", lambda what: (1024, hard))
    monkeypatch.setattr(resource, "setrlimit", lambda what, limits: set_to.append(limits))
    native_watch._raise_descriptor_limit.__wrapped__()
    assert set_to == [(soft, hard)]
