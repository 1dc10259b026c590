"""`grader export canvas|csv GRADED ...`: a batch's final scores into the learning-management system.

    grader export canvas GRADED --course ID --assignment ID [--roster CSV] [--feedback comment|attachment|none]
                                [--url URL] [--dry-run]
    grader export csv GRADED --format canvas|moodle|blackboard --name "Problem set 1" [--column-id ID]
                             [--points N] [--roster CSV] [--output FILE]

GRADED is the --out folder of `grader batch`. The Canvas token is read from CANVAS_API_TOKEN only:
a token on the command line lands in the shell's history and in `ps`, and one in a file of the course
repository gets committed; a --token flag is refused with that reason.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from urllib.parse import urlparse

from grader.errors import ExitCode, UsageError
from grader.frontends.commands import name_text, output_file, positive_number, write_output
from grader.reports.escape import text_block, text_line

TOKEN_ENV, URL_ENV = "CANVAS_API_TOKEN", "CANVAS_API_URL"


def register(sub) -> None:
    p = sub.add_parser("export", help="send a batch's final scores to Canvas, or write an LMS's gradebook CSV",
                       description="Grades from a `grader batch` output folder into a learning-management system. "
                                   "Exit 0: every grade arrived (or the file was written); 1: some student's grade "
                                   "did not arrive, could not be matched, or has no grade (named); 2: usage error, "
                                   "a refused token, an unknown course or assignment.")
    kinds = p.add_subparsers(dest="target", metavar="TARGET", required=True)
    c = kinds.add_parser("canvas", help="post final scores through Canvas's REST API (token from CANVAS_API_TOKEN)")
    c.add_argument("graded", metavar="GRADED", help="the --out folder of `grader batch`")
    c.add_argument("--course", required=True, type=int, metavar="ID", help="Canvas course id (in the course's URL)")
    c.add_argument("--assignment", required=True, type=int, metavar="ID", help="Canvas assignment id")
    c.add_argument("--roster", metavar="CSV", help="student,sis_user_id|login_id|email|canvas_id,... "
                                                   "(default: match the grader's ids to logins, SIS ids, emails)")
    c.add_argument("--feedback", choices=("none", "comment", "attachment"), default="none",
                   help="also send the feedback: a plain-text submission comment, or feedback.html attached")
    c.add_argument("--url", metavar="URL", help=f"Canvas address, https://canvas.example.edu (default: ${URL_ENV})")
    c.add_argument("--wait", type=positive_number, default=300.0, metavar="S",
                   help="seconds to wait for Canvas's bulk update (more than 0)")
    c.add_argument("--dry-run", action="store_true", help="print what would be sent; make no request")
    c.add_argument("--token", help=argparse.SUPPRESS)     # refused, with the reason (see run)
    c.set_defaults(func=run_canvas)
    f = kinds.add_parser("csv", help="write the gradebook import file of Canvas, Moodle or Blackboard Learn")
    f.add_argument("graded", metavar="GRADED", help="the --out folder of `grader batch`")
    f.add_argument("--format", required=True, choices=("canvas", "moodle", "blackboard"), help="which LMS's layout")
    f.add_argument("--name", required=True, type=name_text, metavar="NAME",
                   help="the assignment (column, grade item) name in the LMS")
    f.add_argument("--column-id", default="", metavar="ID", help="the LMS's id of that column (Canvas assignment id, "
                                                                 "Blackboard Column ID); without it a new one is made")
    f.add_argument("--points", type=positive_number, metavar="N",
                   help="points possible, more than 0 (Blackboard's header; default: the maximum score of grades.csv)")
    f.add_argument("--roster", metavar="CSV", help="student,name,email,login_id,sis_user_id,canvas_id,section")
    f.add_argument("--output", type=output_file, metavar="FILE", help="write here (default: standard output)")
    f.set_defaults(func=run_csv)


def canvas_url(flag: str | None, env) -> str:
    url = (flag or env.get(URL_ENV, "")).strip().rstrip("/")
    if not url:
        raise UsageError(f"no Canvas address: pass --url https://canvas.example.edu or set {URL_ENV}")
    url = url[:-len("/api/v1")] if url.endswith("/api/v1") else url
    parsed = urlparse(url)
    if parsed.scheme not in ("https", "http") or not parsed.hostname:
        raise UsageError(f"--url {url!r}: expected https://canvas.example.edu")
    if parsed.scheme == "http" and parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError(f"--url {url}: plain http would send the token unencrypted; use https://")
    return url


def run_canvas(args) -> int:
    from grader.frontends.export import canvas, source

    if args.token is not None:
        raise UsageError(f"--token is refused: a token on the command line is kept in the shell's history and shown "
                         f"by `ps`. Put it in the environment instead: export {TOKEN_ENV}=... (never in a file of "
                         "the course repository)")
    target = canvas.Target(canvas_url(args.url, os.environ), args.course, args.assignment)
    graded = source.graded(args.graded)
    people = source.roster(args.roster)
    grades = canvas.plan(graded, people, canvas.Feedback(args.feedback))
    for note in source.not_in_batch(graded, people):
        _warn(f"note: {note}")
    if args.dry_run:
        print(text_block(canvas.dry_run(target, grades, canvas.Feedback(args.feedback))))
        return _left_out(graded) or ExitCode.OK
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise UsageError(f"{TOKEN_ENV} is not set: create a token in Canvas (Account > Settings > New access token, "
                         f"as a teacher of course {args.course}) and export {TOKEN_ENV}=...")
    try:
        outcome = canvas.export(target, token, grades, canvas.Feedback(args.feedback), args.wait, sys.stderr)
    except UsageError:                  # two students matched to one Canvas user: said as it is
        raise
    except Exception as e:              # canvasapi's and requests' exceptions, in words
        raise UsageError(_canvas_error(e, target)) from None
    return _report(outcome, graded, target)


def _canvas_error(e: Exception, target) -> str:
    from canvasapi import exceptions as cx
    from requests.exceptions import RequestException

    if isinstance(e, (cx.InvalidAccessToken, cx.Unauthorized)):
        return (f"Canvas at {target.url} refused the token (401 Unauthorized): check {TOKEN_ENV} (expired, revoked, "
                "or from another Canvas) — it must belong to a teacher of the course")
    if isinstance(e, cx.Forbidden):
        return f"Canvas refused access (403 Forbidden): the token's user may not grade course {target.course}"
    if isinstance(e, cx.ResourceDoesNotExist):
        return (f"Canvas has no course {target.course} with assignment {target.assignment} (404), or the token "
                "cannot see them: check --course and --assignment (both are in the assignment's URL)")
    if isinstance(e, json.JSONDecodeError):     # requests' own JSONDecodeError is one too (and a RequestException)
        return (f"{target.url} answered, but not with Canvas's API (JSON): a web page, such as a sign-in page or "
                "another site. Give --url as the address of your Canvas itself (https://canvas.example.edu, "
                "without /courses/... or /login)")
    if isinstance(e, RequestException):
        return f"cannot reach Canvas at {target.url}: {e}"
    if isinstance(e, cx.CanvasException):
        return f"Canvas answered with an error: {e}"
    raise e


def _warn(text: str) -> None:
    """A line for the instructor's terminal: students' ids and names are folder names and roster text,
    shown with any control character made visible (grader.reports.escape)."""
    print(text_line(text), file=sys.stderr)


def _left_out(graded) -> int:
    for note in graded.left_out:        # rows grades.csv does not hold (an older run's): not sent, said
        _warn(f"note: {note}")
    if graded.not_graded:
        _warn(f"not sent, the grader failed on them (no grade; run grader batch again): "
              f"{', '.join(graded.not_graded)}")
        return ExitCode.FAILED
    return 0


def _report(outcome, graded, target) -> int:
    for note in outcome.notes:
        _warn(f"note: {note}")
    for g, why in outcome.unmapped:
        _warn(f"not matched to a Canvas user: {g.name}: {why}")
    for g, why in outcome.missing:
        _warn(f"grade did not arrive: {g.name}: {why}")
    arrived = outcome.sent - len(outcome.missing)
    print(f"canvas: {arrived} of {outcome.sent} grades sent to course {target.course}, assignment "
          f"{target.assignment} read back as sent" + ("" if outcome.ok else
          f"; {len(outcome.missing)} did not arrive, {len(outcome.unmapped)} not matched"))
    if outcome.missing:
        _warn("these students' grades did not arrive: " + ", ".join(g.name for g, _ in outcome.missing))
    failed = _left_out(graded)
    return ExitCode.FAILED if (failed or not outcome.ok or outcome.notes) else ExitCode.OK


def run_csv(args) -> int:
    from grader.frontends.export import lms_csv, source

    if args.format == "moodle" and args.column_id:
        raise UsageError("--column-id has no place in Moodle's file: Moodle's grade import asks which grade item "
                         "the column goes to when the file is imported; leave --column-id out")
    graded = source.graded(args.graded)
    text, notes = lms_csv.write(lms_csv.Layout(args.format), graded, source.roster(args.roster), args.name,
                                args.column_id, args.points)
    if args.output:
        write_output(args.output, text, "--output", atomic=True)
        print(f"{args.format} gradebook import file: {len(graded.rows)} students in {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    for note in notes:
        _warn(f"note: {note}")
    return ExitCode.FAILED if graded.not_graded else ExitCode.OK
