"""Where `grader ci` puts one SubmissionResult: files, the job summary, annotations, Classroom's output.

    <out>/report.xml     JUnit XML (grader.reports.junit)
    <out>/results.json   Gradescope's results.json (grader.reports.gradescope)
    <out>/report.md      the Markdown report, also appended to $GITHUB_STEP_SUMMARY
    <out>/classroom.json the GitHub Classroom runner result (with --classroom), base64 of it
                         appended to $GITHUB_OUTPUT as `result=...`
    stdout               the terminal report, then one `::error file=...,line=...::` per failure
"""
from __future__ import annotations

import os
from typing import TextIO

from grader.frontends.ci.annotations import annotations
from grader.config import Config
from grader.frontends.commands import write_output
from grader.reports import render
from grader.reports.classroom import classroom_json, encoded
from grader.results import SubmissionResult


def write_reports(result: SubmissionResult, config: Config, out_dir: str, summary: str | None,
                  source_root: str, github_output: str | None, stdout: TextIO, classroom: bool = False) -> None:
    """Every output; one that cannot be written is a UsageError naming it (write_output). `summary` and
    `github_output` are appended to, as GitHub's step files are."""
    markdown = render(result, "md")
    out = lambda name, text: write_output(os.path.join(out_dir, name), text, "--out")     # noqa: E731
    out("report.xml", render(result, "junit", root=os.path.abspath(source_root)))
    out("results.json", render(result, "json", visibility=config.visibility))
    out("report.md", markdown)
    if summary:
        write_output(summary, markdown + "\n", "the job summary (--summary or $GITHUB_STEP_SUMMARY)", append=True)
    if classroom or github_output:
        out("classroom.json", classroom_json(result, os.path.abspath(source_root)))
    if github_output:
        write_output(github_output, f"result={encoded(result, os.path.abspath(source_root))}\n", "$GITHUB_OUTPUT",
                     append=True)
    stdout.write(render(result, "terminal", color=False))
    for line in annotations(result, source_root):
        stdout.write(line + "\n")
    stdout.flush()
