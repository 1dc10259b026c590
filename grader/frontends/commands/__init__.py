"""Subcommands of `grader`; each module registers one (see grader.cli)."""
from __future__ import annotations

import os

from grader.config import Config, load_config


def add_config_argument(parser) -> None:
    parser.add_argument("--config", metavar="PATH", help="course configuration (default: ./autograde.toml if present)")


def config_from(args, **overrides) -> Config:
    path = args.config or ("autograde.toml" if os.path.exists("autograde.toml") else None)
    from grader.catalog import catalog
    return load_config(path, overrides=overrides, known_exercises=set(catalog()))


def resolve(config: Config, path: str) -> str:
    """A path from the configuration, relative to the folder of autograde.toml."""
    return path if os.path.isabs(path) else os.path.relpath(os.path.join(config.root, path))
