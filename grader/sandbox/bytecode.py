"""The student's modules compiled once in the grading process, not once in every child that imports them.

A child imports the student's module, and the modules it imports, from the source in its own
folder. Compiling that source costs a child 0.5-3 ms (a fresh fork of the zygote, whose memory it
first copies as it writes), ~110 ms of CPU a full submission: each module is imported by 1 to 14
children. Instead, the parent compiles each source once and writes, beside each copy of it, the
file Python's import system reads before it compiles (`__pycache__/<module>.<tag>.pyc`): a
hash-checked pyc (PEP 552). The child's import uses it only if the hash of the source beside it is
the one it records (else it compiles the source, as before), and gives its code the source's path.

compile() runs nothing of the source: it translates it, as the static scan's parse reads it
(grader.pipeline.static). What the compiler says about a source (a SyntaxWarning, an invalid escape)
is the student's to read in the child's output, so a source that draws one gets no bytecode, nor
does one that does not compile: the child compiles those and says so itself, as it always did.
"""
from __future__ import annotations

import functools
import importlib.util
import marshal
import os
import re
import sys
import warnings

FOLDER = "__pycache__"
# The name the source is compiled under (the child's import gives the code its real path): a
# warning from the compiler about it is an error, so the source gets no bytecode.
_COMPILED_AS = "<a student's module, compiled by the grader>"
_AS_MODULE = re.escape(_COMPILED_AS) + r"\Z"       # warnings' filters match the module name: the file's, here
CHECKED_HASH = 0b11         # PEP 552 flags: the pyc is hash-based, and the hash is checked against the source


def write_beside(module: str, data: bytes, workdir: str) -> None:
    """The bytecode of `module`'s source `data` (`module`.py in `workdir`), written where the child's
    import looks for it; nothing if that source draws a warning or an error from the compiler."""
    pyc = compiled(data) if sys.implementation.cache_tag else None
    if pyc is None:
        return
    os.makedirs(os.path.join(workdir, FOLDER), exist_ok=True)
    with open(os.path.join(workdir, beside(module)), "wb") as f:
        f.write(pyc)


def beside(module: str) -> str:
    """Where the child's import looks for `module`'s bytecode, relative to the folder of its source."""
    return os.path.join(FOLDER, f"{module}.{sys.implementation.cache_tag}.pyc")


@functools.lru_cache(maxsize=64)
def compiled(data: bytes) -> bytes | None:
    """The hash-checked pyc of the source `data`, compiled as the child's import would (the bytes as
    read, its own future imports only, no -O); None if the compiler warns or fails."""
    first = warnings.filters[0] if warnings.filters else None
    if not (first and first[0] == "error" and first[3] is not None and first[3].pattern == _AS_MODULE):
        warnings.filterwarnings("error", module=_AS_MODULE)     # first, again if a filter came before it since
    try:
        code = compile(data, _COMPILED_AS, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError, RecursionError, MemoryError, Warning):     # the child compiles it
        return None
    return b"".join([importlib.util.MAGIC_NUMBER, CHECKED_HASH.to_bytes(4, "little"),
                     importlib.util.source_hash(data), marshal.dumps(code)])
