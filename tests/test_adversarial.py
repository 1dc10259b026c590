"""The adversarial suite (issue 14): named attacks, each a real submission, one shared harness.

Every attack is the worked attention module with one function replaced by an attack (or a scenario
of tests/fixtures/submissions/, built by tests/scenarios.py). The replaced function's docstring
states the attack and what must hold. Most attacks return the right answer only when they were
contained (the attack "succeeding" raises, so a hole shows as a lost point), the others must earn
exactly the status named in the table.

`test_attack` grades each one with a secret seed set (hidden cases on) and a short call limit, and
asserts for every attack:

1. the grade is what the submission earned: the attacked exercise has its expected status (and no
   points unless that status is "passed"), every other attention exercise full marks;
2. the check completes within its wall-time bound;
3. no file outside the sandbox changed: sha256 of solutions/, exercises/, autograde.toml, grader/
   (bytecode writing is off in this process, so a .pyc that appears is the attack's), a
   world-writable canary folder in the system temp dir, before and after; and nothing the attack
   made appeared in site-packages, the user site folder, /dev/shm or /var/tmp: an entry owned by
   another uid than the grader's (as root every child has its own), named as the attacks name what
   they plant, or a .pth, and nothing vanished from site-packages or the user site. The owner
   decides, not a bare listing: other processes of this machine come and go there as the grader's
   own user (multiprocessing's sem.mp-* files in /dev/shm from another test run made a bare
   listing fail);
4. the secret seed (decimal and hex) appears in no string of the result (`grader.results.to_dict`);
5. no process of the submission outlives its grading: the attack prints `UID=<n>` and no live,
   non-zombie process runs as that uid afterwards;
6. no System V IPC object (/proc/sysvipc/shm, msg, sem) and no Unix socket file in the temp dir
   remains.

`test_memory_is_one_budget_for_the_exercises_graded_at_once` holds 1.2 GiB in every child of one
submission graded three at once, and `test_batch_attack` runs `grader batch` on one attacker per
cross-student attack and a victim graded after them (see its section below).

As root (CI, grading servers; how this suite is meant to run) every attack runs and every check
applies. As an ordinary user the private uid, namespaces, control groups and the kernel's count of
forbidden kernels are absent: attacks marked root-only (fork bombs, kill(-1), reading other
processes' /proc, loopback/abstract and path sockets, System V IPC, background processes, the
grader's files, the folder's disk limit), the shared-memory test and the batch attacks are skipped,
and so is the uid check of item 5, because on a laptop isolation is best effort (SECURITY.md); the
forbidden-API attacks that only the kernel's count catches (`torch.ops.aten`, `__wrapped__`) are
expected to pass the student there: xfail(strict) where that layer is missing, so the day it is not
they turn red. Known open holes are `xfail(strict=True)` the same way (none is left of issue 14).
"""
from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import os
import shutil
import socket
import stat
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

from conftest import HOPPER, ROOT, attack_uids, groups_left, indented, left_of, statuses
from grader.results import to_dict
from grader.sandbox import native_watch
from scenarios import submission

pytestmark = pytest.mark.slow           # about 70 s: three attacks wait out the call limit (short_grace)

ROOT_ONLY = os.geteuid() != 0
SEED = 0x5EC7E75EED
CORRECT = "torch.tril(torch.ones(T, T, dtype=torch.bool))"
OTHERS = {"attention.causal_mask": 1.0, "attention.scaled_dot_product_attention": 3.0,
          "attention.multi_head_attention": 3.0, "attention.positional_encoding": 2.0}
CANARY = Path(tempfile.mkdtemp(prefix="adversarial-canary-"))
atexit.register(shutil.rmtree, CANARY, True)          # also when the module is collected but not run
PORT_HOLDER: dict = {}
ABSTRACT = f"adversarial-{os.getpid()}"
PATH_SOCKET = CANARY / "host.sock"
RUN_SOCKET = Path("/run") / f"adversarial-{os.getpid()}.sock"
SITE = Path(sysconfig.get_paths()["purelib"])
USER_SITE = Path(os.path.expanduser("~")) / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


@dataclasses.dataclass(frozen=True)
class Attack:
    target: str                     # the exercise attacked
    source: str | None = None       # the replacing function (None: a scenario of that name)
    status: str = "passed"          # what it must earn
    seconds: float = 30.0           # wall-time bound of the whole check
    call_timeout: float | None = None   # a call's limit, where the attack's own work needs more than hostile's 3 s
    root_only: bool = False
    xfail: str | None = None
    kernel_count: bool = False      # only the kernel's count of native kernels catches it (root)
    scenario: str | None = None


def mask(body: str, doc: str) -> str:
    """A causal_mask whose body is `body` (indented 4), then the correct answer."""
    return (f"def causal_mask(T):\n    {doc!r}\n    import os, torch\n"
            f"    print(f'UID={{os.getuid()}}', flush=True)\n{body}\n    return {CORRECT}\n")


def sdpa(body: str, doc: str) -> str:
    """A scaled_dot_product_attention made of `body` (which returns)."""
    return (f"def scaled_dot_product_attention(Q, K, V, mask=None):\n    {doc!r}\n    import os, math, torch\n"
            f"    print(f'UID={{os.getuid()}}', flush=True)\n{body}\n")


def ind(text: str) -> str:
    """`text` indented as a function body."""
    return indented(text, 4)


SDPA_BODY = """
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float('-inf'))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
"""

ATTACKS: dict[str, Attack] = {
    # --- resource exhaustion -------------------------------------------------------------
    "fork_bomb": Attack("attention.causal_mask", mask(ind("""
import time
forked = 0
try:
    while forked < 1000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError:
    pass
if forked >= 1000:
    raise RuntimeError('no process limit')
"""), "Attack: fork until fork() fails. Must hold: it fails before 1,000; every child is killed."),
        root_only=True),
    "helpers_share_memory": Attack("attention.causal_mask", mask(ind("""
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
pids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        block = bytearray(1200 << 20)
        os.write(ready_w, b'x')
        os.close(ready_w)
        os.read(go_r, 1)            # hold the block until all three hold theirs
        os._exit(0 if len(block) else 1)
    pids.append(pid)
os.close(ready_w)
os.close(go_r)
while os.read(ready_r, 3):          # EOF once every helper has its block or was killed
    pass
os.close(go_w)                      # releases them
if not all(os.waitpid(p, 0)[1] == 0 for p in pids):
    raise MemoryError('a helper was killed')
"""), "Attack: three 1.2 GiB helpers, each holding its block until all three hold theirs (a barrier, so "
      "they overlap whatever the scheduling). Must hold: they share one budget, so one is killed (error)."),
        # each case zeroes 3.6 GiB and has a helper killed: 1.3-2.1 s on an idle 2-core machine, past 3 s
        # on a busy one (a timeout, not the error the budget makes); a longer call limit changes nothing
        # of what must hold: with a budget per helper, all three complete and the case passes
        status="error", root_only=True, call_timeout=15.0, seconds=150.0),
    "big_allocation": Attack("attention.scaled_dot_product_attention", scenario="hostile_big_allocation",
                             status="error"),
    "huge_output": Attack("attention.multi_head_attention", scenario="hostile_prints"),
    "file_past_fsize": Attack("attention.causal_mask", mask(ind("""
chunk = b'x' * (1 << 20)
try:
    with open('big.bin', 'wb') as f:
        for _ in range(80):
            f.write(chunk)
            f.flush()
except OSError:
    os.remove('big.bin')
else:
    raise RuntimeError('wrote 80 MiB into one file')
"""), "Attack: one 80 MiB file. Must hold: RLIMIT_FSIZE stops it at 64 MiB (EFBIG, not a kill)."),
    ),
    "many_small_files": Attack("attention.causal_mask", mask(ind("""
for i in range(2000):
    with open(f'junk{i}.txt', 'w') as f:
        f.write('x' * 100)
"""), "Attack: litter the working folder with 2,000 files. Must hold: nothing outside the sandbox changes."),
    ),
    "endless_loop": Attack("attention.causal_mask", scenario="hostile_infinite_loop", status="timeout",
                           seconds=60),
    "sleep_past_limit": Attack("attention.positional_encoding", (
        "def positional_encoding(T, d_model):\n"
        "    'Attack: sleep an hour. Must hold: the call limit stops it (timeout), nothing is left.'\n"
        "    import os, time\n    print(f'UID={os.getuid()}', flush=True)\n    time.sleep(3600)\n"),
        status="timeout", seconds=60),
    "sigterm_ignored_with_grandchild": Attack("attention.causal_mask", scenario="hostile_ignores_sigterm",
                                              status="timeout", seconds=60, root_only=True),
    "pid_hopper": Attack("attention.causal_mask", mask(ind("""
import time
for _ in range(0 if os.path.exists('hopping') else 4):
    open('hopping', 'w').close()
""" + indented(HOPPER, 4) + """
time.sleep(0.2)
"""), "Attack: helpers that fork and exit in a loop in new sessions. Must hold: they die with the child."),
        root_only=True),
    # --- escaping the result -------------------------------------------------------------
    "os_exit_at_call": Attack("attention.positional_encoding", scenario="hostile_os_exit", status="crashed"),
    "system_exit_at_call": Attack("attention.causal_mask", mask(ind("raise SystemExit(0)"),
                                  "Attack: SystemExit(0) from the call. Must hold: not a pass."), status="error"),
    "sigkill_self": Attack("attention.causal_mask", mask(ind("import signal\nos.kill(os.getpid(), signal.SIGKILL)"),
                           "Attack: SIGKILL itself. Must hold: crashed, the rest unaffected."), status="crashed"),
    "killpg_own_group": Attack("attention.causal_mask", mask(ind("import signal\nos.killpg(0, signal.SIGKILL)"),
                               "Attack: SIGKILL its process group. Must hold: only the child dies."),
                               status="crashed"),
    "signal_parent": Attack("attention.causal_mask", mask(ind("""
import signal
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGSTOP, signal.SIGKILL):
    for pid in {os.getppid(), GRADER_PID}:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
""").replace("GRADER_PID", str(os.getpid())),
        "Attack: SIGTERM/SIGINT/SIGSTOP/SIGKILL to its parent and to the grader's pid. "
        "Must hold: the grader lives on and grades normally."), root_only=True),
    "kill_everything": Attack("attention.causal_mask", mask(ind("""
import signal
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
"""), "Attack: kill(-1, SIGKILL). Must hold: it reaches only its own processes; the grade stands."),
        root_only=True),
    # --- faking equality ---------------------------------------------------------------
    "tensor_subclass": Attack("attention.causal_mask", scenario="hostile_tensor_subclass", status="failed"),
    "patched_allclose": Attack("attention.scaled_dot_product_attention", scenario="hostile_patches_allclose",
                               status="failed"),
    "patched_equal_and_eq": Attack("attention.causal_mask", (
        "def causal_mask(T):\n"
        "    'Attack: patch torch.equal, torch.allclose, Tensor.__eq__ to always agree, return a wrong mask. '\n"
        "    'Must hold: failed (the comparison runs in the parent).'\n"
        "    import os, torch\n    print(f'UID={os.getuid()}', flush=True)\n"
        "    torch.equal = lambda *a, **k: True\n    torch.allclose = lambda *a, **k: True\n"
        "    torch.Tensor.__eq__ = lambda *a, **k: True\n"
        "    return torch.zeros(T, T, dtype=torch.bool)\n"), status="failed"),
    "object_with_eq": Attack("attention.causal_mask", (
        "def causal_mask(T):\n"
        "    'Attack: return an object whose __eq__ is always True. Must hold: not a pass.'\n"
        "    import os\n    print(f'UID={os.getuid()}', flush=True)\n"
        "    class Yes:\n        def __eq__(self, other):\n            return True\n"
        "        shape = (T, T)\n    return Yes()\n"), status="error"),
    "nan_everywhere": Attack("attention.scaled_dot_product_attention", sdpa(
        "    nan = float('nan')\n"
    "    return torch.full(Q.shape[:-1] + V.shape[-1:], nan), torch.full(Q.shape[:-1] + K.shape[-2:-1], nan)",
        "Attack: NaN compares unequal and may slip through tolerances. Must hold: failed."), status="failed"),
    # --- peeking ---------------------------------------------------------------------
    "read_solutions_relative": Attack("attention.causal_mask", mask(ind("""
for up in range(1, 8):
    path = '../' * up + 'solutions/attention.py'
    try:
        text = open(path).read()
    except OSError:
        continue
    if 'BEGIN SOLUTION' in text:
        raise RuntimeError('read the solutions at ' + path)
"""), "Attack: read ../…/solutions/attention.py. Must hold: unreadable, so the grade stands."),
        root_only=True),
    "read_solutions_absolute": Attack("attention.causal_mask", mask(ind(f"""
for path in {[str(ROOT / 'solutions' / 'attention.py'), str(ROOT / 'autograde.toml')]!r}:
    try:
        open(path).read()
    except OSError:
        continue
    raise RuntimeError('read ' + path)
"""), "Attack: read the solutions and autograde.toml by absolute path. Must hold: both unreadable."),
        root_only=True),
    "import_solutions": Attack("attention.causal_mask", scenario="reads_solutions", status="forbidden"),
    "proc_environ_maps_fds": Attack("attention.causal_mask", mask(ind(f"""
for pid in ({os.getpid()}, 1):
    for what in ('environ', 'maps', 'mem', 'fd'):
        path = f'/proc/{{pid}}/{{what}}'
        try:
            if what == 'fd':
                for fd in os.listdir(path):
                    open(os.path.join(path, fd), 'rb').read(1)
            else:
                open(path, 'rb').read(4096)
        except OSError:
            continue
        raise RuntimeError('read ' + path)
"""), "Attack: read the grader's /proc/<pid>/environ, maps, mem and open its fds. Must hold: none is "
        "readable."), root_only=True),
    "proc_cmdline": Attack("attention.causal_mask", mask(ind(f"""
for pid in ({os.getpid()}, os.getppid()):
    try:
        data = open(f'/proc/{{pid}}/cmdline', 'rb').read()
    except OSError:
        continue
    if data and pid != os.getpid():
        raise RuntimeError('read the command line of ' + str(pid))
"""), "Attack: read the grader's /proc/<pid>/cmdline (a seed given as a flag is there). Must hold: "
        "the grader's processes are not visible."), root_only=True),
    "read_grader_package": Attack("attention.causal_mask", mask(ind(f"""
import glob
for path in glob.glob({str(ROOT / 'grader' / 'catalog' / '*.py')!r}) + glob.glob({str(ROOT / 'grader' / '*.py')!r}):
    try:
        open(path).read()
    except OSError:
        continue
    raise RuntimeError('read ' + path)
"""), "Attack: read the catalog's source (the references). Must hold: unreadable."), root_only=True),
    "import_grader_catalog": Attack("attention.causal_mask", mask(ind("""
import importlib
for name in ('grader.catalog', 'grader.catalog.attention', 'grader.config'):
    try:
        importlib.import_module(name)
    except ImportError:
        continue
    raise RuntimeError('imported ' + name)
"""), "Attack: import grader.catalog(.attention). Must hold: refused."),),
    "sys_modules_and_gc_hunt": Attack("attention.scaled_dot_product_attention", sdpa(ind("""
import gc, sys, types
for name in list(sys.modules):
    if name.startswith('grader.catalog') or name.startswith('grader.config'):
        raise RuntimeError('loaded: ' + name)
for obj in gc.get_objects():
    if isinstance(obj, types.FunctionType) and (getattr(obj, '__module__', '') or '').startswith('grader.catalog'):
        raise RuntimeError('found ' + obj.__qualname__)
""") + "\n" + SDPA_BODY, "Attack: hunt sys.modules and gc for the catalog. Must hold: nothing there.")),
    "exception_name_leaks_inputs": Attack("attention.scaled_dot_product_attention", sdpa(ind("""
name = 'V_' + '_'.join(f'{x:.6f}'.replace('.', 'p').replace('-', 'm') for x in Q.flatten()[:4].tolist())
print('LEAK', Q.flatten()[:4].tolist())
raise type(name, (Exception,), {})(str(Q.flatten()[:8].tolist()))
"""), "Attack: encode the inputs in an exception's type name and message. Must hold: an error, and no "
        "hidden case's report carries student text."), status="error"),
    # --- network and local IPC ----------------------------------------------------------
    "tcp_to_loopback": Attack("attention.causal_mask", mask(ind("""
import socket
try:
    socket.create_connection(('127.0.0.1', PORT), timeout=1).close()
except OSError:
    pass
else:
    raise RuntimeError('reached the host loopback')
""").replace("PORT", "{PORT}"),
        "Attack: connect to a service on the host's loopback. Must hold: unreachable."), root_only=True),
    "dns_lookup": Attack("attention.causal_mask", mask(ind("""
import socket
try:
    socket.getaddrinfo('example.com', 80)
except OSError:
    pass
else:
    raise RuntimeError('resolved a name')
"""), "Attack: resolve example.com. Must hold: no network."), root_only=True),
    "abstract_unix_socket": Attack("attention.causal_mask", mask(ind(f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect('\\0{ABSTRACT}')
except OSError:
    pass
else:
    raise RuntimeError('reached an abstract socket of the host')
"""), "Attack: connect to the host's abstract Unix socket. Must hold: unreachable (network namespace)."),
        root_only=True),
    "path_unix_socket": Attack("attention.causal_mask", mask(ind(f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect({str(PATH_SOCKET)!r})
except OSError:
    pass
else:
    raise RuntimeError('reached a path socket of the host')
"""), "Attack: connect to a world-writable path socket of the host. Must hold: unreachable."),
        root_only=True),
    "run_unix_socket": Attack("attention.causal_mask", mask(ind(f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect({str(RUN_SOCKET)!r})
except OSError:
    pass
else:
    raise RuntimeError('reached a socket of the host in /run')
"""), "Attack: connect to a world-writable socket in the host's /run (where services keep theirs). "
        "Must hold: unreachable (the child's /run is its own)."), root_only=True),
    "other_processes_visible": Attack("attention.causal_mask", mask(ind("""
others = [p for p in os.listdir('/proc') if p.isdigit() and os.stat(f'/proc/{p}').st_uid != os.getuid()]
if others:
    raise RuntimeError(f'{len(others)} processes of other users are visible, e.g. {others[:3]}')
"""), "Attack: list the processes of other users (the grader, other students). Must hold: none is visible."),
        root_only=True),
    "folder_disk_fill": Attack("attention.causal_mask", mask(ind("""
written = 0
try:
    for i in range(12):
        with open(f'fill{i}.bin', 'wb') as f:
            for _ in range(60):
                f.write(b'x' * (1 << 20))
                written += 1
except OSError as e:
    if e.errno != 28:
        raise
    for i in range(12):
        if os.path.exists(f'fill{i}.bin'):
            os.remove(f'fill{i}.bin')
if written > 300:
    raise RuntimeError(f'wrote {written} MiB into the working folder')
"""), "Attack: fill the working folder with files of 60 MiB each (every one under RLIMIT_FSIZE). "
        "Must hold: the folder's limit (256 MiB) stops it with ENOSPC; the host's disk is untouched."),
        root_only=True),
    "bind_socket_in_tmp": Attack("attention.causal_mask", mask(ind("""
import socket, tempfile
for folder in (tempfile.gettempdir(), '/tmp', '/dev/shm'):
    try:
        socket.socket(socket.AF_UNIX).bind(os.path.join(folder, f'adversarial-left-{os.getpid()}.sock'))
    except OSError:
        pass
"""), "Attack: leave a Unix socket file in the temp folder. Must hold: no new socket file there.")),
    "sysv_ipc": Attack("attention.causal_mask", mask(ind("""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.shmget(0x5EED0D, 1 << 20, 0o1666) < 0:
    raise OSError(ctypes.get_errno(), 'shmget')
if libc.msgget(0x5EED0E, 0o1666) < 0:
    raise OSError(ctypes.get_errno(), 'msgget')
if libc.semget(0x5EED0F, 4, 0o1666) < 0:
    raise OSError(ctypes.get_errno(), 'semget')
"""), "Attack: create a shm segment, a message queue and semaphores. Must hold: none outlives the child."),
        root_only=True),
    # --- forbidden APIs by indirection ---------------------------------------------------
    "forbidden_getattr": Attack("attention.scaled_dot_product_attention", scenario="forbidden_getattr",
                                status="forbidden"),
    "forbidden_mha_module": Attack("attention.multi_head_attention", scenario="forbidden_mha_module",
                                   status="forbidden"),
    "forbidden_importlib": Attack("attention.scaled_dot_product_attention", sdpa(ind("""
import importlib
fn = getattr(importlib.import_module('torch.nn.' + 'functional'), 'scaled_dot_product_' + 'attention')
out = fn(Q, K, V, attn_mask=mask)
scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
if mask is not None:
    scores = scores.masked_fill(~mask, float('-inf'))
return out, torch.softmax(scores, dim=-1)
"""), "Attack: reach F.scaled_dot_product_attention through importlib and built names. "
        "Must hold: forbidden."), status="forbidden"),
    "forbidden_aten_op": Attack("attention.scaled_dot_product_attention", sdpa(ind("""
op = getattr(torch.ops.aten, 'scaled_dot_product_' + 'attention')
out = op(Q, K, V, attn_mask=mask)
scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
if mask is not None:
    scores = scores.masked_fill(~mask, float('-inf'))
return out, torch.softmax(scores, dim=-1)
"""), "Attack: call torch.ops.aten.scaled_dot_product_attention. Must hold: forbidden."),
        status="forbidden", kernel_count=True),
    "forbidden_unwrapped": Attack("attention.scaled_dot_product_attention", sdpa(ind("""
import torch.nn.functional as F
fn = getattr(F, 'scaled_dot_product_' + 'attention')
fn = getattr(fn, '__wrapped__', fn)
out = fn(Q, K, V, attn_mask=mask)
scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
if mask is not None:
    scores = scores.masked_fill(~mask, float('-inf'))
return out, torch.softmax(scores, dim=-1)
"""), "Attack: call the original kept in the tripwire's __wrapped__. Must hold: forbidden."),
        status="forbidden", kernel_count=True),
    "environment_holds_no_seed": Attack("attention.causal_mask", mask(ind(f"""
for key, value in os.environ.items():
    if {str(SEED)!r} in value or {f"{SEED:x}"!r} in value.lower() or 'SEED' in key:
        raise RuntimeError('found the seed in ' + key)
"""), "Attack: look for the secret seed in the environment. Must hold: it is not there.")),
    # --- persistence -------------------------------------------------------------------
    "write_site_packages": Attack("attention.causal_mask", mask(ind(f"""
for path in ({str(SITE / 'adversarial_persist.pth')!r}, {str(USER_SITE / 'site-packages' / 'usercustomize.py')!r}):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write('import os\\n')
    except OSError:
        pass
"""), "Attack: plant a .pth in site-packages and a usercustomize.py. Must hold: neither appears."),
        root_only=True),
    "write_outside": Attack("attention.causal_mask", mask(ind(f"""
for path in ({str(CANARY / 'canary.txt')!r}, {str(CANARY / 'new.txt')!r},
             {str(ROOT / 'solutions' / 'attention.py')!r}, {str(ROOT / 'grader' / '__init__.py')!r},
             {str(ROOT / 'autograde.toml')!r}):
    try:
        with open(path, 'a') as f:
            f.write('pwned\\n')
    except OSError:
        pass
"""), "Attack: append to the canary, the solutions, the grader and the config. Must hold: all unchanged."),
        root_only=True),
    "poison_later_exercise": Attack("attention.positional_encoding", (
        "def positional_encoding(T, d_model):\n"
        "    'Attack: causal_mask planted sitecustomize.py and a torch.py in its folder for later children. '\n"
        "    'Must hold: this exercise still gets the real torch and passes.'\n"
        "    import os, math, torch\n    print(f'UID={os.getuid()}', flush=True)\n"
        "    if getattr(torch, 'POISONED', False):\n        raise RuntimeError('imported the planted torch')\n"
        "    pos = torch.arange(T, dtype=torch.float32).unsqueeze(1)\n"
        "    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))\n"
        "    pe = torch.zeros(T, d_model)\n    pe[:, 0::2] = torch.sin(pos * div)\n"
        "    pe[:, 1::2] = torch.cos(pos * div)[:, : d_model // 2]\n    return pe\n"),
        scenario=None),
    "leave_file_in_dev_shm": Attack("attention.causal_mask", mask(ind("""
for folder in ('/dev/shm', '/var/tmp'):
    try:
        with open(os.path.join(folder, 'adversarial-left-behind'), 'w') as f:
            f.write('for the next student')
    except OSError:
        pass
"""), "Attack: leave a file in /dev/shm or /var/tmp for a later submission. Must hold: none appears."),
        root_only=True),
    "background_daemon": Attack("attention.causal_mask", mask(ind("""
import time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in range(3):
            os.close(fd)
        time.sleep(300)
    os._exit(0)
time.sleep(0.1)
"""), "Attack: a double-forked daemon in its own session. Must hold: it dies with the child."),
        root_only=True),
}

POISON = ("def causal_mask(T):\n"
          "    'Plants torch.py and sitecustomize.py in the working folder and its parent.'\n"
          "    import os, torch\n    print(f'UID={os.getuid()}', flush=True)\n"
          "    for folder in ('.', '..'):\n"
          "        for name in ('torch.py', 'sitecustomize.py'):\n"
          "            try:\n"
          "                with open(os.path.join(folder, name), 'w') as f:\n"
          "                    f.write('POISONED = True\\nfrom math import *\\n')\n"
          "            except OSError:\n"
          "                pass\n"
          f"    return {CORRECT}\n")


def _hash_tree(paths) -> dict[str, str]:
    out = {}
    for base in paths:
        base = Path(base)
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []
        for p in files:
            try:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError as e:
                out[str(p)] = f"unreadable: {e}"
    return out


def _ipc() -> dict[str, set]:
    found = {}
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                next(f)
                found[kind] = {tuple(line.split()[:2]) for line in f if line.strip()}
        except OSError:
            found[kind] = set()
    return found


def _sockets() -> set[str]:
    found = set()
    for folder in {tempfile.gettempdir(), "/tmp", "/dev/shm", "/run", str(CANARY)}:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    found.add(entry.path)
            except OSError:
                pass
    return found - {str(PATH_SOCKET), str(RUN_SOCKET)}


SHARED = (SITE, USER_SITE, Path("/dev/shm"), Path("/var/tmp"))
# What an attack names what it leaves or plants (whoever owns it, the name alone fails the check).
PLANTED = ("adversarial", "sitecustomize", "usercustomize")


def _listing(folder: Path) -> dict[str, tuple[int, str]] | None:
    """Entry -> (owner uid, type) of a shared folder; None when it does not exist."""
    if not folder.is_dir():
        return None
    out = {}
    for entry in os.scandir(folder):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue            # gone between listing and stat: another process's, removed by it
        out[entry.name] = (st.st_uid, stat.filemode(st.st_mode))
    return out


def left_in_shared(before: dict, after: dict) -> list[str]:
    """What the attack left in the shared folders: a new entry owned by another uid than the grader's
    (as root every child runs as its own private uid, and nothing else on the machine does), or named as
    an attack names what it plants, or a .pth; in site-packages and the user site, also any entry that
    vanished (the attack may not remove anything there). Other processes of this machine (a test run
    using multiprocessing, a reinstall) come and go as the grader's own user in /dev/shm and /var/tmp:
    those are not the attack's."""
    found = []
    for folder in map(str, SHARED):
        old, new = before[folder] or {}, after[folder] or {}
        for name in new.keys() - old.keys():
            uid, mode = new[name]
            if uid != os.geteuid() or name.startswith(PLANTED) or name.endswith(".pth"):
                found.append(f"{folder}/{name} ({mode}, uid {uid}) appeared")
        if folder in (str(SITE), str(USER_SITE)):
            found += [f"{folder}/{name} vanished" for name in old.keys() - new.keys()]
            if (before[folder] is None) != (after[folder] is None):
                found.append(f"{folder} appeared or vanished")
    return found


def snapshot() -> dict:
    return {"files": _hash_tree([ROOT / "solutions", ROOT / "exercises", ROOT / "autograde.toml",
                                 ROOT / "grader", CANARY]),
            "listing": {str(folder): _listing(folder) for folder in SHARED}, "ipc": _ipc(), "sockets": _sockets()}


def _strings(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)
    else:
        yield str(obj)


@pytest.fixture(scope="module")
def hostile(config):
    """The seeded, short-limit config; the canary, listeners and no bytecode writing for the module."""
    (CANARY / "canary.txt").write_text("canary\n")
    os.chmod(CANARY, 0o777)
    os.chmod(CANARY / "canary.txt", 0o666)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    PORT_HOLDER["port"] = tcp.getsockname()[1]
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + ABSTRACT)
    abstract.listen(8)
    path = socket.socket(socket.AF_UNIX)
    path.bind(str(PATH_SOCKET))
    os.chmod(PATH_SOCKET, 0o777)
    path.listen(8)
    run = socket.socket(socket.AF_UNIX)
    if os.access("/run", os.W_OK):
        run.bind(str(RUN_SOCKET))
        os.chmod(RUN_SOCKET, 0o777)
        run.listen(8)
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        yield dataclasses.replace(config, secret_seed=SEED, call_timeout=3.0)
    finally:
        sys.dont_write_bytecode = before
        for s in (tcp, abstract, path, run):
            s.close()
        if RUN_SOCKET.is_socket():
            RUN_SOCKET.unlink()
        shutil.rmtree(CANARY, ignore_errors=True)


def _params():
    for name, attack in ATTACKS.items():
        marks = []
        if attack.root_only:
            marks.append(pytest.mark.skipif(ROOT_ONLY, reason="needs root: private uid and namespaces"))
        if attack.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=attack.xfail))
        if attack.kernel_count and native_watch.unavailable():
            marks.append(pytest.mark.xfail(strict=True, reason="no kernel count of forbidden kernels here ("
                                           f"{native_watch.unavailable()}): the in-child tripwires miss it"))
        yield pytest.param(name, id=name, marks=marks)


@pytest.mark.parametrize("name", list(_params()))
def test_attack(name, make_submission, grade_dir, hostile, handed_uids, request):
    attack = ATTACKS[name]
    if attack.status == "timeout":
        request.getfixturevalue("short_grace")
    if attack.scenario:
        folder = submission(attack.scenario)
    else:
        source = attack.source.replace("{PORT}", str(PORT_HOLDER["port"]))
        assert "Must hold" in source or name == "poison_later_exercise", "an attack states what must hold"
        overrides = {attack.target: source}
        if name == "poison_later_exercise":
            overrides["attention.causal_mask"] = POISON
        folder = make_submission(overrides)
    before = snapshot()
    start = time.monotonic()
    cfg = hostile if attack.call_timeout is None else dataclasses.replace(hostile, call_timeout=attack.call_timeout)
    result = grade_dir(folder, "attention", cfg=cfg)
    elapsed = time.monotonic() - start

    # 1. the grade is what the submission earned
    got = statuses(result)
    expected = {e: "passed" for e in OTHERS} | {attack.target: attack.status}
    messages = {e.id: e.message for e in result.exercises if e.status.value != expected.get(e.id)}
    assert got == expected, messages
    for e in result.exercises:
        assert e.points == (OTHERS[e.id] if expected[e.id] == "passed" else 0), (e.id, e.points)
    # 2. within its limits
    assert elapsed < attack.seconds, f"took {elapsed:.1f} s"
    # 3, 6. nothing outside the sandbox changed, no IPC object or socket left
    time.sleep(0.05)
    after = snapshot()
    changed = {k for k in before["files"].keys() | after["files"].keys()
               if before["files"].get(k) != after["files"].get(k)}
    assert not changed, changed
    assert not left_in_shared(before["listing"], after["listing"]), left_in_shared(before["listing"], after["listing"])
    assert {k: after["ipc"][k] - before["ipc"][k] for k in after["ipc"]} == {"shm": set(), "msg": set(), "sem": set()}
    assert after["sockets"] <= before["sockets"], after["sockets"] - before["sockets"]
    # 4. the seed appears in no output
    text = "\n".join(_strings(to_dict(result)))
    for form in (str(SEED), f"{SEED:x}", f"{SEED:X}", f"{SEED:#x}"):
        assert form not in text
    hidden = [c for e in result.exercises for c in e.cases if c.hidden]
    assert hidden, "hidden cases ran"
    for c in hidden:
        assert "V_" not in c.message and "LEAK" not in c.message and "[" not in c.description, c
    # 5. no process of the submission outlives its grading
    if os.geteuid() == 0:
        uids = attack_uids(result)
        if attack.source is not None:
            assert uids, "the attack printed its uid"
        assert uids <= handed_uids, (uids, handed_uids)
        uids = handed_uids          # every child's, the hidden cases' too
        left = left_of(uids)
        assert not left, left
        assert not groups_left(uids), groups_left(uids)
    json.dumps(to_dict(result))


SHARED_MEMORY = ("import os as _os\n"
                 "_HELD = bytearray(1200 << 20)      # the attack: 1.2 GiB held by every child, all its life\n"
                 "for _i in range(0, len(_HELD), 4096):\n    _HELD[_i] = 1\n")


@pytest.mark.skipif(ROOT_ONLY, reason="needs root: control groups")
def test_memory_is_one_budget_for_the_exercises_graded_at_once(make_submission, grade_dir, hostile, handed_uids):
    """Attack: every child of the submission holds 1.2 GiB from import on, each under its own exercise's
    limit (2,048 MiB plus headroom), the exercises graded three at once. Must hold: together they exceed
    the submission's budget, so not all of them complete, and the feedback names the submission's limit;
    graded one at a time (the same code) every exercise passes; no process of theirs is left."""
    source = (ROOT / "solutions" / "attention.py").read_text()
    prints = "print(f'UID={_os.getuid()}', flush=True)\n"
    folder = make_submission({"attention": SHARED_MEMORY + prints + source})
    alone = grade_dir(folder, "attention", cfg=dataclasses.replace(hostile, jobs=1))
    assert set(statuses(alone).values()) == {"passed"}, {e.id: e.message for e in alone.exercises}
    together = grade_dir(folder, "attention", cfg=dataclasses.replace(hostile, jobs=4))
    assert set(statuses(together).values()) != {"passed"}, statuses(together)
    said = [c.message for e in together.exercises for c in e.cases] + [e.message for e in together.exercises]
    assert any("memory limit of the whole submission" in m for m in said), \
        [(e.id, e.status.value, e.message) for e in together.exercises]
    uids = attack_uids(alone) | attack_uids(together)
    assert uids and uids <= handed_uids, (uids, handed_uids)
    left = left_of(handed_uids)
    assert not left, left


# --- cross-student effects in `grader batch` -------------------------------------------------------
# One batch, through the real command: an attacker per attack (students a_<attack>, graded first: the
# gradebook's order is by id) and one victim (z_victim, graded last, with --jobs 2 beside the last
# attacker). Each attacker's causal_mask leaves something for a later student, then returns the right
# answer; the victim's causal_mask looks for every one of them and, for each it finds, prints
# `FOUND <attack>` and returns a wrong mask. Per attack must hold: the victim's grade is full marks and
# it found nothing of that attack; the attacker earned its own full marks; after the batch nothing of the
# attacker remains on the host: no process of its uids, no file or socket named by it in the shared
# folders, no System V object of its keys.
TAG = f"adversarial-batch-{os.getpid()}"
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run")
BATCH_KEY = 0x5EEDB1
DAEMON = """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        for fd in range(3):
            os.close(fd)
        BODY
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.wait()
"""

# attack -> (attacker's body, victim's test: true if it sees the attack). The attackers earn full marks,
# except in batch_signals_others: what it kills includes its own child.
SELF_HARM = {"batch_signals_others"}
BATCH_ATTACKS: dict[str, tuple[str, str]] = {
    "batch_tmp_files": (ind(f"""
for folder in {SHARED_DIRS!r} + ('..', '.'):
    try:
        with open(os.path.join(folder, {TAG!r}), 'w') as f:
            f.write('for the next student')
    except OSError:
        pass
"""), f"any(os.path.exists(os.path.join(d, {TAG!r})) for d in {SHARED_DIRS!r} + ('..', '.'))"),
    "batch_daemon": (ind(DAEMON.replace("BODY", "pass")),
                     "any(os.stat(f'/proc/{p}').st_uid != os.getuid() for p in os.listdir('/proc') if p.isdigit())"),
    "batch_sysv_ipc": (ind(f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget({BATCH_KEY}, 1 << 20, 0o1666)
libc.msgget({BATCH_KEY + 1}, 0o1666)
libc.semget({BATCH_KEY + 2}, 4, 0o1666)
"""), f"__import__('ctypes').CDLL(None).shmget({BATCH_KEY}, 0, 0) >= 0 or "
          f"__import__('ctypes').CDLL(None).msgget({BATCH_KEY + 1}, 0) >= 0"),
    "batch_poisoned_folders": (ind(f"""
import glob
targets = ['.', '..'] + glob.glob('/tmp/grader-sandbox-*') + glob.glob('/tmp/grader-sandbox-*/*')
for folder in targets:
    for name in ('torch.py', 'sitecustomize.py', 'attention.py', {TAG + '.py'!r}):
        try:
            with open(os.path.join(folder, name), 'a') as f:
                f.write('POISONED = True  # ' + 'PLANTED' + '_BY_A\\n')
        except OSError:
            pass
"""), f"getattr(torch, 'POISONED', False) or any(os.path.exists(n) for n in ('torch.py', 'sitecustomize.py', "
          f"{TAG + '.py'!r}, '../torch.py')) or 'PLANTED' + '_BY_A' in open(__file__).read()"),
    "batch_unix_sockets": (ind(DAEMON.replace("BODY", f"""
        import socket
        held = []
        for path in [os.path.join(d, {TAG!r} + '.sock') for d in {SHARED_DIRS!r}] + ['\\0' + {TAG!r}]:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.bind(path)
                s.listen(4)
                held.append(s)
            except OSError:
                pass""")),
        f"any(__import__('socket').socket(__import__('socket').AF_UNIX).connect_ex(p) == 0 for p in "
        f"[os.path.join(d, {TAG!r} + '.sock') for d in {SHARED_DIRS!r}] + ['\\0' + {TAG!r}])"),
    "batch_posix_shm": (ind(f"""
from multiprocessing import resource_tracker, shared_memory
try:
    shm = shared_memory.SharedMemory(name={TAG + '-shm'!r}, create=True, size=4096)
    shm.buf[:5] = b'hello'
    resource_tracker.unregister(shm._name, 'shared_memory')
except OSError:
    pass
"""), f"__import__('multiprocessing.shared_memory').shared_memory.SharedMemory(name={TAG + '-shm'!r}) is not None"),
    "batch_signals_others": (ind(DAEMON.replace("BODY", """
        import signal
        for _ in range(600):
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(-1, sig)
                except OSError:
                    pass
            time.sleep(0.05)""")), "False"),
}


def _victim() -> str:
    checks = "\n".join(f"seen({name!r}, lambda: {test})" for name, (_, test) in BATCH_ATTACKS.items())
    body = ("found = []\n"
            "def seen(name, test):\n    try:\n        if test():\n            found.append(name)\n"
            "    except Exception:\n        pass\n" + checks +
            "\nfor name in found:\n    print('FOUND', name, flush=True)\n"
            "if found:\n    return torch.zeros(T, T, dtype=torch.bool)")
    return mask(ind(body), "Victim: finds nothing that an earlier student left. Must hold: full marks.")


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory):
    """The batch of every attacker and the victim, graded once for all the batch attacks."""
    from fixtures.batch.build import make_class, run_batch
    root = tmp_path_factory.mktemp("adversarial-batch")
    students = {f"a_{name}": {"causal_mask": mask(body, f"Attack {name}: leave it for a later student. "
                                                         "Must hold: the victim never sees it.")}
                for name, (body, _) in BATCH_ATTACKS.items()}
    students["z_victim"] = {"causal_mask": _victim()}
    before = snapshot()
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    start = time.monotonic()
    proc = run_batch(make_class(root / "subs", students), root / "out", "attention", extra=("--timeout", "3"),
                     env=env, timeout=300)
    elapsed = time.monotonic() - start
    import sqlite3
    db = sqlite3.connect(f"file:{root / 'out' / 'gradebook.sqlite'}?mode=ro", uri=True)
    try:
        results = {s: json.loads(r) for s, r in db.execute("SELECT student, result FROM submissions")}
    finally:
        db.close()
    time.sleep(0.1)
    return {"proc": proc, "results": results, "before": before, "after": snapshot(), "elapsed": elapsed}


def _exercise(results: dict, student: str, function: str) -> dict:
    return next(e for e in results[student]["exercises"] if e["id"] == f"attention.{function}")


@pytest.mark.skipif(ROOT_ONLY, reason="needs root: private uid and namespaces")
@pytest.mark.parametrize("name", list(BATCH_ATTACKS))
def test_batch_attack(name, batch_run):
    proc, results = batch_run["proc"], batch_run["results"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert batch_run["elapsed"] < 240, f"took {batch_run['elapsed']:.1f} s"
    victim = _exercise(results, "z_victim", "causal_mask")
    assert f"FOUND {name}" not in victim["output"], victim["output"]
    assert victim["status"] == "passed", victim["message"]
    assert sum(e["points"] for e in results["z_victim"]["exercises"]) == sum(OTHERS.values())
    attacker = results[f"a_{name}"]
    if name not in SELF_HARM:
        assert {e["id"]: e["status"] for e in attacker["exercises"]} == {e: "passed" for e in OTHERS}, \
            {e["id"]: e["message"] for e in attacker["exercises"]}
    # nothing of the attacker remains on the host
    uids = {int(w[4:]) for e in attacker["exercises"] for w in e["output"].split() if w.startswith("UID=")}
    assert uids, "the attack printed its uid"
    left = left_of(uids)
    assert not left, left
    for folder in SHARED_DIRS:
        assert not [n for n in os.listdir(folder) if n.startswith(TAG)], folder
    before, after = batch_run["before"], batch_run["after"]
    assert not left_in_shared(before["listing"], after["listing"])
    assert {k: after["ipc"][k] - before["ipc"][k] for k in after["ipc"]} == {"shm": set(), "msg": set(), "sem": set()}
    assert after["sockets"] <= before["sockets"], after["sockets"] - before["sockets"]
