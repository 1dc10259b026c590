"""Shared fixtures: one warm sandbox for the whole session, and builders of real submissions.

- `grade_dir(path, *names)` grades a submission folder/zip/notebook and returns a SubmissionResult;
- `make_submission(overrides)` writes a submission folder: every module of solutions/, with
  whole modules replaced (`{"attention": source}`) or single functions replaced
  (`{"attention.causal_mask": "def causal_mask(T): ..."}`);
- `mistake_source(module, variant)` reads `def <function>__<variant>` from
  tests/fixtures/mistakes/<module>.py and renames it to `<function>`;
- the scenario folders of tests/fixtures/submissions/ hold only what they change: grade
  `scenarios.submission(name)`, the real submission built from the solution (tests/scenarios.py).
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader.catalog import catalog, select
from grader.config import load_config
from grader.pipeline.engine import grade, limits_from, tripwire_targets
from grader.sandbox.runner import Sandbox
from scenarios import replace_function

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SESSION_SCRATCH = pytest.StashKey[str]()


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", help="rewrite tests/goldens/ from the current renderers")


def pytest_configure(config):
    """The scratch folders third-party code makes in the machine's shared /tmp go to a folder of the
    session's, removed at its end:
    - Dask's (every scheduler and worker makes one): a scheduler or client a test kills cannot remove
      its own, which Dask would otherwise leave in /tmp/dask-scratch-space;
    - torch's compiler cache (/tmp/torchinductor_<user>), made by whatever imports torch._dynamo
      (an Optimizer object does).
    Set in the environment for the processes the tests start (dask scheduler, dask worker, grader
    batch --cluster, the notebooks' kernels) and in Dask's configuration for this one, where dask
    was imported before. The sandbox's children never see either (their environment is an
    allow-list, their /tmp their own)."""
    scratch = tempfile.mkdtemp(prefix="grader-tests-")
    config.stash[SESSION_SCRATCH] = scratch
    os.environ["DASK_TEMPORARY_DIRECTORY"] = os.path.join(scratch, "dask")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch, "torchinductor")
    if "dask" in sys.modules:
        import dask
        dask.config.set({"temporary-directory": os.environ["DASK_TEMPORARY_DIRECTORY"]})


def pytest_unconfigure(config):
    scratch = config.stash.get(SESSION_SCRATCH, None)
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    from grader.cli import _end_helpers
    _end_helpers()      # the forkserver of the pools the tests ran here, collected, as `grader batch` does


@pytest.fixture(scope="session")
def config():
    return load_config(str(ROOT / "autograde.toml"), env={})


@pytest.fixture(scope="session")
def sandbox(config):
    """As `grader batch` makes it (grader.api.sandbox): the catalog's tripwires made in its zygote."""
    with Sandbox(limits_from(config), tripwire_targets(catalog().values())) as sb:
        yield sb


@pytest.fixture(scope="session")
def grade_dir(sandbox, config):
    def run(path, *names, cfg=None):
        return grade(str(path), select(list(names)), cfg or config, sandbox=sandbox)
    return run


@pytest.fixture
def short_grace(monkeypatch) -> float:
    """For an attack that runs past its call limit: the start-up grace of a fresh child's first call
    and import (grader.pipeline.run, 10 s for a loaded machine) cut to 5 s. Such an attack waits the
    grace out twice (two strikes in two fresh children); its length is not what those tests check,
    and the exercises graded beside the attack take milliseconds."""
    from grader.pipeline import imports, run
    for module in (run, imports):
        monkeypatch.setattr(module, "STARTUP_GRACE", 5.0)
    return 5.0


def mistake_source(module: str, variant: str) -> str:
    """`def f__variant(...)` from tests/fixtures/mistakes/<module>.py, renamed to `def f(...)`.

    `variant` is the full name (`causal_mask__inverted`) or a suffix unique in the file (`inverted`).
    """
    path = FIXTURES / "mistakes" / f"{module}.py"
    source = path.read_text()
    lines = source.splitlines()
    found = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
             and "__" in n.name and (n.name == variant or n.name.endswith(f"__{variant}"))]
    if len(found) != 1:
        raise KeyError(f"{len(found)} functions named like {variant} in {path}")
    node = found[0]
    text = "\n".join(lines[node.lineno - 1:node.end_lineno])
    return text.replace(f"def {node.name}(", f"def {node.name.split('__')[0]}(", 1)


@pytest.fixture
def make_submission(tmp_path):
    def build(overrides: dict[str, str] | None = None, name: str = "submission") -> Path:
        dest = tmp_path / name
        dest.mkdir()
        for f in SOLUTIONS.glob("*.py"):
            shutil.copy(f, dest / f.name)
        for key, source in (overrides or {}).items():
            if "." in key:
                module, function = key.split(".", 1)
                path = dest / f"{module}.py"
                path.write_text(replace_function(path.read_text(), function, source))
            else:
                (dest / f"{key}.py").write_text(source)
        return dest
    return build


def statuses(result):
    return {e.id: e.status.value for e in result.exercises}


def _rounds(entries):
    """Pack (exercise, variant) pairs into rounds with at most one variant per exercise."""
    rounds: list[dict[str, str]] = []
    for exercise, variant in entries:
        for r in rounds:
            if exercise not in r:
                r[exercise] = variant
                break
        else:
            rounds.append({exercise: variant})
    return rounds


def grade_variants(tmp_path_factory, grade_dir, entries, prefix):
    """Grade many known-mistake variants in few runs: each round is the worked solutions with at
    most one variant per exercise swapped in. Returns (exercise, variant) -> ExerciseResult."""
    results = {}
    for k, chosen in enumerate(_rounds(entries)):
        dest = tmp_path_factory.mktemp(f"{prefix}{k}")
        for f in SOLUTIONS.glob("*.py"):
            shutil.copy(f, dest / f.name)
        for exercise, variant in chosen.items():
            module, function = exercise.split(".")
            path = dest / f"{module}.py"
            source = mistake_source(module, f"{function}__{variant}")
            assert source.startswith(f"def {function}("), (exercise, variant)
            path.write_text(replace_function(path.read_text(), function, source))
        result = grade_dir(dest, *chosen)
        for e in result.exercises:
            results[(e.id, chosen[e.id])] = e
    return results


def attack_uids(result) -> set[int]:
    """The private uids an attack ran as: attacks print `UID=<n>` (as root each child has its own)."""
    return {int(w[4:]) for e in result.exercises for w in e.output.split()
            if w.startswith("UID=") and w[4:].isdigit()}


@pytest.fixture
def short_tmp():
    """A temp folder for a grader's processes (their TMPDIR), in the system temp folder rather than
    under pytest's deep tmp_path: short enough that multiprocessing's socket folder can lie inside a
    grader's own folder (grader.frontends.batch.workers). Removed after the test."""
    folder = tempfile.mkdtemp(prefix="gb-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def sandbox_folders_of(pid: int) -> list[Path]:
    """The temp folder's own folder of grading process `pid` (grader.sandbox.provision), if it has one."""
    return list(Path(tempfile.gettempdir()).glob(f"grader-sandbox-{pid}-*"))


# A statement (at indent 0; needs `os`): a helper in a session of its own that forks and exits in a loop,
# so that its pid keeps changing and a sweep of /proc falls behind. A kill must catch it all the same.
HOPPER = """
if os.fork() == 0:
    os.setsid()
    while True:
        try:
            if os.fork() != 0:
                os._exit(0)
        except OSError:
            pass
"""


def indented(text: str, spaces: int) -> str:
    """`text` (code) with every line indented by `spaces`."""
    return "\n".join(" " * spaces + line for line in text.strip("\n").splitlines())


@pytest.fixture
def handed_uids(monkeypatch) -> set[int]:
    """Every private uid the sandbox hands to a child during the test (grader.sandbox.uids.reserve):
    the children of hidden cases too, whose output (where an attack prints its uid) is not shown."""
    from grader.sandbox import uids
    handed: set[int] = set()
    reserve = uids.reserve

    def recorded():
        private = reserve()
        handed.add(private.uid)
        return private
    monkeypatch.setattr(uids, "reserve", recorded)
    return handed


def groups_left(uids: set[int]) -> list[str]:
    """The control-group folders of this process's children run as these uids that are still there
    (grader.sandbox.runner names them `grader-<pid>-<uid>`, perhaps inside a submission's group). A
    group is removed only once empty, so none left means no process of them is left, even one that
    forks and exits in a loop and so slips past a sweep of /proc."""
    from grader.sandbox import hierarchies
    names = {f"grader-{os.getpid()}-{uid}" for uid in uids}
    return sorted(os.path.join(folder, name) for base in set(hierarchies.bases().values())
                  for folder, subfolders, _ in os.walk(base) for name in subfolders if name in names)


def described(pids: list[int]) -> list[str]:
    """What a leftover process was doing, for a failure to say: its state, parent and uid, where it
    waited in the kernel, and its control groups (a member of none of its child's would have escaped
    the group's kill). A process already gone says so."""
    said = []
    for pid in pids:
        try:
            fields = _status(pid)
            with open(f"/proc/{pid}/wchan") as f:
                wchan = f.read().strip()
            with open(f"/proc/{pid}/cgroup") as f:
                groups = ",".join(line.strip() for line in f if "freezer" in line or "pids" in line or line[:2] == "0:")
        except OSError:
            said.append(f"{pid}: gone")
            continue
        said.append(f"{pid}: {' '.join(fields.get(k, '?').split()[0] for k in ('State', 'PPid', 'Uid'))} "
                    f"wchan={wchan or '-'} cgroup={groups}")
    return said


# Run as root, in a process of its own: take `uid` with room for two of its processes, and fork. The
# kernel keeps a count of each uid's processes (RLIMIT_NPROC: alive, or ended and not yet collected),
# and checks it at the fork in one step, so the fork fails (exit 1) exactly when a process of `uid`
# other than this one exists.
_UID_PROBE = """
import os, resource, sys
uid = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NPROC, (2, 2))
os.setgroups([])
os.setresgid(uid, uid, uid)
os.setresuid(uid, uid, uid)
try:
    pid = os.fork()
except BlockingIOError:
    sys.exit(1)
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
"""


def uid_in_use(uid: int) -> bool:
    """Whether any process of `uid` exists (a zombie not yet collected included), in the kernel's own
    words. Unlike a sweep of /proc (processes_of), which a process that forks and exits in a loop
    outruns (each pid is gone by the time its status is read), nothing slips past it. Root only."""
    probe = subprocess.run([sys.executable, "-I", "-S", "-c", _UID_PROBE, str(uid)], capture_output=True, text=True)
    if probe.returncode not in (0, 1):
        raise RuntimeError(f"the probe of uid {uid} failed: {probe.stderr.strip()}")
    return probe.returncode == 1


def left_of(uids: set[int], seconds: float = 5.0) -> list[str]:
    """What is left of the processes of these uids once their kill has had `seconds` to end them and
    their parents to collect them: [] for nothing; else a line for each uid that still has some,
    with what a sweep of /proc sees of them."""
    deadline = time.monotonic() + seconds
    while True:
        used = sorted(uid for uid in uids if uid_in_use(uid))
        if not used or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return [f"uid {uid} still has processes; live ones seen: {described(processes_of({uid})) or 'none'}"
            for uid in used]


def processes_running(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


# Runs a command as the child of a subreaper, then prints, as JSON, what the command left to the
# machine's pid 1: each process handed to the subreaper, up to a second after the command ended, by
# its command line, with the command's end code and the end of what it wrote to stderr. The command's
# descendants are named by the last command line seen while they ran (a zombie has none left): one
# handed on that ended before it was ever seen is "".
_HANDED_ON = """
import ctypes, json, os, subprocess, sys, threading, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
me, named = os.getpid(), {}                       # (pid, start time) -> command line


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def key(pid):
    fields = read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
    return pid, fields[19] if len(fields) > 19 else b""


def children(pid):
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    return [k for task in tasks for k in read(f"/proc/{pid}/task/{task}/children").decode().split()]


def look():
    todo = children(me)
    while todo:
        pid = todo.pop()
        line = read(f"/proc/{pid}/cmdline").replace(b"\\0", b" ").decode(errors="replace")
        if line or key(pid) not in named:       # the latest seen: a fork's before its exec is its parent's
            named[key(pid)] = line
        todo += children(pid)


command = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
err = []
drain = threading.Thread(target=lambda: err.append(command.stderr.read()), daemon=True)
drain.start()
while command.poll() is None:
    look()
    time.sleep(0.01)
drain.join(5)              # a descendant that kept stderr open is not waited for
handed, until = {}, time.monotonic() + 1.0
while time.monotonic() < until:
    look()
    for pid in children(me):
        handed.setdefault(key(pid), named.get(key(pid), ""))
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:    # what was handed and ended, collected once it is noted
            pass
    except ChildProcessError:
        pass
    time.sleep(0.01)
print(json.dumps([command.returncode, sorted(handed.values()), "".join(err)[-2000:]]))
"""


def handed_on(argv: list[str], **kw) -> tuple[int, list[str], str]:
    """`argv` run to its end (kw: subprocess.run's): its end code, what it left behind for pid 1 to
    collect (the command lines of its descendants that outlived it or ended uncollected), and the end of
    its stderr."""
    run = subprocess.run([sys.executable, "-c", _HANDED_ON, *argv], capture_output=True, text=True, **kw)
    assert run.returncode == 0, run.stderr[-2000:]
    code, handed, err = json.loads(run.stdout)
    return code, handed, err


def processes_of(uids: set[int]) -> list[int]:
    """Live (non-zombie) processes running as one of these uids: none may outlive its grading."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _status(int(entry))
        except OSError:
            continue
        if int(fields.get("Uid", "0").split()[0]) in uids and not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry))
    return found


def _status(pid: int) -> dict[str, str]:
    """The fields of /proc/<pid>/status (OSError once the process is gone)."""
    with open(f"/proc/{pid}/status") as f:
        return dict(line.split(":", 1) for line in f if ":" in line)


@pytest.fixture
def solution_modules(monkeypatch):
    """Every solutions/<module>.py imported (transformer imports attention as a sibling, as students' files do)."""
    import importlib
    monkeypatch.syspath_prepend(str(SOLUTIONS))
    names = [p.stem for p in sorted(SOLUTIONS.glob("*.py"))]
    before = {n: sys.modules.get(n) for n in names}
    try:
        yield {n: importlib.import_module(n) for n in names}
    finally:
        for n, old in before.items():
            if old is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = old
