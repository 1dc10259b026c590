"""The CSV files an instructor hands the grader (the export's roster, [deadline]'s extensions_csv and
times_csv), read one way: a header row, then one row per student.

Every problem is the caller's UsageError naming the file (and the line) and the fix, never a traceback:
no such file, a folder or a FIFO, text that is not UTF-8 (a BOM is accepted, as Excel writes one), fields
separated by semicolons or tabs, a row with more fields than its header (an unquoted "Lovelace, Ada",
a trailing comma). A row with fewer fields has the missing ones empty; a blank line is skipped.
"""
from __future__ import annotations

import csv
import os
import stat
from typing import Callable, NamedTuple

from grader.errors import UsageError

SAVE_AS_UTF8 = "save it as UTF-8 (in Excel: Save As, 'CSV UTF-8 (Comma delimited)')"


class Table(NamedTuple):
    header: list[str]                           # each column's name, as key() made it
    rows: list[tuple[int, dict[str, str]]]      # (line number, column -> value stripped)


def _plain_key(header: str) -> str:
    return header.strip().lower()


def read(path: str, named: str, error: type[UsageError], key: Callable[[str], str] = _plain_key,
         missing: str = "") -> Table:
    """The table in the CSV file at `path`; `named` is how a message names it (the flag or the key that gave
    it), `missing` what is added to "no such file"; every problem is `error`."""
    _a_regular_file(path, named, error, missing)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = [key(h) for h in next((r for r in reader if r), [])]
            _separated_by_commas(path, header, error)
            rows = []
            for fields in reader:
                if len(fields) > len(header):
                    raise error(f"{path}, line {reader.line_num}: {len(fields)} fields but the header has "
                                f"{len(header)}; put a value that holds a comma in double quotes (\"Lovelace, "
                                "Ada\") and remove any comma at the end of the line")
                if fields:         # a blank line is skipped, as csv.DictReader skips it
                    values = [v.strip() for v in fields] + [""] * (len(header) - len(fields))
                    rows.append((reader.line_num, dict(zip(header, values))))
    except UnicodeDecodeError:
        raise error(f"{named}: not UTF-8 text{_encoding_hint(path)}; {SAVE_AS_UTF8}") from None
    except csv.Error as e:
        raise error(f"{path}, line {reader.line_num}: {e}; {SAVE_AS_UTF8}, as a plain CSV") from None
    except OSError as e:
        raise error(f"{named}: cannot be read: {e.strerror or e}") from None
    return Table(header, rows)


def _a_regular_file(path: str, named: str, error: type[UsageError], missing: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error(f"{named}: no such file{missing}") from None
    except OSError as e:
        raise error(f"{named}: cannot be read: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{named}: is a folder; name the CSV file in it")
    if not stat.S_ISREG(mode):
        raise error(f"{named}: not a regular file (a pipe or a device); name a CSV file")


def _separated_by_commas(path: str, header: list[str], error: type[UsageError]) -> None:
    if len(header) == 1:
        for sep, name in ((";", "semicolons"), ("\t", "tabs")):
            if sep in header[0]:
                raise error(f"{path}: the fields are separated by {name} (line 1: {header[0]!r}); save it "
                            "with commas between the fields (a comma-separated CSV)")


def _encoding_hint(path: str) -> str:
    with open(path, "rb") as f:
        start = f.read(2)
    return " (it is UTF-16)" if start in (b"\xff\xfe", b"\xfe\xff") else " (Latin-1 or Windows-1252, perhaps)"
