"""Text a student chose, as text every output can hold.

Python strings can hold what no UTF-8 file can: lone surrogates. JSON carries them as escapes
(`"\\ud800"`: a message the child's code raised, a notebook's cell), and the file system's names
arrive with each byte that is not UTF-8 as one (os.fsdecode's surrogateescape: `b"\\xff"` is
`"\\udcff"`). One in a single student's exception message once stopped a whole class's batch at
its first report. So where such text enters the grading process (the wire from the child, a
notebook's JSON, a file's or a folder's name), it is made encodable here, the character shown as
its escape; the report filters show one that got past anyway (grader.reports.escape).
"""
from __future__ import annotations

import os


def encodable(text: str) -> str:
    """`text` with each lone surrogate written as its escape (`\\ud800`), everything else as it is."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def file_name(name: str) -> str:
    """A name the file system gave (os.listdir, a path), or text made of such names, as text: each
    byte that is not UTF-8 shown as its escape (`\\xff`), everything else as it is."""
    if name.isascii():
        return name
    try:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:          # a surrogate no file system byte decodes to: not a file's name
        return encodable(name)
