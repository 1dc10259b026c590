"""`grader bench EXERCISE [--submission PATH] [--device cpu|cuda] [--sizes 64,128,256] [--output FILE.png]`.

Times a submission's function against PyTorch's over a range of sizes ([performance] settings of
autograde.toml, grader.timing.config); grades nothing.
"""
from __future__ import annotations

import os

from grader import api
from grader.errors import ExitCode, UsageError
from grader.frontends.commands import add_config_argument, config_from, resolve, output_file
from grader.timing.config import parse_section, perf_config


def register(sub) -> None:
    p = sub.add_parser("bench", help="time your function against PyTorch over a range of sizes (table and plot)",
                       description="Time the student's function and PyTorch's over a range of one size (T for "
                                   "attention, ...): a table here and a plot as a PNG. Nothing is graded.")
    p.add_argument("exercise", metavar="EXERCISE", help="e.g. attention.multi_head_attention")
    p.add_argument("--submission", metavar="PATH", help="folder, .zip, .py or .ipynb (default: [course] submission)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--sizes", metavar="N,N,...", help="values of the varying size (default: the spec's)")
    p.add_argument("--budget", type=float, metavar="S",
                   help="seconds of measurement per size (default: [performance] budget_s, at least 3)")
    p.add_argument("--output", type=output_file, metavar="FILE",
                   help="the plot (default: reports/bench-<exercise>.png)")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from grader.catalog import select
    from grader.submission.loader import load_submission
    from grader.timing import scaling, stage
    from grader.timing.specs import REGISTRY, perf_specs

    if args.budget is not None:     # checked as [performance] budget_s is
        parse_section({"budget_s": args.budget}, "--budget")
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
    try:
        sizes = [int(v) for v in args.sizes.split(",")] if args.sizes else list(perf.bench)
    except ValueError:
        sizes = [0]
    if not sizes or min(sizes) < 1:
        raise UsageError(f"--sizes {args.sizes}: give whole numbers of 1 or more separated by commas, e.g. 64,128,256")
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
    output = args.output or os.path.join(resolve(config, "reports"), f"bench-{perf.exercise}.png")
    print(f"plot written to {scaling.plot(rows, perf, args.device, output)}")
    return ExitCode.OK if all(r.ratio is not None for r in rows) else ExitCode.FAILED
