"""Student text made harmless for the format it lands in: one function per kind of content.

Any string of a result may hold text a student chose (an exception message, what their code
printed, a file name), so every template passes each string of the result through the filter
of its format, whatever the field: which fields are the student's is not guessed from their text.

    text_line / text_block   terminal and CI logs (also the plain text of JUnit, pytest, Classroom):
                             control characters shown as `\\x1b`, `\\r`, `\\u202e`; a line never
                             starts with `::` (a GitHub workflow command: actions/runner,
                             ActionCommand.TryParseV2 trims leading spaces, then looks for `::`),
                             and holds no `##[` (the legacy form, read anywhere in a line)
    md_inline / md_block     Markdown text, also inside GitHub's HTML blocks (<summary>): every
                             character Markdown or HTML would read as syntax where it stands is an
                             entity (`&#35;`), which CommonMark shows as the character and never
                             reads as syntax (entities, not backslashes: those are literal in HTML)
    md_code_span             an inline code span, delimited by more backticks than any run inside
    md_code                  a fenced block longer than any backtick run inside it (CommonMark 4.5)
    xml_chars                what XML 1.0 cannot carry, replaced (JUnit; ElementTree escapes the rest)
    shown                    every value a template prints, whatever its format: control characters
                             shown (grader.reports.text's `finalize`)
    spreadsheet_cell         a CSV cell a spreadsheet would read as a formula, made text with a `'`

The HTML templates need no filter of these: they are autoescaped (grader.reports.text), and `shown`
keeps a student's escape sequences and bidi overrides out of the page and of a terminal that prints it.
"""
from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup

# C0 but tab and newline, DEL, C1; bidi embeddings, overrides and isolates; zero-width and
# invisible formatting characters, line and paragraph separators (str.splitlines breaks on them);
# lone surrogates, which no UTF-8 file can hold (grader.student_text makes them escapes where
# student text enters; one that got past is shown here, never left to fail the report's write).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                      "\ud800-\udfff]")
_WORKFLOW = re.compile(r"^(\s*)::", re.MULTILINE)
# Markdown's and HTML's syntax characters; `@` and `www.` start GitHub's bare autolinks, `$` its math.
# Only what can mean something is escaped, so that text stays readable (12:20 +01:00, File > Save):
# - `_` between letters or digits opens no emphasis (CommonMark 6.2): snake_case stays as it is;
# - `:` only where it can open an emoji code (`:white_check_mark:`, `:100:`: a run of [a-z0-9_+-] then
#   `:`) or a URL's `://` (GFM autolinks); elsewhere (`12:20 +01:00`, `expected ':'`) it is text;
# - `>` only first in the text (_QUOTE), where it would open a block quote, also after the template's
#   own `> ` or `- `; elsewhere it closes nothing, since every `<` is escaped.
_MD_SPECIAL = re.compile(r"[\\`*\[\]<&#|!~$@]|(?<![^\W_])_|_(?![^\W_])|:(?=[A-Za-z0-9_+-]+:|/)|(?i:(?<=www)\.)")
_QUOTE = re.compile(r"^(\s*)>")
_MD_LINE_START = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))", re.MULTILINE)
_INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _visible(ch: re.Match) -> str:
    code = ord(ch.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _controls(text: str) -> str:
    return _CONTROL.sub(_visible, str(text))


def shown(value: Any) -> Any:
    """`value`, a string with its control characters shown as in `text_block` (Markup stays markup:
    the grader's tags kept, a control character inside shown); any other value as it is."""
    if isinstance(value, Markup):
        return Markup(_controls(value))
    return _controls(value) if isinstance(value, str) else value


_FORMULA = re.compile(r"^[=+\-@\t\r]")      # a spreadsheet would read such a cell as a formula


def spreadsheet_cell(text: str) -> str:
    """A CSV cell of student text (an id, a folder's name): `=HYPERLINK(...)` stays text in a spreadsheet."""
    return "'" + text if _FORMULA.match(text) else text


def text_block(text: str) -> str:
    """Lines of text for a terminal or a CI log: newlines and tabs kept, every other control visible."""
    return no_legacy_commands(_WORKFLOW.sub(r"\1\\::", _controls(text)))


def no_legacy_commands(text: str) -> str:
    """`text` with no GitHub workflow command of the legacy form, `##[name]...`, which the Actions
    runner reads anywhere in a line (actions/runner, ActionCommand.TryParse: IndexOf("##[")). The red
    team's exception message held `##[stop-commands]tok`, which would have silenced every later
    annotation of the grader's. Shown as `##\\[`."""
    return text.replace("##[", "##\\[")


def text_line(text: str) -> str:
    """One line of text for a terminal or a CI log: a newline or tab in it shown as `\\n`, `\\t`."""
    return text_block(str(text).replace("\t", "\\t").replace("\n", "\\n"))


def _entity(ch: re.Match) -> str:
    return f"&#{ord(ch.group()):d};"


def md_inline(text: str) -> str:
    """Markdown text inside a line (a table cell, a summary, after `> `): line breaks become spaces."""
    return _QUOTE.sub(r"\1&#62;", _MD_SPECIAL.sub(_entity, " ".join(_controls(text).split("\n"))))


def md_block(text: str) -> str:
    """Lines of Markdown text, each rendered as written (no heading, list, rule, HTML, link, emphasis)."""
    lines = (_MD_LINE_START.sub(lambda m: m.group(1) + "".join(f"&#{ord(c)};" for c in m.group(2)), md_inline(line))
             for line in _controls(text).split("\n"))
    return "\n".join(lines)


def md_code(text: str, indent: int = 0) -> str:
    """A fenced code block holding `text` verbatim, each line indented by `indent` spaces.

    The fence is longer than the longest backtick run in the text, so no line can close it
    (CommonMark 4.5); every line, blank ones too, is indented, so none ends an enclosing list item.
    """
    body = _controls(text)
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", body)), default=0))
    pad = " " * indent
    return "\n".join(pad + line for line in [fence, *body.split("\n"), fence])


def md_code_span(text: str) -> str:
    """`text` as an inline code span, verbatim, also in a table cell (GFM: `\\|` splits no cell)."""
    body = " ".join(_controls(text).split("\n")).replace("|", "\\|")
    tick = "`" * (1 + max((len(run) for run in re.findall("`+", body)), default=0))
    pad = " " if body[:1] in ("`", " ") or body[-1:] in ("`", " ") else ""
    return f"{tick}{pad}{body}{pad}{tick}"


def xml_chars(text: str) -> str:
    """Text XML 1.0 can carry: each character it cannot is U+FFFD."""
    return _INVALID_XML.sub("\ufffd", str(text))
