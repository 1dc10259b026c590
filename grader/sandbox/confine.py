"""Confinement of the sandboxed child, applied right after fork (Linux).

- its own control group, where the machine has one (grader.sandbox.cgroups): memory and
  processes of all its processes together, and a kill none of them can outrun;
- its own session and process group (killed as a group);
- rlimits: address space (what the zygote already mapped + the memory budget), file size, no core;
- as root: a fresh network namespace (no network), a fresh IPC namespace (System V shared
  memory, queues and semaphores are its own and vanish with it), a mount namespace of its own
  (grader.sandbox.mounts: private /tmp, /var/tmp, /dev/shm and /run, a size-limited working
  folder, a /proc that shows only its own processes), and a private uid: it cannot
  write the grader's files or signal its processes, runs at most MAX_PROCESSES at once, and
  keeps CAP_DAC_READ_SEARCH only when the Python installation is not readable by other users
  (a pyenv under /root, say);
- Landlock, where the kernel has it: writes only beneath the child's working folder (and /dev),
  reads only beneath the Python installation, system libraries and the working folder — not
  the grader package, nor the course folder with its solutions and configuration, nor secrets
  (grader.sandbox.provision decides the paths); no TCP bind or connect (ABI 4), no abstract Unix
  socket or signal reaching outside its own processes (ABI 6 scopes);
- a system-call filter (grader.sandbox.syscall_filter): nothing that would run a forbidden
  kernel uncounted by the native watch (its code page dropped, a helper's code written);
- no new privileges; killed when the zygote dies.
Each step that the machine cannot do is reported as a note, never silently skipped.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct

from grader.sandbox import cgroups, mounts, syscall_filter, zygote_pages

PR_SET_PDEATHSIG = 1
PR_SET_KEEPCAPS = 8
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
# Processes (threads included) the child's private uid may run at once: a fork bomb fails at fork()
# instead of filling the machine. Torch in the child runs one intra-op thread; 256 leaves room for
# a student's own worker processes and threads.
MAX_PROCESSES = 256
CAP_DAC_READ_SEARCH = 2
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_SYS_CAPSET = 126

# Landlock filesystem write rights (ABI 1), plus REFER (ABI 2) and TRUNCATE (ABI 3).
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_LL_READ = _LL_EXECUTE | _LL_READ_FILE | _LL_READ_DIR
_LL_WRITE = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
_LL_REFER, _LL_TRUNCATE = 1 << 13, 1 << 14
_LL_FILE_ONLY = _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | _LL_TRUNCATE   # rights a file rule may carry
_LL_NET_TCP = 1 << 0 | 1 << 1                   # LANDLOCK_ACCESS_NET_BIND_TCP, _CONNECT_TCP (ABI 4): none allowed
_LL_SCOPES = 1 << 0 | 1 << 1                    # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, _SIGNAL (ABI 6)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def confine(workdir: str, memory_bytes: int, file_bytes: int, uid: int | None, isolate_network: bool,
            read_paths: list[str] = (), keep_read_cap: bool = True, cgroup_procs: list[str] = (),
            cgroup_missing: list[str] = (), folder_bytes: int = 256 << 20,
            files: dict[str, bytes] | None = None, processes: bool = True) -> list[str]:
    """`files`: what to write into the working folder (name -> bytes), None when it holds them already;
    `processes`: whether the child may start processes (grader.sandbox.syscall_filter; threads may)."""
    notes: list[str] = []
    libc = _libc()
    missing = list(cgroup_missing) + cgroups.join(list(cgroup_procs))   # first: all it starts is a member
    if "cgroups" in missing:
        notes.append("no control group (memory and process limits are per process)")
    elif missing:
        notes.append(f"no {', '.join(missing)} control group (those limits are per process)")
    os.setsid()
    if memory_bytes > 0:
        limit = _vm_size() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)     # writes past the cap fail instead of killing
    os.environ["TMPDIR"] = workdir
    if os.geteuid() == 0 and uid:
        if isolate_network and libc.unshare(CLONE_NEWNET) != 0:
            notes.append("no network namespace")
        if libc.unshare(CLONE_NEWIPC) != 0:      # System V IPC objects die with the child's namespace
            notes.append("no IPC namespace")
        notes += mounts.private_view(workdir, uid, folder_bytes, libc, read_paths, files)
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))   # counted per uid
        _drop_to(uid, libc, keep_read_cap)
    elif files is not None:             # no private view: the folder on disk gets them
        mounts.write_files(workdir, files, None)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if not _landlock(workdir, list(read_paths), libc):
        notes.append("no Landlock")
    if not syscall_filter.install(libc, zygote_pages.code, processes):
        notes.append("no system-call filter")
    if not zygote_pages.sealed:
        notes.append("libtorch's code not sealed")
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)   # after setuid, which clears it
    return notes


def _drop_to(uid: int, libc, keep_read_cap: bool) -> None:
    """Become `uid` with no capabilities, or only CAP_DAC_READ_SEARCH (read and search any file)."""
    libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    header = struct.pack("Ii", 0x20080522, 0)               # _LINUX_CAPABILITY_VERSION_3, this thread
    keep = (1 << CAP_DAC_READ_SEARCH) if keep_read_cap else 0
    data = struct.pack("6I", keep, keep, 0, 0, 0, 0)          # effective, permitted, inheritable (x2 words)
    hbuf, dbuf = ctypes.create_string_buffer(header), ctypes.create_string_buffer(data)
    if libc.syscall(_SYS_CAPSET, hbuf, dbuf) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _landlock(workdir: str, read_paths: list[str], libc) -> bool:
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, 1)
    if abi < 1:
        return False
    handled = _LL_READ | _LL_WRITE | (_LL_REFER if abi >= 2 else 0) | (_LL_TRUNCATE if abi >= 3 else 0)
    fields = [handled] + ([_LL_NET_TCP] if abi >= 4 else []) + ([_LL_SCOPES] if abi >= 6 else [])
    attr = ctypes.create_string_buffer(struct.pack(f"{len(fields)}Q", *fields))
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, attr, 8 * len(fields), 0)
    if ruleset < 0:
        return False
    writable = _LL_READ | _LL_WRITE_FILE | (_LL_TRUNCATE if abi >= 3 else 0)
    rules = [(workdir, handled), ("/dev", writable)] + [(p, _LL_READ) for p in read_paths]
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    rights &= _LL_FILE_ONLY
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights & handled, fd))
                if libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, 1, rule, 0) != 0:
                    return False
            finally:
                os.close(fd)
        return libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) == 0
    finally:
        os.close(ruleset)
