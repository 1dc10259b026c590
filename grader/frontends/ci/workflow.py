"""The GitHub Actions workflow `grader init-ci` writes, with the trusted values pinned in it.

Two flavours, both templates beside this file:
- `pull_request` (default): `pull_request_target`; the grader and autograde.toml from the base
  branch (checked out in trusted/), only the submission folder from the pull request (pr/);
- `classroom`: GitHub Classroom's push-triggered autograding, reporting through
  classroom-resources/autograding-grading-reporter.
The templates use `<< >>` and `<% %>` as jinja2 delimiters, so GitHub's own `${{ }}`
expressions pass through untouched; YAML is not HTML, so no autoescape.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grader import __version__
from grader.frontends.ci.pinning import sha256_of
from grader.config import Config

_ENV = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "templates")),
                   undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                   variable_start_string="<<", variable_end_string=">>",
                   block_start_string="<%", block_end_string="%>", comment_start_string="<#", comment_end_string="#>")

TORCH_INDEX = "https://download.pytorch.org/whl/cpu"   # the CPU wheel: the CUDA one is gigabytes


@dataclass(frozen=True)
class WorkflowOptions:
    flavour: str = "pull_request"          # or "classroom"
    names: tuple[str, ...] = ()            # exercises or modules of the assignment (empty: all)
    install: str = ""                      # pip requirement of the grader ("" : guessed, see default_install)
    min_score: str = ""                    # policy: "" = any failure fails; "70%" or "6.5" = threshold
    timeout_minutes: int = 30


def default_install(course_root: str) -> str:
    """The course repository itself when it holds the grader's source, else the pinned release."""
    pyproject = os.path.join(course_root, "pyproject.toml")
    if os.path.exists(pyproject):
        with open(pyproject, encoding="utf-8") as f:
            if 'name = "nn-grader"' in f.read():
                return "."
    return f"nn-grader=={__version__}"


def _relative(path: str, config: Config) -> str:
    return os.path.relpath(os.path.join(config.root, path), config.root).replace(os.sep, "/")


def render_workflow(config: Config, options: WorkflowOptions) -> str:
    """The workflow text for the course whose configuration is `config` (read from a file)."""
    if not config.path:
        raise ValueError("init-ci needs the course's autograde.toml (pass --config PATH)")
    pr = options.flavour == "pull_request"
    trusted = "trusted/" if pr else ""
    install = options.install or default_install(config.root)
    if install == ".":
        install = "./trusted" if pr else "."
    pip = ["python", "-m", "pip", "install", "--extra-index-url", TORCH_INDEX]
    if os.path.exists(os.path.join(config.root, "constraints.txt")):
        pip += ["-c", f"{trusted}constraints.txt"]
    config_rel = os.path.relpath(config.path, config.root).replace(os.sep, "/")
    submission = _relative(config.submission, config)
    grade = ["grader", "ci", *options.names, "--config", f"{trusted}{config_rel}",
             "--submission", f"pr/{submission}" if pr else submission, "--source-root", "pr" if pr else ".",
             "--out", "grader-results", "--secret-seed-file", "grader-seed",
             "--expect-config-sha256", sha256_of(config.path),
             "--expect-grader-version", __version__]
    if options.min_score:
        grade += ["--min-score", options.min_score]
    if not pr:
        grade.append("--classroom")
    template = _ENV.get_template("pull_request.yml.j2" if pr else "classroom.yml.j2")
    return template.render(version=__version__, submission=submission, seed_env=config.seed_env,
                           timeout_minutes=options.timeout_minutes,
                           install_command=shlex.join(pip + [install]), grade_command=shlex.join(grade))
