"""A student cannot forge a report: every string of a result, filled with hostile text, renders harmlessly.

The attack: a submission raises or prints text crafted for the report it lands in (ANSI escapes
that clear the terminal and draw "Score: 9 / 9", a Markdown fence close followed by
`</details>`, a "✅ 9 / 9 points" heading and an HTML comment that hides the real report,
GitHub workflow commands, characters XML cannot carry). `hostile()` puts that text in every
string field of every record of a result (so a field added later is attacked too) and each
format is rendered; what must hold is stated in each test.
"""
import dataclasses
import io
import json
import re
import xml.etree.ElementTree as ET
from enum import Enum

import mistune
import pytest
from bs4 import BeautifulSoup, Comment

from grader.frontends.ci.annotations import annotations
from grader.frontends.ci.report import write_reports
from grader.reports import FORMATS, render
from grader.reports.escape import md_code, md_code_span, md_inline, text_block, text_line
from grader.results import (CaseResult, Comparison, ExerciseResult, Heatmap, Mismatch, PerfResult, Status,
                            SubmissionResult)

PAYLOAD = ("boom\x1b[2J\x1b[H\x1b[1;32mScore: 9 / 9\x1b[0m\rScore: 9 / 9\n"
           "Score: 9 / 9\n"
           "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ \x9b31m"
           "\u202eevil\u202c \u2066iso\u2069 a\u200db\ufeff\n"
           "```\n````\n</details>\n\n# ✅ 9 / 9 points\n### ✅ 9 / 9 points\n<!-- hide the rest\n"
           "[click](https://evil.example) <b>bold</b> :white_check_mark: www.evil.example | cell |\n"
           "::error::forged\n  ::set-output name=score::9\n%0A::warning::encoded\n"
           "x ##[stop-commands]tok ##[error]legacy, read anywhere in a line\n"
           "\x00\x01\x08\x0b\x0c\x1f\x7f\ufffe end")
# What a report may never contain raw: ESC and the other C0 controls but \t and \n, DEL, C1,
# bidi embeddings/overrides/isolates, zero-width characters, line and paragraph separators.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
# The codes of grader.reports.terminal.PALETTE in rich's standard colours (test_terminal.py checks the list).
COLOR = re.compile(r"\x1b\[(?:0|1|2|31|32|33|36)m")


def base() -> SubmissionResult:
    """A result with every kind of record and branch the reports render."""
    comp = Comparison(name="out", ok=False, problem="values differ", shape=(2, 2), expected_shape=(2, 2),
                      dtype="float32", expected_dtype="float32", max_abs_error=0.5, max_rel_error=1.0,
                      worst_index=(0, 1), mismatch_fraction=0.25, mismatches=(Mismatch((0, 1), 0.5, 0.0),))
    failed = CaseResult(name="small", status=Status.ERROR, description="x: (2, 2)", message="raised ValueError",
                        comparisons=(comp,), diagnosis="transposed", failure=None,
                        heatmaps=(Heatmap("out", ((0.0, 1.0),), ((1.0, 0.0),)),))
    hidden = CaseResult(name="hidden 1", status=Status.FAILED, hidden=True, description="withheld",
                        message="values differ", diagnosis="transposed: x", fits=("transposed: x", "swapped: y"))
    perf = PerfResult(name="forward", status=Status.FAILED, ratio=3.0, threshold=2.0, message="slow")
    ex = (ExerciseResult(id="attention.causal_mask", status=Status.ERROR, points=0.0, max_points=2.0,
                         cases=(failed, CaseResult(name="T=1", status=Status.PASSED), hidden),
                         message="your code raised\nsecond line", diagnosis="transposed", notes=("salvaged",),
                         output="printed", output_truncated=True, reference="torch", source_file=__file__,
                         source_line=3, performance=(perf,)),
          ExerciseResult(id="attention.softmax", status=Status.SKIPPED, points=0.0, max_points=1.0, message="skipped"),
          ExerciseResult(id="attention.mha", status=Status.GRADER_FAULT, points=0.0, max_points=1.0, message="bug"),
          ExerciseResult(id="attention.ok", status=Status.PASSED, points=1.0, max_points=1.0,
                         cases=(CaseResult(name="T=4", status=Status.PASSED),), message="all passed"))
    return SubmissionResult(submission="exercises", exercises=ex, errors=("module x did not import",),
                            settings={"call_timeout_s": 10.0, "memory_mb": 2048}, seconds=1.0, grader_version="0.1")


def hostile(obj, filled: set | None = None, payload: str = PAYLOAD):
    """`obj` with `payload` in every string field of every record (ids keep their one dot)."""
    if dataclasses.is_dataclass(obj):
        changes = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, str) and not isinstance(value, Enum):
                changes[f.name] = f"{payload}.{payload}" if f.name == "id" else payload
                if filled is not None:
                    filled.add((type(obj).__name__, f.name))
            elif isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
                changes[f.name] = (payload,) * len(value)
                if filled is not None:
                    filled.add((type(obj).__name__, f.name))
            elif isinstance(value, tuple):
                changes[f.name] = tuple(hostile(v, filled, payload) for v in value)
        return dataclasses.replace(obj, **changes)
    return obj


# The same result with harmless words everywhere: the structure the templates make from it.
BASE, EVIL = hostile(base(), payload="plain\nwords"), hostile(base())


def test_the_payload_reaches_every_string_field_of_the_model():
    filled: set = set()
    hostile(base(), filled)
    import grader.results as model
    fields = {(cls.__name__, f.name) for cls in vars(model).values() if dataclasses.is_dataclass(cls)
              for f in dataclasses.fields(cls) if f.type in ("str", "tuple[str, ...]")}
    assert fields - filled == set(), "base() leaves these string fields empty: fill them so the payload reaches them"


def _plain(text: str) -> str:
    return COLOR.sub("", text)


@pytest.mark.parametrize("width", [40, 80, 160])
@pytest.mark.parametrize("color", [False, True])
def test_terminal_shows_no_control_character_and_only_the_real_score(color, width):
    """Cleared screens, cursor moves, \\r overwrites, hyperlinks and reversed text must not work;
    every line the student wrote is indented, so the one 'Score:' line at column 0 is the grader's,
    whatever the width the text is wrapped to."""
    text = render(EVIL, "terminal", color=color, width=width)
    assert RAW_CONTROL.search(_plain(text)) is None
    lines = _plain(text).split("\n")
    real = f"Score: {EVIL.score:g} / {EVIL.max_score:g} · graded in 1.0 s"
    assert [line for line in lines if line.startswith("Score:")] == [real]
    assert not _workflow_commands(_plain(text))
    assert "\\x1b[2J" in text, "the escape is shown, not dropped silently"


def _workflow_commands(log: str) -> list[str]:
    """The lines the Actions runner reads as commands: `::` first, or the legacy `##[` anywhere."""
    return [line for line in log.split("\n") if line.lstrip().startswith("::") or "##[" in line]


def test_ci_log_carries_only_the_graders_workflow_commands(config, tmp_path):
    """`grader ci` prints the terminal report and then its annotations: the student's `::error::`,
    `::set-output` and `%0A` tricks start no command, and each annotation is one line whose
    command part is the grader's (properties percent-encoded, GitHub's rules)."""
    out = io.StringIO()
    write_reports(EVIL, config, str(tmp_path / "out"), None, "/", None, out)
    log = out.getvalue()
    assert RAW_CONTROL.search(log) is None
    commands = _workflow_commands(log)
    assert commands == annotations(EVIL, "/") and len(commands) == 1 + 3   # the submission's error, 3 exercises
    for line in commands:
        head, sep, data = line[2:].partition("::")
        name, _, props = head.partition(" ")
        assert sep and name in ("error", "warning")
        assert all(re.fullmatch(r"(file|line|title)=[^:,]*", p) for p in props.split(",") if props), head
        assert "\r" not in data and "%0A" in data and "%250A" in data   # newlines and the student's % encoded


def _tokens(md: str) -> list[dict]:
    parse = mistune.create_markdown(renderer="ast", plugins=["table", "strikethrough", "url"])
    out: list[dict] = []

    def walk(nodes):
        for n in nodes:
            out.append(n)
            walk(n.get("children", ()))
    walk(parse(md))
    return out


def _kinds(md: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in _tokens(md):
        counts[t["type"]] = counts.get(t["type"], 0) + 1
    return counts


@pytest.mark.parametrize("hostile_result", [EVIL, hostile(base(), payload="> " + PAYLOAD)], ids=["payload", "quote"])
def test_markdown_keeps_the_templates_structure(hostile_result):
    """The payload closes no fence, ends no <details>, opens no comment, makes no heading, link,
    emphasis, table cell, block quote or HTML: the hostile report parses into the same blocks as the
    plain one. `quote`: every string starts with `> `, at a line's start or after the template's `> `."""
    evil, plain = render(hostile_result, "md"), render(BASE, "md")
    kinds, expected = _kinds(evil), _kinds(plain)
    for kind in ("heading", "block_code", "block_html", "inline_html", "link", "emphasis", "strong",
                 "table_cell", "list_item", "block_quote", "thematic_break"):
        assert kinds.get(kind, 0) == expected.get(kind, 0), kind
    headings = [t for t in _tokens(evil) if t["type"] == "heading"]
    real = f"{EVIL.score:g} / {EVIL.max_score:g} points"
    assert len(headings) == 1 and real in json.dumps(headings[0], ensure_ascii=False)

    def html(md):       # the HTML a Markdown renderer passes through: the rest is text or code
        return "".join(t.get("raw", "") for t in _tokens(md) if t["type"] in ("block_html", "inline_html"))
    assert html(evil).count("</details>") == html(plain).count("</details>") > 0
    assert "<!--" not in html(evil) and "<b>bold" not in html(evil)


def test_html_report_is_autoescaped():
    """The HTML report's tags and comments are the template's: the payload's render as text."""
    def tags(html):
        soup = BeautifulSoup(html, "html.parser")
        return sorted(t.name for t in soup.find_all(True)), soup.find_all(string=lambda s: isinstance(s, Comment))
    evil_tags, comments = tags(render(EVIL, "html"))
    assert evil_tags == tags(render(BASE, "html"))[0] and comments == []
    assert "&lt;/details&gt;" in render(EVIL, "html")
    # Nor does its text: an escape reaches no terminal that shows the file, a bidi override turns
    # no line of the page around. Each is shown, as in the terminal's report.
    assert RAW_CONTROL.search(render(EVIL, "html")) is None
    assert "\\x1b[2J" in render(EVIL, "html") and "\\u202eevil" in render(EVIL, "html")


def test_gradescope_markdown_outputs_and_text_outputs_are_neutral():
    data = json.loads(render(EVIL, "json"))
    assert RAW_CONTROL.search(json.dumps(data, ensure_ascii=False)) is None
    for test in data["tests"]:
        if test["output_format"] == "md":
            kinds = _kinds(test["output"])
            assert not {"heading", "block_code", "block_html", "inline_html", "link", "emphasis"} & set(kinds)


def test_junit_is_valid_xml_without_control_characters():
    text = render(EVIL, "junit")
    root = ET.fromstring(text)
    for el in root.iter():
        for value in [el.text or "", el.tail or "", *el.attrib.values()]:
            assert RAW_CONTROL.search(value) is None
            assert not [line for line in value.split("\n") if line.lstrip().startswith("::")]


def test_classroom_message_is_plain_text_for_the_log():
    data = json.loads(render(EVIL, "classroom"))
    text = json.dumps(data, ensure_ascii=False)
    assert RAW_CONTROL.search(text) is None
    for said in [data["message"], *(t["message"] for t in data["tests"])]:
        assert not _workflow_commands(said)


def test_every_format_is_attacked():
    """A new format in the table must be added to this file's tests."""
    assert set(FORMATS) == {"terminal", "html", "md", "json", "junit", "classroom"}


def test_escapes_by_kind():
    assert text_line("a\nb\tc\x1b[2J") == "a\\nb\\tc\\x1b[2J"
    assert text_block("ok\n  ::error::x") == "ok\n  \\::error::x"
    assert md_inline("<!-- # *a* [l](u)") == "&#60;&#33;-- &#35; &#42;a&#42; &#91;l&#93;(u)"
    # what means nothing where it stands stays as it is: a time, a quoted colon, a '>' inside the text
    plain = "12:20 +01:00 (due 12:00 +01:00): expected ':' · File > Save"
    assert md_inline(plain) == plain
    assert md_inline(" > a :+1: :100: http://x") == " &#62; a &#58;+1: &#58;100: http&#58;//x"
    assert md_code("````\nx", indent=2) == "  `````\n  ````\n  x\n  `````"
    assert md_code_span("a|`b") == "``a\\|`b``"
