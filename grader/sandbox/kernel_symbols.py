"""Where libtorch's kernels are: the library the child runs and the file offset of each overload
of a C++ function, read from its ELF dynamic symbol table (parsed here, once per process: no `nm`).
Used by grader.sandbox.native_watch, whose uprobes name a file and an offset."""
from __future__ import annotations

import functools
import importlib.util
import os
import struct


def library() -> str:
    """The libtorch the child runs (the same Python, so the same file): where the kernels live."""
    spec = importlib.util.find_spec("torch")
    origin = spec.origin if spec is not None and spec.origin else ""
    return os.path.realpath(os.path.join(os.path.dirname(origin), "lib", "libtorch_cpu.so"))


def mangled_prefix(name: str) -> bytes:
    """'at::native::softmax' -> b'_ZN2at6native7softmaxE': the start of every overload's symbol."""
    return b"_ZN" + b"".join(b"%d%s" % (len(p), p.encode()) for p in name.split("::")) + b"E"


@functools.lru_cache(maxsize=4)
def _symbols(path: str) -> tuple[bytes, dict[int, int]]:
    """(.dynstr, name offset -> file offset of the defined function) of an ELF64 little-endian library."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise OSError(f"{path} is not a 64-bit little-endian ELF library")
        phoff, shoff = struct.unpack_from("<QQ", head, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 54)
        loads = []
        for i in range(phnum):
            entry = os.pread(f.fileno(), 40, phoff + i * phentsize)
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack("<IIQQQQ", entry)
            if p_type == 1:                                       # PT_LOAD
                loads.append((p_vaddr, p_filesz, p_offset))
        sections = [struct.unpack("<IIQQQQIIQQ", os.pread(f.fileno(), 64, shoff + i * shentsize)) for i in range(shnum)]
        dynsym = next((s for s in sections if s[1] == 11), None)  # SHT_DYNSYM
        if dynsym is None:
            raise OSError(f"{path} has no dynamic symbol table")
        strtab = sections[dynsym[6]]
        names = os.pread(f.fileno(), strtab[5], strtab[4])
        table = os.pread(f.fileno(), dynsym[5], dynsym[4])
    functions = {}
    for st_name, st_info, _, st_shndx, st_value, _ in struct.iter_unpack("<IBBHQQ", table):
        if st_shndx and st_value and st_info & 0xF == 2:          # defined STT_FUNC
            for vaddr, size, offset in loads:
                if vaddr <= st_value < vaddr + size:
                    functions[st_name] = st_value - vaddr + offset
                    break
    return names, functions


@functools.lru_cache(maxsize=512)
def offsets(path: str, name: str) -> tuple[int, ...]:
    """File offsets of every overload of the C++ function `name` in the library at `path` (found once
    per process: each search scans the library's megabytes of symbol names, and every watched child
    asks again). One scan finds both spellings, `_ZN...` and a const method's `_ZNK...`, by the
    part they share (two scans took 2 ms a name, 0.2 s for the catalog's 97)."""
    names, functions = _symbols(path)
    shared = mangled_prefix(name)[3:]
    found = []
    start = names.find(shared)
    while start >= 0:
        for head in (b"\0_ZN", b"\0_ZNK"):
            symbol = start - len(head) + 1
            if names.startswith(head, symbol - 1) and symbol in functions:
                found.append(functions[symbol])
        start = names.find(shared, start + 1)
    return tuple(sorted(set(found)))
