"""The GitHub Actions workflow `grader init-ci` writes, with the trusted values pinned in it.

Two flavours, both templates beside this file:
- `pull_request` (default): `pull_request_target`; the grader and autograde.toml from the base
  branch (checked out in trusted/), only the submission folder from the pull request (pr/);
- `classroom`: GitHub Classroom's push-triggered autograding, reporting through
  classroom-resources/autograding-grading-reporter.
The templates use `<< >>` and `<% %>` as jinja2 delimiters, so GitHub's own `${{ }}`
expressions pass through untouched; YAML is not HTML, so no autoescape.

Every action is pinned by the 40-hex commit its release tag points to (ACTIONS; a tag can be
moved, a commit cannot), the tag kept in a comment for people and Dependabot. pip's download
cache is keyed on constraints.txt (on the install command where the course has none). The
secret-seed step warns in the job summary when the secret is empty: hidden cases are then off.
"""
from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grader import __version__
from grader.frontends.ci.pinning import sha256_of
from grader.config import Config

_ENV = Environment(loader=FileSystemLoader(os.path.join(os.path.dirname(__file__), "templates")),
                   undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                   trim_blocks=True, lstrip_blocks=True,
                   variable_start_string="<<", variable_end_string=">>",
                   block_start_string="<%", block_end_string="%>", comment_start_string="<#", comment_end_string="#>")

TORCH_INDEX = "https://download.pytorch.org/whl/cpu"   # the CPU wheel: the CUDA one is gigabytes

# name in the templates -> (action, commit, the release tag that commit is). Commits read from the
# actions' own repositories (`git rev-parse <tag>^{commit}`); to update, take the newest release
# tag's commit the same way and change both columns together.
ACTIONS = {
    "checkout": ("actions/checkout", "11d5960a326750d5838078e36cf38b85af677262", "v4.4.0"),
    "setup_python": ("actions/setup-python", "a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "cache_restore": ("actions/cache/restore", "0057852bfaa89a56745cba8c7296529d2fc39830", "v4.3.0"),
    "cache_save": ("actions/cache/save", "0057852bfaa89a56745cba8c7296529d2fc39830", "v4.3.0"),
    "upload_artifact": ("actions/upload-artifact", "ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "classroom_reporter": ("classroom-resources/autograding-grading-reporter",
                           "d13b5912daf5042ac1b71bc38bdb4a6bcd61d8ca", "v1"),
}


def uses(name: str) -> str:
    """The `uses:` value of an action: `owner/repo@<commit> # <tag>`."""
    action, commit, tag = ACTIONS[name]
    return f"{action}@{commit} # {tag}"


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
    constraints = os.path.exists(os.path.join(config.root, "constraints.txt"))
    if constraints:
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
    install_command = shlex.join(pip + [install])
    if constraints:
        cache_source, digest = f"{trusted}constraints.txt", f"${{{{ hashFiles('{trusted}constraints.txt') }}}}"
    else:
        cache_source = "the install command (the course has no constraints.txt)"
        digest = hashlib.sha256(install_command.encode()).hexdigest()[:16]
    template = _ENV.get_template("pull_request.yml.j2" if pr else "classroom.yml.j2")
    return template.render(version=__version__, submission=submission, seed_env=config.seed_env,
                           timeout_minutes=options.timeout_minutes, install_command=install_command,
                           grade_command=shlex.join(grade), actions={name: uses(name) for name in ACTIONS},
                           constraints=constraints, cache_source=cache_source,
                           cache_key=f"grader-pip-${{{{ runner.os }}}}-py3.11-{digest}")
