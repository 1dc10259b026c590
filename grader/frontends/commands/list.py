"""`grader list`: every exercise with its points and where its expected values come from.

One rich table, a section per module, wrapped to the terminal's width (the references are
sentences: they wrap, never cut)."""
from __future__ import annotations

import sys

from grader.errors import ExitCode
from grader.frontends.commands import add_color_arguments, add_config_argument, color_of, config_from


def register(sub) -> None:
    p = sub.add_parser("list", help="show the exercises, their points and references")
    add_color_arguments(p)
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from grader.catalog import catalog
    from grader.pipeline.scoring import max_points
    from grader.reports.filters import points
    from grader.reports.terminal import PALETTE, to_text

    config = config_from(args, color=args.color)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style=PALETTE["title"])
    table.add_column("exercise", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    table.add_column("expected values from", overflow="fold")
    specs = list(catalog().values())
    module = None
    for spec in specs:
        if spec.module != module:
            if module is not None:
                table.add_section()
            module = spec.module
        table.add_row(Text(spec.id), points(max_points(spec, config)), Text(spec.reference_source))
    total = sum(max_points(spec, config) for spec in specs)
    footer = Text(f"{len(specs)} exercises, {points(total)} points", style=PALETTE["title"])
    sys.stdout.write(to_text(Group(table, footer), color_of(config, args.color)))
    return ExitCode.OK
