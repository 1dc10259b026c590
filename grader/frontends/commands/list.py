"""`grader list`: every exercise with its points and reference."""
from __future__ import annotations

from grader.errors import ExitCode
from grader.frontends.commands import add_config_argument, config_from


def register(sub) -> None:
    p = sub.add_parser("list", help="show the exercises, their points and references")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from grader.catalog import catalog
    from grader.pipeline.scoring import max_points

    config = config_from(args)
    module = None
    total = 0.0
    for spec in catalog().values():
        if spec.module != module:
            module = spec.module
            print(f"\n{module}")
        pts = max_points(spec, config)
        total += pts
        print(f"  {spec.id:<45} {pts:>5g} pt  {spec.reference_source[:70]}")
    print(f"\n{len(catalog())} exercises, {total:g} points")
    return ExitCode.OK
