"""`grader batch SUBMISSIONS --out DIR [--jobs N] [--force] [EXERCISE_OR_MODULE ...]`: a whole class,
on local workers (the default) or a Dask cluster (`--scheduler tcp://HOST:PORT`, `--cluster local:N`)."""
from __future__ import annotations

import argparse
import sys

from grader.config import in_range
from grader.errors import ExitCode, UsageError
from grader.frontends.batch.executors import INSTALL_CLUSTER, ClusterLost
from grader.frontends.batch.workers import BatchError, warm_up
from grader.frontends.commands import add_config_argument, assignment_name, config_from, output_folder
from grader.imports import import_frozen
from grader.reports.escape import text_line

LISTED = 12          # names listed per category in the final summary


def register(sub) -> None:
    p = sub.add_parser(
        "batch", help="grade a folder of submissions in parallel: gradebook, feedback, grades.csv, class report",
        description="Grade every student's submission in SUBMISSIONS (a folder or .zip per student, or nbgrader's "
                    "submitted/<student>/<assignment>/). Results go to a SQLite gradebook in --out as they "
                    "complete: a re-run skips unchanged submissions, and a killed batch resumes where it stopped. "
                    "Exit 0: every submission was graded (whatever the scores); 2: usage error; 3: the grader "
                    "failed on some submission or exercise (a grader fault: those are no grade, and the "
                    "next run grades them again).")
    p.add_argument("submissions", metavar="SUBMISSIONS", help="folder with one entry per student")
    p.add_argument("names", nargs="*", metavar="EXERCISE_OR_MODULE", help="e.g. attention (default: every exercise)")
    p.add_argument("--out", type=output_folder, required=True, metavar="DIR",
                   help="output folder (gradebook, feedback, reports)")
    p.add_argument("--jobs", type=int, metavar="N", help="submissions graded at once (default or 0: one per CPU core)")
    p.add_argument("--force", action="store_true", help="regrade every submission, even unchanged ones")
    p.add_argument("--timeout", type=float, metavar="S", help="per-call time limit, seconds")
    p.add_argument("--assignment", metavar="NAME", type=assignment_name,
                   help="nbgrader assignment name (picks submitted/<student>/NAME/)")
    p.add_argument("--nbgrader-db", metavar="PATH", help="also record the scores in this nbgrader gradebook")
    c = p.add_argument_group("grading on a Dask cluster (docs/cluster.md; needs " + INSTALL_CLUSTER + ")")
    c.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="grade on the running Dask cluster of this scheduler")
    c.add_argument("--cluster", metavar="local:N", help="start a Dask cluster of N worker processes here, grade on it")
    c.add_argument("--shared-fs", action="store_true",
                   help="workers read each submission at its path (a shared file system) instead of receiving its "
                        "content")
    c.add_argument("--no-wait-gpu", action="store_true",
                   help="do not wait for workers with the GPU resource: grade without the GPU performance checks "
                        "(the feedback says so)")
    p.add_argument("--similarity", action="store_true",
                   help="also compare the students' code for shared code beyond the starter files (OUT/similarity/)")
    add_config_argument(p)
    p.set_defaults(func=run)
    p.__class__ = _Intermixed


class _Intermixed(argparse.ArgumentParser):
    """Lets exercise names follow the options (`batch subs --out DIR attention`): plain argparse
    gives SUBMISSIONS and an empty name list to the first word, then rejects the trailing names."""

    _inner = False

    def parse_known_args(self, args=None, namespace=None):
        if self._inner:                 # parse_known_intermixed_args calls back here
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


def run(args) -> int:
    if not (args.scheduler or args.cluster):
        warm_up()                      # the local workers' torch import overlaps with ours, below
    import_frozen("grader.frontends.batch.run")     # torch with it; this process keeps every result
    from grader.frontends.batch.run import Options, run_batch

    if args.jobs is not None:        # workers, not [limits] jobs; the same range as that key
        in_range("jobs", args.jobs, f"--jobs {args.jobs}", "submissions graded at once (0: one per CPU core)")
    config = config_from(args, call_timeout=args.timeout)
    options = Options(submissions=args.submissions, out=args.out, names=tuple(args.names), jobs=args.jobs or 0,
                      force=args.force, assignment=args.assignment, nbgrader_db=args.nbgrader_db,
                      similarity=args.similarity, scheduler=args.scheduler, cluster=args.cluster,
                      shared_fs=args.shared_fs, no_wait_gpu=args.no_wait_gpu)
    try:
        summary = run_batch(options, config, sys.stderr)
    except ClusterLost as e:           # not a usage error: what was graded is kept, a rerun does the rest
        print(f"grader batch: {e}", file=sys.stderr)
        return ExitCode.INTERNAL
    except (BatchError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None
    print(_summary(summary), file=sys.stderr)
    return ExitCode.INTERNAL if summary.grader_errors else ExitCode.OK


def _names(names: list[str]) -> str:
    """Sorted, so the line reads the same whichever worker finished first."""
    names = sorted(names)
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def _summary(s) -> str:
    lines = [f"{s.students} students: {len(s.graded)} graded now, {len(s.skipped)} unchanged and skipped "
             f"({s.seconds:.1f} s)"]
    for label, names in (("without full marks", s.not_full_marks), ("crashed or timed out", s.crashed),
                         ("unreadable", s.unreadable),
                         ("grader faults (no grade; retried on the next run)", s.grader_errors)):
        if names:
            lines.append(f"  {len(names)} {label}: {_names(names)}")
    lines += [f"  note: {n}" for n in s.notes]
    lines.append(f"gradebook, grades.csv, class_report.html and students/<id>/ feedback in {s.out}")
    return "\n".join(map(text_line, lines))      # a student's id is a folder's name: any text at all
