"""What `grader check` prints (grader/reports/terminal.py): goldens at 80 and 160 columns, wrapping,
colours and who decides them, stubs collapsed, student text shown as typed.

Goldens under tests/goldens/ are refreshed with `pytest --update-goldens` (then read the diff).
"""
import dataclasses
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from grader.reports import render
from grader.reports.terminal import PALETTE
from grader.results import CaseResult, ExerciseResult, PerfResult, Status, SubmissionResult

SGR = re.compile(r"\x1b\[([0-9;]*)m")
COLOUR_CODES = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")
LONG = ("out wrong: 38 of 40 values differ (95.0%); max abs error 1.57 at [1, 0, 3] (tolerance 2e-05 + "
        "0.0001*|expected|); weights wrong: 30 of 50 values differ (60.0%); max abs error 1 at [0, 0, 0]")


def _case(name, message="", status=Status.FAILED, description="", diagnosis=""):
    return CaseResult(name=name, status=status, message=message, description=description, diagnosis=diagnosis)


def _stub(exercise_id, points=1.0):
    msg = ("not implemented yet: replace the `raise NotImplementedError(...)` in "
           f"exercises/{exercise_id.split('.')[0]}.py")
    return ExerciseResult(id=exercise_id, status=Status.NOT_IMPLEMENTED, points=0.0, max_points=points,
                          cases=(_case("T=4", msg, Status.NOT_IMPLEMENTED),), message=msg,
                          notes=("graded on its own code: it did not call the others",))


def course() -> SubmissionResult:
    """A student half-way: passes, a diagnosed failure with long case messages, cases failing alike,
    a forbidden API, notes and prints, a performance check, untouched stubs, a grader fault."""
    sdpa = ExerciseResult(
        id="attention.scaled_dot_product_attention", status=Status.FAILED, points=1.5, max_points=3.0,
        cases=(_case("small, no mask", status=Status.PASSED), _case("causal 2-D mask, d_k != d_v", LONG,
               description="Q: (2, 5, 16) float32, K: (2, 5, 16) float32, V: (2, 5, 4) float32, mask: (5, 5) bool",
               diagnosis="mask inverted: True in the mask means 'may attend': fill the scores with -inf where "
                         "the mask is False"),
               _case("heads", "out wrong: 3 of 120 values differ (2.5%); max abs error 0.25 at [1, 2, 0, 4]",
                     description="Q: (2, 3, 4, 8) float32"),
               _case("T=1", status=Status.PASSED),
               _case("hidden 1", "values differ from the reference", description="inputs withheld (hidden case)"),
               _case("hidden 2", "values differ from the reference", description="inputs withheld (hidden case)")),
        message=f"2 of 6 cases passed; first failure: causal 2-D mask, d_k != d_v — {LONG}",
        diagnosis="mask inverted: True in the mask means 'may attend': fill the scores with -inf where the mask "
                  "is False", output="x" * 120, reference="torch.nn.functional.scaled_dot_product_attention")
    missing = ExerciseResult(
        id="attention.multi_head_attention", status=Status.ERROR, points=0.0, max_points=3.0,
        cases=tuple(_case(f"case {i}", "no function named multi_head_attention in attention.py: keep the name and "
                          "signature of the stub", Status.ERROR) for i in range(6)),
        message="0 of 6 cases passed; first failure: case 0 — no function named multi_head_attention")
    forbidden = ExerciseResult(
        id="attention.positional_encoding", status=Status.FORBIDDEN, points=0.0, max_points=2.0,
        message="uses a forbidden API: torch.nn.functional.scaled_dot_product_attention (line 16). Why: this "
                "exercise is the thing itself: write it with tensor operations.")
    fast = ExerciseResult(id="attention.causal_mask", status=Status.PASSED, points=1.0, max_points=1.0,
                          cases=(_case("T=4", status=Status.PASSED),) * 4, message="all 4 cases passed",
                          performance=(PerfResult(name="speed on cpu (1 thread)", status=Status.PASSED, ratio=1.234,
                                                  threshold=2.0),))
    fault = ExerciseResult(id="moe.moe_forward", status=Status.GRADER_FAULT, points=0.0, max_points=3.0,
                           message="the grader failed on this exercise (a bug in the grader, not in your code; "
                                   "no grade): RuntimeError: reference exploded")
    stubs = [_stub(i) for i in ("neurons.heaviside", "neurons.sign", "neurons.perceptron_forward",
                                "activations.sigmoid", "activations.sigmoid_grad", "activations.tanh")]
    stubs.append(_stub("transformer.encoder_layer", 2.5))
    return SubmissionResult(
        submission="exercises", exercises=(*stubs, fast, sdpa, missing, forbidden, fault),
        settings={"config": "autograde.toml", "call_timeout_s": 10.0, "memory_mb": 2048, "hidden_cases": True},
        errors=("attention.py does not import as written: SyntaxError: '(' was never closed (attention.py, line 125)",),
        seconds=4.83, grader_version="0.1.0")


@pytest.mark.parametrize("width", [80, 160])
def test_golden(width, request):
    text = render(course(), "terminal", color=False, width=width, wall_seconds=12.34)
    golden = ROOT / "tests" / "goldens" / f"terminal_{width}.txt"
    if request.config.getoption("--update-goldens"):
        golden.write_text(text)
    assert text == golden.read_text(), f"{golden.name} changed; if intended, run pytest --update-goldens"


@pytest.mark.parametrize("width", [40, 80, 160])
def test_no_line_is_longer_than_the_width_and_no_word_is_broken(width):
    text = render(course(), "terminal", color=False, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert not [line for line in text.splitlines() if line != line.rstrip()], "trailing spaces"
    words = set(text.split())
    for word in LONG.split():          # every word of a long message is whole on some line
        assert word in words, word


def test_the_headline_is_not_repeated_and_stubs_are_collapsed():
    text = render(course(), "terminal", color=False, width=100)
    assert "first failure:" not in text                       # the cases below say it, once
    assert text.count("38 of 40 values differ") == 1
    assert "7 exercises not started (8.5 points)" in text
    assert re.search(r"^  neurons +heaviside, sign, perceptron_forward$", text, re.M)
    assert "not implemented yet" not in text and "graded on its own code" not in text   # a stub's lines: none
    assert text.count("no function named multi_head_attention") == 1 and "all 6 cases" in text
    assert "- 2 cases: hidden 1; hidden 2" in text
    assert "PASS      speed on cpu (1 thread): 1.23x the reference (limit 2.0x)" in text
    assert "uses a forbidden API" in text and "RuntimeError: reference exploded" in text


def test_points_and_settings_read_the_same_everywhere():
    from grader.reports.filters import points, score
    from grader.reports.labels import settings_line
    assert [points(x) for x in (1.5, 2.0, 2 / 3, 0.0, -0.0, 112)] == ["1.5", "2", "0.67", "0", "0", "112"]
    assert score(1.5, 9) == "1.5 / 9"
    assert settings_line({"call_timeout_s": 10.0, "hidden_cases": False, "memory_mb": 2048, "new_key": 3}) == \
        "call limit 10.0 s · memory 2048 MiB · hidden cases off · new key 3"
    text = render(course(), "terminal", color=False, width=160, wall_seconds=12.34)
    assert "1.5 / 3" in text and "Score: 2.5 / 20.5 · 12.3 s in all, 4.8 s of it grading" in text
    assert "call limit 10.0 s · memory 2048 MiB · hidden cases on" in text and "call_timeout_s" not in text
    md = render(course(), "md")
    assert "1.5 / 3" in md and "1.50" not in md


def test_student_markup_is_shown_as_typed():
    """rich never reads a student's text as markup, emoji codes or links."""
    said = "[bold red]PASS[/bold red] [link=https://evil.example]click[/link] :white_check_mark: [/]"
    r = course()
    sdpa = next(e for e in r.exercises if e.id.endswith("scaled_dot_product_attention"))
    evil = dataclasses.replace(sdpa, diagnosis=said, cases=tuple(dataclasses.replace(c, message=said)
                                                                for c in sdpa.cases))
    r = dataclasses.replace(r, exercises=(evil,), errors=(said,))
    for color in (False, True):
        text = render(r, "terminal", color=color, width=200)
        plain = SGR.sub("", text)
        assert plain.count(said) >= 3, plain
        assert "\x1b]8;" not in text and "✅" not in text


def test_a_wrapped_line_never_starts_a_workflow_command():
    r = course()
    e = dataclasses.replace(r.exercises[-2], message="x " * 30 + "::error::forged " + "y " * 30)
    for width in range(40, 90, 7):
        lines = render(dataclasses.replace(r, exercises=(e,)), "terminal", color=False, width=width).splitlines()
        assert not [line for line in lines if line.lstrip().startswith("::")], width


# ------------------------------------------------------------------ colours: who decides
def _codes(text: str) -> set[str]:
    return set(SGR.findall(text))


def test_palette_is_the_standard_colours_the_spoofing_test_strips():
    from rich.console import Console
    from rich.style import Style
    from test_reports_spoofing import COLOR
    con = Console(color_system="standard", force_terminal=True)
    for style in PALETTE.values():
        rendered = Style.parse(style).render("x", color_system=con._color_system)
        assert COLOR.sub("", rendered) == "x", style


@pytest.mark.parametrize("env,color,colours", [
    ({"FORCE_COLOR": "1"}, None, True),                  # FORCE_COLOR: on, though the output is piped
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, None, False),  # NO_COLOR: no colour (bold and dim are no colour)
    ({}, None, False),                                   # piped (pytest captures stdout): off
    ({"NO_COLOR": "1"}, True, True),                     # --color wins over the environment
    ({"FORCE_COLOR": "1"}, False, False),                # --no-color too: nothing at all
])
def test_colours_follow_rich_and_the_flag_wins(monkeypatch, env, color, colours):
    for var in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    text = render(course(), "terminal", color=color, width=80)
    assert bool(COLOUR_CODES.search(text)) is colours
    if color is False or not env:
        assert "\x1b" not in text


def _grader(*args, env):
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "COLUMNS")}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**base, **env})


@pytest.mark.slow
def test_the_commands_follow_the_same_rules():
    """The real commands, piped: FORCE_COLOR turns colour on, --no-color wins over it, --color wins
    over NO_COLOR, and plain output has no escape at all; COLUMNS sets the width."""
    p = _grader("check", "attention.causal_mask", "--submission", "solutions", env={"FORCE_COLOR": "1"})
    assert p.returncode == 0 and COLOUR_CODES.search(p.stdout), p.stdout + p.stderr
    assert "Score: 1 / 1 · " in SGR.sub("", p.stdout) and " s in all, " in p.stdout
    p = _grader("check", "attention.causal_mask", "--submission", "solutions", "--color", env={"NO_COLOR": "1"})
    assert COLOUR_CODES.search(p.stdout), p.stdout
    assert "\x1b" not in _grader("list", "--no-color", env={"FORCE_COLOR": "1"}).stdout
    for columns in (80, 160):
        p = _grader("list", env={"COLUMNS": str(columns)})
        lines = p.stdout.splitlines()
        assert p.returncode == 0 and "\x1b" not in p.stdout and max(map(len, lines)) <= columns
        assert "61 exercises, " in lines[-1]
        row = next(line for line in lines if line.startswith("neurons.perceptron_forward "))
        assert ("as the case's step says" in row) is (columns == 160)      # wrapped at 80, never cut
        assert "as the case's step says" in p.stdout


def test_precedence_flag_then_environment_then_autograde_toml(monkeypatch, config):
    from grader.frontends.commands import color_of
    for var in ("FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    always = dataclasses.replace(config, color="always")
    assert color_of(always) is True and color_of(config) is None          # the file, else rich decides
    monkeypatch.setenv("NO_COLOR", "1")
    assert color_of(always) is None                                       # the environment beats the file
    assert color_of(always, "always") is True and color_of(config, "never") is False   # the flag beats both


def test_exercises_that_ended_alike_without_a_case_are_said_once():
    """A missing module, or the grader failing on every exercise, is one row and one message per module."""
    def missing(i, status=Status.ERROR, message="your submission has no neurons.py: add the module"):
        return ExerciseResult(id=f"neurons.f{i}", status=status, points=0.0, max_points=1.0 + i, message=message)
    r = SubmissionResult(submission="s", exercises=(*(missing(i) for i in range(5)),
                                                   missing(5, Status.GRADER_FAULT, "the grader failed"),
                                                   missing(6, Status.GRADER_FAULT, "the grader failed"),
                                                   missing(7, Status.FORBIDDEN, "uses a forbidden API")), seconds=1.0)
    text = render(r, "terminal", color=False, width=80)
    assert text.count("your submission has no neurons.py") == 1 and text.count("      the grader failed\n") == 1
    assert re.search(r"^  ERROR +5 exercises +0 / 15$", text, re.M) and "      f0, f1, f2, f3, f4" in text
    assert re.search(r"^  INTERNAL +2 exercises +0 / 13$", text, re.M) and "      f5, f6" in text
    assert re.search(r"^  FORBIDDEN +f7 +0 / 8 +0/0 cases$", text, re.M)
    assert "Not a grade: the grader failed on neurons.f5, neurons.f6." in text
