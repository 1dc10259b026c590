"""`grader check [EXERCISE_OR_MODULE ...] [--submission PATH] [--format F] [--output FILE]`."""
from __future__ import annotations

import os
import sys
import time

from grader import api
from grader.frontends.commands import (add_color_arguments, add_config_argument, color_of, config_from,
                                       graded_exit, output_file, submission_from, write_output)
from grader.reports import FORMATS, render
from grader.reports.filters import score
from grader.timing.config import with_overrides


def register(sub) -> None:
    p = sub.add_parser("check", help="grade a submission (default: the exercises/ folder)",
                       description="Grade a submission and report. Exit 0: everything graded passed; "
                                   "1: something failed; 2: usage or configuration error; 3: the grader itself "
                                   "failed on some exercise (a bug in the grader: no grade).")
    p.add_argument("names", nargs="*", metavar="EXERCISE_OR_MODULE", help="e.g. attention or attention.causal_mask")
    p.add_argument("--submission", metavar="PATH", help="folder, .zip, .py or .ipynb (default: [course] submission)")
    p.add_argument("--format", default=None, metavar="FORMAT",
                   help=f"report format: {', '.join(FORMATS)} (json: Gradescope's results.json; "
                        "default: the first of [reports] formats)")
    p.add_argument("--output", type=output_file, metavar="FILE",
                   help="write the report here instead of standard output")
    add_color_arguments(p)
    p.add_argument("--timeout", type=float, metavar="S", help="per-call time limit, seconds")
    p.add_argument("--jobs", type=int, metavar="N", help="exercises graded at once (0: one more than the CPU cores)")
    p.add_argument("--perf", action="store_true", default=None,
                   help="also time the exercises that pass against PyTorch (the [performance] checks; off by default)")
    add_config_argument(p)
    p.set_defaults(func=run)


def process_seconds() -> float | None:
    """Wall time since this process started (Linux's /proc), interpreter start-up and imports included;
    None where /proc is not there."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19])      # field 22: start time, in clock ticks
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - started / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def run(args) -> int:
    begun = time.monotonic()
    config = config_from(args, call_timeout=args.timeout, jobs=args.jobs, color=args.color,
                         formats=(args.format,) if args.format else None)
    if args.perf:
        config = with_overrides(config, enabled=True)
    fmt = config.formats[0] if config.formats else "terminal"     # --format, else the first of [reports] formats
    result = api.grade(submission_from(args, config), args.names, config)
    wall = process_seconds() or time.monotonic() - begun          # the whole run, as the student waited for it
    color = color_of(config, args.color) if not args.output else False
    text = render(result, fmt, color=color, visibility=config.visibility, wall_seconds=wall)
    if args.output:
        write_output(args.output, text, "--output")
        print(f"{score(result.score, result.max_score)} — report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return graded_exit(result, result.all_passed)
