"""autograde.toml's text to its tables: the one reader of the file (grader.config validates what it holds,
the pytest plugin looks up [course] submission), so every problem with the file itself is said one way."""
from __future__ import annotations

import os
import tomllib
from typing import Any

from grader.errors import ConfigError


def read_toml(path: str) -> dict[str, Any]:
    """The tables of the TOML file at `path`; a UTF-8 BOM (Notepad writes one) is accepted. ConfigError
    naming the file and the fix for a missing file, a folder or a pipe, text that is not UTF-8, bad TOML."""
    try:
        if os.path.isdir(path):
            raise ConfigError(f"{path}: is a folder; name the autograde.toml file in it (--config {path.rstrip('/')}"
                              "/autograde.toml)")
        if not os.path.isfile(path) and os.path.exists(path):
            raise ConfigError(f"{path}: not a regular file (a pipe or a device); name the autograde.toml file")
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (run the grader from the course folder, or pass --config)") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path}, line {line}: not UTF-8 text (byte {raw[e.start]:#04x}, Latin-1 or Windows-1252 "
                          "perhaps); save the file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
