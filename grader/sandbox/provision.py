"""What a sandboxed child is given, decided in the parent before it starts: its private folder
(the student's modules, owned by its private uid), its environment (an allow-list: no CI
token, no secret seed) and what it may read (Landlock: Python and its packages, system
folders, the kernel's views; not the grader package, not the course folder around it).
"""
from __future__ import annotations

import os
import shutil
import sys

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


def read_paths() -> list[str]:
    """What sandboxed code may read (Landlock): Python, its packages, system libraries and the
    kernel's views. Not the grader package (the child imports its trusted modules before it is
    confined, so it needs none of the files, and the catalog's references must stay unreadable),
    nor the course folder around it (solutions, configuration)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64", "/bin",
             "/proc", "/sys", "/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group"}
    root = package_root()
    for p in sys.path:
        if p and os.path.isdir(p) and os.path.abspath(p) != root:
            paths.add(os.path.abspath(p))
    allowed: list[str] = []
    for p in sorted(q for q in paths if os.path.exists(q)):
        allowed += _without_grader(p, root)
    return sorted(set(allowed))


def _without_grader(path: str, root: str) -> list[str]:
    """`path`, or, when the grader package lies beneath it (an installed, non-editable copy in
    site-packages; the project folder inside a prefix), the entries beside it on the way down,
    so that everything but the package stays readable (a Landlock rule cannot exclude a part)."""
    package = os.path.join(root, "grader")
    if not os.path.isdir(path) or not (package + os.sep).startswith(os.path.join(path, "")):
        return [path]
    if os.path.abspath(path) == os.path.abspath(package):
        return []
    out: list[str] = []
    for entry in os.listdir(path):
        full = os.path.join(path, entry)
        if (package + os.sep).startswith(os.path.join(full, "")):
            out += _without_grader(full, root)
        else:
            out.append(full)
    return out


def world_readable(path: str) -> bool:
    """Can a user who is neither owner nor group reach and read `path`?"""
    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for i in range(2, len(parts) + 1):
        st = os.stat(os.sep.join(parts[:i]) or os.sep)
        is_dir = os.path.isdir(os.sep.join(parts[:i]))
        if is_dir and not st.st_mode & 0o001:
            return False
    st = os.stat(path)
    return bool(st.st_mode & 0o004)


def chown_tree(root: str, uid: int) -> None:
    for dirpath, _, filenames in os.walk(root):
        os.chown(dirpath, uid, uid)
        for f in filenames:
            os.chown(os.path.join(dirpath, f), uid, uid)


def copy_submission(files: dict[str, str], workdir: str) -> None:
    """Write the module sources the child may import into its private working folder."""
    os.makedirs(workdir, exist_ok=True)
    for name, source in files.items():
        with open(os.path.join(workdir, name), "w", encoding="utf-8") as f:
            f.write(source)


def remove_workdir(workdir: str) -> None:
    shutil.rmtree(workdir, ignore_errors=True)
