"""`grader ci`: grade a pull request — reports to files, GitHub summary and annotations, exit by policy.

Exit 0: the policy is met (default: everything passed; with --min-score: the score reaches it);
1: it is not; 2: usage or configuration error, including a configuration or grader that is not
the pinned one (--expect-config-sha256, --expect-grader-version); 3: the grader itself failed on
some exercise (a bug in the grader: its 0 points are no grade, so no policy is met or failed).
"""
from __future__ import annotations

import os
import sys

from grader import api
from grader.errors import UsageError
from grader.frontends.ci import pinning
from grader.frontends.ci.policy import check_reachable, parse_min_score
from grader.frontends.ci.report import write_reports
from grader.frontends.commands import (add_config_argument, checked_output_file, config_from, config_path,
                                       graded_exit, output_file, output_folder, submission_from)


def register(sub) -> None:
    p = sub.add_parser("ci", help="grade in CI: JUnit, results.json, GitHub summary and annotations, exit by policy",
                       description=__doc__.split("\n\n", 1)[1])
    p.add_argument("names", nargs="*", metavar="EXERCISE_OR_MODULE", help="e.g. attention (default: all)")
    p.add_argument("--submission", metavar="PATH", help="folder to grade (default: [course] submission)")
    p.add_argument("--out", type=output_folder, metavar="DIR", default="grader-results",
                   help="folder for report.xml (JUnit), results.json (Gradescope format), report.md")
    p.add_argument("--summary", type=output_file, metavar="FILE",
                   help="append the Markdown report here (default: $GITHUB_STEP_SUMMARY)")
    p.add_argument("--source-root", metavar="DIR", help="where the pull request is checked out: annotation paths "
                   "are relative to it, and the submission must lie inside it (default: $GITHUB_WORKSPACE or .)")
    p.add_argument("--min-score", metavar="X", help="pass when the score reaches X points, or X%% of the maximum "
                   "(default: pass only when every exercise passes)")
    p.add_argument("--classroom", action="store_true",
                   help="write the GitHub Classroom result (base64) to $GITHUB_OUTPUT as result=...")
    p.add_argument("--secret-seed-file", metavar="PATH", help="read the secret seed for hidden cases from this file, "
                   "then delete it: unlike an environment variable, the student's code cannot read it back")
    p.add_argument("--expect-config-sha256", metavar="HEX",
                   help="refuse to grade unless autograde.toml has this sha256")
    p.add_argument("--expect-grader-version", metavar="V", help="refuse to grade unless this is grader V")
    add_config_argument(p)
    p.set_defaults(func=run)


def _seed_from_file(path: str | None) -> int | None:
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
        os.remove(path)
    except OSError as e:
        raise UsageError(f"--secret-seed-file {path}: {e.strerror}") from None
    try:
        return int(text, 0) if text else None          # empty: the secret is not configured, no hidden cases
    except ValueError:
        raise UsageError(f"--secret-seed-file {path}: the secret seed must be an integer") from None


def _check_pins(args) -> None:
    path = config_path(args) or ""
    try:
        if args.expect_grader_version:
            pinning.check_version(args.expect_grader_version)
        if args.expect_config_sha256:
            pinning.check_config(path, args.expect_config_sha256)
    except pinning.PinError as e:
        raise UsageError(str(e)) from None
    if not (args.expect_config_sha256 or args.expect_grader_version) and os.environ.get("GITHUB_ACTIONS") == "true":
        print("::warning::grader ci runs without --expect-config-sha256: a pull request that edits autograde.toml "
              "would be graded by its own rules (see `grader init-ci`)")


def _from_environment(variable: str) -> str | None:
    path = os.environ.get(variable)
    return checked_output_file(path, f"${variable}") if path else None


def run(args) -> int:
    _check_pins(args)
    policy = parse_min_score(args.min_score)
    config = config_from(args, secret_seed=_seed_from_file(args.secret_seed_file))
    check_reachable(args.min_score, args.names, config)
    # The secret is in `config` now; drop it from the environment too. The sandbox's child never
    # sees the variable (grader.sandbox.provision.child_environment passes an allow-list), and
    # nothing else this process runs needs it.
    os.environ.pop(config.seed_env, None)
    submission = submission_from(args, config)
    # The documented default holds as the flag does: a symlink or a path out of the checkout is refused.
    source_root, whence = ((args.source_root, "--source-root") if args.source_root else
                           (os.environ["GITHUB_WORKSPACE"], "$GITHUB_WORKSPACE") if os.environ.get("GITHUB_WORKSPACE")
                           else (".", "the working folder: neither --source-root nor $GITHUB_WORKSPACE is set"))
    try:
        pinning.check_inside(submission, source_root, whence)
    except pinning.PinError as e:
        raise UsageError(str(e)) from None
    # The step files GitHub names in the environment are checked as --summary is, before grading.
    summary = args.summary or _from_environment("GITHUB_STEP_SUMMARY")
    github_output = _from_environment("GITHUB_OUTPUT") if args.classroom else None
    result = api.grade(submission, args.names, config)
    write_reports(result, config, args.out, summary, source_root, github_output, sys.stdout, classroom=args.classroom)
    if result.grader_faults:
        print(f"policy: not decided — the grader failed on {', '.join(result.grader_faults)} (a bug in the "
              "grader, not in the submission); rerun once it is fixed")
        return graded_exit(result, False)
    if policy is None:
        ok = result.all_passed
        print(f"policy: every exercise must pass — {'met' if ok else 'not met'}")
    else:
        threshold = policy(result.max_score)
        ok = result.score >= threshold - 1e-9
        print(f"policy: at least {threshold:g} of {result.max_score:g} points — {result.score:g}: "
              f"{'met' if ok else 'not met'}")
    return graded_exit(result, ok)
