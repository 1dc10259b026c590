"""Build the Gradescope autograder bundle (layout: grader.frontends.gradescope's docstring).

The bundle is reproducible: entries sorted, fixed timestamps, so the same grader, configuration
and options give the same bytes.
"""
from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass
from importlib import metadata

import grader
from grader.frontends.ci.pinning import sha256_of
from grader.config import Config

FILES = os.path.join(os.path.dirname(__file__), "files")
FALLBACK_REQUIREMENTS = ("torch==2.13.0", "numpy>=1.26", "jinja2>=3.1")
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Bundle:
    path: str
    names: tuple[str, ...]
    hidden: bool
    entries: tuple[str, ...]


def requirements() -> list[str]:
    """The grader's runtime dependencies, from its installed metadata (extras left out)."""
    try:
        reqs = metadata.requires("nn-grader") or []
    except metadata.PackageNotFoundError:
        return list(FALLBACK_REQUIREMENTS)
    return [r for r in reqs if "extra ==" not in r] or list(FALLBACK_REQUIREMENTS)


def constraints(config: Config) -> str:
    path = os.path.join(config.root, "constraints.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return f.read()
    import torch
    return f"torch=={torch.__version__.split('+')[0]}\n"


def _package_files() -> list[tuple[str, str]]:
    """(path on disk, name in the bundle) for the grader package's source, caches left out."""
    pkg = os.path.dirname(os.path.abspath(grader.__file__))
    out = []
    for folder, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")) or name.startswith("."):
                continue
            full = os.path.join(folder, name)
            out.append((full, "lib/grader/" + os.path.relpath(full, pkg).replace(os.sep, "/")))
    return out


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _add(zf: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def build(config: Config, names: tuple[str, ...], out: str, secret_seed: int | None) -> Bundle:
    if not config.path:
        raise ValueError("a bundle needs the course's autograde.toml (pass --config PATH)")
    toml = _read(config.path)
    manifest = {"grader_version": grader.__version__, "names": list(names), "config_sha256": sha256_of(config.path),
                "hidden_cases": secret_seed is not None, "hidden_visibility": config.visibility}
    entries: dict[str, tuple[bytes, bool]] = {
        "setup.sh": (_read(os.path.join(FILES, "setup.sh")), True),
        "run_autograder": (_read(os.path.join(FILES, "run_autograder")), True),
        "autograde.toml": (toml, False),
        "bundle.json": (json.dumps(manifest, indent=2).encode() + b"\n", False),
        "requirements.txt": ("\n".join(requirements()).encode() + b"\n", False),
        "constraints.txt": (constraints(config).encode(), False),
    }
    if secret_seed is not None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", config.seed_env):
            raise ValueError(f"[hidden] seed_env = {config.seed_env!r} is not a valid environment variable name")
        entries["grader.env"] = (f"{config.seed_env}={secret_seed}\n".encode(), False)
    for disk, name in _package_files():
        entries[name] = (_read(disk), False)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with zipfile.ZipFile(out, "w") as zf:
        for name in sorted(entries):
            data, executable = entries[name]
            _add(zf, name, data, executable)
    return Bundle(out, names, secret_seed is not None, tuple(sorted(entries)))
