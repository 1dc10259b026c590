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
from grader.reports import render
from grader.reports.classroom import classroom_json, encoded
from grader.results import SubmissionResult


def _write(path: str, text: str, mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as f:
        f.write(text)


def write_reports(result: SubmissionResult, config: Config, out_dir: str, summary: str | None,
                  source_root: str, github_output: str | None, stdout: TextIO, classroom: bool = False) -> None:
    os.makedirs(out_dir, exist_ok=True)
    markdown = render(result, "md")
    _write(os.path.join(out_dir, "report.xml"), render(result, "junit", root=os.path.abspath(source_root)))
    _write(os.path.join(out_dir, "results.json"), render(result, "json", visibility=config.visibility))
    _write(os.path.join(out_dir, "report.md"), markdown)
    if summary:
        _write(summary, markdown + "\n", mode="a")
    if classroom or github_output:
        _write(os.path.join(out_dir, "classroom.json"), classroom_json(result, os.path.abspath(source_root)))
    if github_output:
        _write(github_output, f"result={encoded(result, os.path.abspath(source_root))}\n", mode="a")
    stdout.write(render(result, "terminal", color=False))
    for line in annotations(result, source_root):
        stdout.write(line + "\n")
    stdout.flush()
