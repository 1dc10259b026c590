"""What a sandboxed child is given, decided in the parent before it starts: its private folder
(the student's modules, owned by its private uid), its environment (an allow-list: no CI
token, no secret seed) and what it may read (Landlock: Python and its packages, system
folders, the kernel's views; not the grader package, not the course folder around it).
"""
from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
from typing import Collection

from grader.sandbox import bytecode

# Only these variables reach student code: secrets in the grader's environment (a CI token,
# the instructor's seed) must not. OPENBLAS_* and OMP_* keep the numeric libraries correct.
_ENV_KEEP = ("PATH", "LANG", "LANGUAGE", "TZ", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
_ENV_KEEP_PREFIX = ("LC_", "OPENBLAS_", "MKL_", "OMP_")


def package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_environment(pkg_root: str, threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith(_ENV_KEEP_PREFIX)}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1", OMP_NUM_THREADS=str(threads),
               PYTHONPATH=pkg_root, HOME="/nonexistent")
    return env


def read_paths(modes: Modes | None = None) -> list[str]:
    """What sandboxed code may read (Landlock): Python, its packages, system libraries and the
    kernel's views. Not the grader package (the child imports its trusted modules before it is
    confined, so it needs none of the files, and the catalog's references must stay unreadable),
    nor the course folder around it (solutions, configuration). `modes`: the stats already taken
    for this decision (Modes)."""
    modes = modes or Modes()
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64", "/bin",
             "/proc", "/sys", "/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group"}
    root = package_root()
    for p in sys.path:
        if p and modes.is_dir(p) and os.path.abspath(p) != root:
            paths.add(os.path.abspath(p))
    allowed: list[str] = []
    for p in sorted(q for q in paths if modes.exists(q)):
        allowed += _without_grader(p, root, modes)
    return sorted(set(allowed))


def _without_grader(path: str, root: str, modes: Modes) -> list[str]:
    """`path`, or, when the grader package lies beneath it (an installed, non-editable copy in
    site-packages; the project folder inside a prefix), the entries beside it on the way down,
    so that everything but the package stays readable (a Landlock rule cannot exclude a part)."""
    package = os.path.join(root, "grader")
    if not modes.is_dir(path) or not (package + os.sep).startswith(os.path.join(path, "")):
        return [path]
    if os.path.abspath(path) == os.path.abspath(package):
        return []
    out: list[str] = []
    for entry in os.listdir(path):
        full = os.path.join(path, entry)
        if (package + os.sep).startswith(os.path.join(full, "")):
            out += _without_grader(full, root, modes)
        else:
            out.append(full)
    return out


def world_readable(paths: Collection[str], modes: Modes | None = None) -> bool:
    """Can a user who is neither owner nor group reach and read every one of `paths`?"""
    modes = modes or Modes()
    for path in paths:
        parts = os.path.abspath(path).split(os.sep)
        for i in range(2, len(parts) + 1):      # each folder on the way, then the path itself
            mode = modes.mode(os.sep.join(parts[:i]) or os.sep)
            if stat.S_ISDIR(mode) and not mode & 0o001:
                return False
        if not mode & 0o004:
            return False
    return True


class Modes:
    """Each path's mode, from one stat (symbolic links followed, as os.path.isdir and os.stat do), for
    the length of one decision: what a child may read, and whether others may read all of it. The
    read paths share their folders (/etc four times, the virtual environment's for each of its
    entries): stat'ing each one for every question asked of it took 72 stats for 16 read paths (in
    a plain Python; more with a longer sys.path), one stat a path takes 20."""

    def __init__(self) -> None:
        self._modes: dict[str, int | None] = {}

    def mode(self, path: str) -> int:
        """os.stat(path).st_mode (OSError when it cannot be stat'ed)."""
        mode = self._get(path)
        if mode is None:
            return os.stat(path).st_mode      # raises, as it did
        return mode

    def exists(self, path: str) -> bool:
        return self._get(path) is not None

    def is_dir(self, path: str) -> bool:
        mode = self._get(path)
        return mode is not None and stat.S_ISDIR(mode)

    def _get(self, path: str) -> int | None:
        if path not in self._modes:
            try:
                self._modes[path] = os.stat(path).st_mode
            except (OSError, ValueError):
                self._modes[path] = None
        return self._modes[path]


def chown_tree(root: str, uid: int) -> None:
    for dirpath, _, filenames in os.walk(root):
        os.chown(dirpath, uid, uid)
        for f in filenames:
            os.chown(os.path.join(dirpath, f), uid, uid)


def copy_submission(modules: dict[str, str], workdir: str, compiled: Collection[str] = ()) -> None:
    """Write the sources of the modules (name -> source) the child may import into its private working
    folder, and the bytecode of those of `compiled`, the ones it will import (grader.sandbox.bytecode)."""
    os.makedirs(workdir, exist_ok=True)
    for module, source in modules.items():
        data = source.encode("utf-8")
        with open(os.path.join(workdir, f"{module}.py"), "wb") as f:
            f.write(data)
        if module in compiled:
            bytecode.write_beside(module, data, workdir)


def remove_workdir(workdir: str) -> None:
    try:
        os.rmdir(workdir)       # a child's folder, empty on disk where its files were its own (Staged)
    except OSError:
        shutil.rmtree(workdir, ignore_errors=True)


class Staged:
    """One submission's files, written once into a folder of their own for all of its children: a
    child reads the ones it gets from here before it is confined and writes them into its private
    working folder itself (grader.sandbox.mounts), so the parent writes each file once a submission,
    not once a child (~0.45 ms of its CPU a child), and a child's folder on disk stays empty. Only
    for children that get a private uid, which cannot write here (grader.pipeline.context). A file
    is kept under the hash of its bytes: the same module salvaged, or as an importer gets it, is
    another file. Thread-safe: a submission's exercises are graded side by side."""

    def __init__(self) -> None:
        self.folder = ""
        self._kept: dict[str, list] = {}    # source -> [hash, its bytecode written? (None: not asked yet)]
        self._lock = threading.Lock()

    def for_child(self, modules: dict[str, str], compiled: Collection[str] = ()) -> tuple[str, list[list[str]]]:
        """(this folder, [name in the child's folder, name here]) for the sources of `modules` (name ->
        source) and the bytecode of those of `compiled`: what copy_submission would write."""
        pairs = []
        with self._lock:
            if not self.folder:
                self.folder = make_workdir("grader-files-")
            for module, source in modules.items():
                kept = self._kept.get(source)
                if kept is None:
                    data = source.encode("utf-8")
                    kept = self._kept[source] = [hashlib.sha256(data).hexdigest(), None]
                    self._write(f"{kept[0]}.py", data)
                pairs.append([f"{module}.py", f"{kept[0]}.py"])
                if module in compiled and kept[1] is None:      # compiled once a child is to import it
                    pyc = bytecode.compiled(source.encode("utf-8")) if sys.implementation.cache_tag else None
                    if pyc is not None:
                        self._write(f"{kept[0]}.pyc", pyc)
                    kept[1] = pyc is not None
                if module in compiled and kept[1]:
                    pairs.append([bytecode.beside(module), f"{kept[0]}.pyc"])
            return self.folder, pairs

    def _write(self, name: str, data: bytes) -> None:
        with open(os.path.join(self.folder, name), "wb") as f:
            f.write(data)

    def remove(self) -> None:
        with self._lock:
            if self.folder:
                remove_workdir(self.folder)
            self.folder, self._kept = "", {}


# -- working folders, and the stale ones of a grader killed from outside ---------------------------
# Every child's folder lies inside one folder per grading process, in the system temp folder, whose
# name records that process: grader-sandbox-<pid>-<start>-<boot>-<random>, <start> its start time in
# clock ticks since boot (/proc/<pid>/stat, field 22) and <boot> the first characters of the kernel's
# boot id, so a later process with the same pid, or a grader after a reboot, tells it is not its own.
# A grader killed with SIGKILL cannot clean up; the next one to start removes its folder instead.
_OWNED = re.compile(r"grader-sandbox-(\d+)-(\d+)-([0-9a-f]{8})-[A-Za-z0-9_]+")
_roots: dict[int, str] = {}     # pid -> this process's folder (per pid: a forked worker makes its own)
_roots_lock = threading.Lock()


def make_workdir(prefix: str = "grader-") -> str:
    """A fresh private folder (a child's, a cluster worker's copy of a submission) inside this
    grading process's own folder: removed with it, at exit or by the next grader after a kill."""
    return tempfile.mkdtemp(prefix=prefix, dir=_own_root())


def _own_root() -> str:
    pid = os.getpid()
    with _roots_lock:
        root = _roots.get(pid)
        if root is None or not os.path.isdir(root):
            root = tempfile.mkdtemp(prefix=f"grader-sandbox-{pid}-{_start_time(pid) or 0}-{_boot_id()}-")
            os.chmod(root, 0o711)   # children (private uids) reach their own folder; none can list the others
            _roots[pid] = root
            atexit.register(_remove_own, pid, root)
        return root


def _remove_own(pid: int, root: str) -> None:
    if os.getpid() == pid:      # a forked worker inherits the handler, not the folder
        shutil.rmtree(root, ignore_errors=True)


def _start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot); None when it does not exist or is a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    try:
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (IndexError, ValueError):
        return None


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8].lower()
    except OSError:
        return "0" * 8


def remove_stale_workdirs(tmp: str | None = None) -> list[str]:
    """Remove the folders (and the students' code in them) of grading processes that no longer
    exist; returns what was removed. Never a live grader's folder (batch workers grade side by side),
    never anything whose name, type (a folder, not a link) and owner (this user) do not say it is one."""
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    boot = _boot_id()
    for name in names:
        m = _OWNED.fullmatch(name)
        if m is None:
            continue
        path = os.path.join(tmp, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        pid, start = int(m.group(1)), int(m.group(2))
        if m.group(3) == boot and _start_time(pid) == start:
            continue                # its grader is alive
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
