"""The child's own view of the filesystem: a mount namespace made in the child while it is still
root, before it drops to its private uid (grader.sandbox.confine).

- `/` is made private (rprivate): nothing mounted here reaches the host, nothing of the host's
  later mounts reaches here;
- `/tmp`, `/var/tmp`, `/dev/shm` and `/run` are fresh, empty tmpfs: the host's Unix sockets
  there (X11, a database's, the test suite's), other students' leftovers and the grader's own
  temporary files are not in them, and what the child leaves there vanishes with it. What the
  child may read that lives beneath one of them (a clone in /tmp with its .venv: Python's
  packages) is bound back, read-only, at its own path, and nothing else of the folder;
- its working folder is a tmpfs of `folder_bytes` (the student's files and their bytecode,
  grader.sandbox.bytecode, copied in, owned by its uid): a disk fill stops with ENOSPC at the
  folder's limit, whatever the number of files, and nothing it writes reaches the host's disk;
- `/proc` is a procfs of its own with hidepid=invisible: the child sees only the processes of
  its own uid, not the grader's (command lines, whose flags may carry a seed) nor other children;
- `/dev/ptmx` and `/dev/pts/ptmx`, where terminals are made, are `/dev/null`: the machine's terminals
  (4096, kernel.pty.max) are one pool for every process, and a red team's child took 50 a call
  with descriptors enough for all of them, which would leave none to anyone (ssh, tmux) while it ran.
Each step the machine refuses is returned as a note, never silently skipped.
"""
from __future__ import annotations

import ctypes
import os

from grader.sandbox import bytecode

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = \
    1, 2, 4, 8, 32, 4096, 1 << 14, 1 << 18
# Hidden from the child, each a fresh tmpfs (a size for those it may write: /dev/shm; the rest
# only hide what is there, Landlock lets it write nothing in them).
SCRATCH = {"/tmp": 1 << 20, "/var/tmp": 1 << 20, "/run": 1 << 20}
PTY_MAKERS = ("/dev/ptmx", "/dev/pts/ptmx")


def private_view(workdir: str, uid: int, folder_bytes: int, libc=None, read_paths=(),
                 files: dict[str, bytes] | None = None) -> list[str]:
    """Enter a new mount namespace with the views above; returns notes on what could not be done.
    `read_paths`: what the child may read (Landlock's list); those beneath a hidden folder stay.
    `files`: the working folder's files (name -> bytes), read from a staging folder before /tmp was
    covered (grader.sandbox.provision.Staged); None: the parent wrote them into the folder."""
    libc = libc or ctypes.CDLL(None, use_errno=True)
    staged = files is not None
    files = files if staged else _read_flat(workdir)    # before /tmp is covered: the parent wrote them there
    if libc.unshare(CLONE_NEWNS) != 0 or not _mount(libc, None, "/", None, MS_REC | MS_PRIVATE):
        if staged:                      # the folder on disk gets them, as when the parent wrote them
            write_files(workdir, files, uid)
        return ["no mount namespace (host sockets and temporary folders are visible)"]
    notes = []
    for path, size in SCRATCH.items():
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        kept = _beneath(path, read_paths)
        if path in kept:
            notes.append(f"no private {path} (Python or its packages live there)")
            continue
        held = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in kept if os.path.exists(p)}
        try:
            if not _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777"):
                notes.append(f"no private {path}")
            elif not all(_bind_back(libc, p, fd) for p, fd in held.items()):
                notes.append(f"Python's files beneath {path} not all visible")
        finally:
            for fd in held.values():
                os.close(fd)
    if os.path.isdir("/dev/shm") and not _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                                                f"size={folder_bytes},mode=1777"):
        notes.append("no private /dev/shm")
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    if _mount(libc, "tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={folder_bytes},mode=700,uid={uid},gid={uid}"):
        write_files(workdir, files, uid)
    else:
        if staged:
            write_files(workdir, files, uid)
        notes.append("no size limit on the working folder")
    for path in PTY_MAKERS:
        if os.path.exists(path) and not _mount(libc, "/dev/null", path, None, MS_BIND):
            notes.append(f"{path} not covered (the child can take the machine's terminals)")
    for hide in ("hidepid=invisible", "hidepid=2"):
        if _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, hide):
            break
    else:
        notes.append("no private /proc (other processes are visible)")
    return notes


def write_files(workdir: str, files: dict[str, bytes], uid: int | None) -> None:
    """Write `files` (name in the folder -> bytes; a name has at most one subfolder) into `workdir`,
    owned by `uid` (None: by whoever writes them)."""
    for name, data in files.items():
        path = os.path.join(workdir, name)
        if not os.path.isdir(os.path.dirname(path)):
            os.mkdir(os.path.dirname(path), 0o700)
            if uid is not None:
                os.chown(os.path.dirname(path), uid, uid)
        with open(path, "wb") as f:
            f.write(data)
        if uid is not None:
            os.chown(path, uid, uid)


def _beneath(folder: str, paths) -> list[str]:
    """The outermost of `paths` that lie in `folder` (or are it)."""
    under = sorted(os.path.abspath(p) for p in paths
                   if os.path.abspath(p) == folder or os.path.abspath(p).startswith(folder + os.sep))
    outer: list[str] = []
    for p in under:
        if not any(p == o or p.startswith(o + os.sep) for o in outer):
            outer.append(p)
    return outer


def _bind_back(libc, path: str, fd: int) -> bool:
    """Mount what `fd` held before its folder was covered at `path` again, read-only."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    source = f"/proc/self/fd/{fd}"
    if not _mount(libc, source, path, None, MS_BIND | MS_REC):
        return False
    _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)   # Landlock holds anyway
    return True


def _read_flat(workdir: str) -> dict[str, bytes]:
    """The files the parent put in the working folder and in its bytecode folder, by their paths in
    it (it writes no other subfolder: grader.sandbox.provision.copy_submission)."""
    out = {}
    for folder in ("", bytecode.FOLDER):
        path = os.path.join(workdir, folder)
        if folder and (os.path.islink(path) or not os.path.isdir(path)):
            continue
        for entry in os.scandir(path):
            if entry.is_file(follow_symlinks=False):
                with open(entry.path, "rb") as f:
                    out[os.path.join(folder, entry.name)] = f.read()
    return out


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
    args = [s.encode() if s is not None else None for s in (source, target, fstype)]
    return libc.mount(*args, ctypes.c_ulong(flags), data.encode() if data is not None else None) == 0
