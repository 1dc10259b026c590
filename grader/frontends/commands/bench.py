"""`grader bench EXERCISE [--submission PATH] [--device cpu|cuda] [--sizes 64 128 256] [--output FILE.png]`.

Times a submission's function against PyTorch's over a range of sizes ([performance] settings of
autograde.toml, grader.timing.config); grades nothing.
"""
from __future__ import annotations

import argparse
import os

from grader import api
from grader.errors import ExitCode, UsageError
from grader.frontends.commands import add_config_argument, config_from, resolve, output_file
from grader.timing.config import parse_section, perf_config

PLOT_FORMATS = (".png", ".svg", ".pdf")     # what matplotlib writes with no extra software (tests check it)


def register(sub) -> None:
    p = sub.add_parser("bench", help="time your function against PyTorch over a range of sizes (table and plot)",
                       description="Time the student's function and PyTorch's over a range of one size (T for "
                                   "attention, ...): a table here and a plot as a PNG. Nothing is graded.")
    p.add_argument("exercise", metavar="EXERCISE", help="e.g. attention.multi_head_attention")
    p.add_argument("--submission", metavar="PATH", help="folder, .zip, .py or .ipynb (default: [course] submission)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--sizes", nargs="+", metavar="N", help="values of the varying size, each once, separated by "
                   "spaces or commas: 64 128 256 or 64,128,256 (default: the spec's)")
    p.add_argument("--budget", type=float, metavar="S",
                   help="seconds of measurement per size (default: [performance] budget_s, at least 3)")
    p.add_argument("--output", type=plot_file, metavar="FILE",
                   help=f"the plot, as {', '.join(PLOT_FORMATS)} (default: reports/bench-<exercise>.png in the "
                        "working folder)")
    add_config_argument(p)
    p.set_defaults(func=run)


def plot_file(path: str) -> str:
    """argparse type of --output: a file matplotlib can write by its extension, where one can be
    written (output_file), refused before anything is timed."""
    output_file(path)
    stem, ext = os.path.splitext(path)
    if ext.lower() not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"{path}: the plot is written as {', '.join(PLOT_FORMATS)}; end the file "
                                         f"name in one of them, e.g. {stem}.png")
    return path


def parse_sizes(given: list[str] | None) -> list[int] | None:
    """--sizes as given (64 128 256, 64,128,256 or both), in increasing order; None: not given."""
    if not given:
        return None
    shown = " ".join(given)
    try:
        sizes = [int(v) for v in shown.replace(",", " ").split()]
    except ValueError:
        sizes = [0]
    if not sizes or min(sizes) < 1:
        raise UsageError(f"--sizes {shown}: give whole numbers of 1 or more separated by commas or spaces, "
                         "e.g. 64,128,256")
    twice = sorted({v for v in sizes if sizes.count(v) > 1})
    if twice:
        raise UsageError(f"--sizes {shown}: {', '.join(map(str, twice))} given more than once; give each size "
                         "once, e.g. 64,128,256")
    return sorted(sizes)


def missing_folder(path: str) -> str | None:
    """The outermost folder on the way to `path` that is not there yet (None: its folder is)."""
    folder, missing = os.path.dirname(os.path.abspath(path)), None
    while not os.path.lexists(folder):
        folder, missing = os.path.dirname(folder), folder
    return missing if missing is None or os.path.isabs(path) else os.path.relpath(missing)


def run(args) -> int:
    from grader.catalog import select
    from grader.submission.loader import load_submission
    from grader.timing import scaling, stage
    from grader.timing.specs import REGISTRY, perf_specs

    if args.budget is not None:     # checked as [performance] budget_s is
        parse_section({"budget_s": args.budget}, "--budget")
    given_sizes = parse_sizes(args.sizes)
    config = config_from(args)
    (spec,) = select([args.exercise]) if "." in args.exercise else (None,)
    checks = perf_specs(spec) if spec is not None else ()
    if not checks:
        raise UsageError(f"'{args.exercise}' has no performance spec; exercises with one: {', '.join(REGISTRY)}")
    perf = checks[0]
    why = scaling.unavailable(args.device, stage.cuda_available())
    if why:
        raise UsageError(why)
    if perf.setting(args.device) is None:
        raise UsageError(f"{perf.exercise} has no {args.device} sizes")
    sizes = given_sizes or list(perf.bench)
    output = args.output or default_output(perf.exercise)
    submission = load_submission(args.submission or resolve(config, config.submission))
    if spec.module not in submission.files:
        raise UsageError(f"the submission has no {spec.module}.py")
    cfg = perf_config(config)
    # No memory limit on CUDA: the driver maps far more address space than it uses (see timing.stage).
    sandbox = api.sandbox(config) if args.device == "cpu" else api.sandbox(config, memory_bytes=0)
    try:
        rows = scaling.measure(perf, spec, submission.files, sandbox, config, device=args.device, sizes=sizes,
                               budget=args.budget or max(cfg.budget_s, 3.0),
                               threads=cfg.threads if args.device == "cpu" else None, target_rse=cfg.target_rse)
    finally:
        sandbox.shutdown()
    print(scaling.table(rows, perf, args.device), end="")
    made = missing_folder(output)
    print(f"plot written to {scaling.plot(rows, perf, args.device, output)}"
          + (f" (made the folder {made})" if made else ""))
    return ExitCode.OK if all(r.ratio is not None for r in rows) else ExitCode.FAILED


def default_output(exercise: str) -> str:
    """reports/bench-<exercise>.png in the working folder, as other commands' default outputs
    (ci --out grader-results); checked as --output is, before anything is timed."""
    path = os.path.join("reports", f"bench-{exercise}.png")
    try:
        return output_file(path)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"{e} (the plot's default place; or pass --output FILE)") from None
