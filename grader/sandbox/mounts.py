"""The child's own view of the filesystem: a mount namespace made in the child while it is still
root, before it drops to its private uid (grader.sandbox.confine).

- `/` is made private (rprivate): nothing mounted here reaches the host, nothing of the host's
  later mounts reaches here;
- `/tmp`, `/var/tmp`, `/dev/shm` and `/run` are fresh, empty tmpfs: the host's Unix sockets
  there (X11, a database's, the test suite's), other students' leftovers and the grader's own
  temporary files are not in them, and what the child leaves there vanishes with it;
- its working folder is a tmpfs of `folder_bytes` (the student's files copied in, owned by
  its uid): a disk fill stops with ENOSPC at the folder's limit, whatever the number of files,
  and nothing it writes reaches the host's disk;
- `/proc` is a procfs of its own with hidepid=invisible: the child sees only the processes of
  its own uid, not the grader's (command lines, whose flags may carry a seed) nor other children.
Each step the machine refuses is returned as a note, never silently skipped.
"""
from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
# Hidden from the child, each a fresh tmpfs (a size for those it may write: /dev/shm; the rest
# only hide what is there, Landlock lets it write nothing in them).
SCRATCH = {"/tmp": 1 << 20, "/var/tmp": 1 << 20, "/run": 1 << 20}


def private_view(workdir: str, uid: int, folder_bytes: int, libc=None) -> list[str]:
    """Enter a new mount namespace with the views above; returns notes on what could not be done."""
    libc = libc or ctypes.CDLL(None, use_errno=True)
    files = _read_flat(workdir)         # before /tmp is covered: the parent wrote them there
    if libc.unshare(CLONE_NEWNS) != 0 or not _mount(libc, None, "/", None, MS_REC | MS_PRIVATE):
        return ["no mount namespace (host sockets and temporary folders are visible)"]
    notes = []
    for path, size in SCRATCH.items():
        if os.path.isdir(path) and not os.path.islink(path) and \
                not _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777"):
            notes.append(f"no private {path}")
    if os.path.isdir("/dev/shm") and not _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                                                f"size={folder_bytes},mode=1777"):
        notes.append("no private /dev/shm")
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    if _mount(libc, "tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV,
              f"size={folder_bytes},mode=700,uid={uid},gid={uid}"):
        for name, data in files.items():
            path = os.path.join(workdir, name)
            with open(path, "wb") as f:
                f.write(data)
            os.chown(path, uid, uid)
    else:
        notes.append("no size limit on the working folder")
    for hide in ("hidepid=invisible", "hidepid=2"):
        if _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, hide):
            break
    else:
        notes.append("no private /proc (other processes are visible)")
    return notes


def _read_flat(workdir: str) -> dict[str, bytes]:
    """The files the parent put in the working folder (it writes no subfolders)."""
    out = {}
    for entry in os.scandir(workdir):
        if entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as f:
                out[entry.name] = f.read()
    return out


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
    args = [s.encode() if s is not None else None for s in (source, target, fstype)]
    return libc.mount(*args, ctypes.c_ulong(flags), data.encode() if data is not None else None) == 0
