"""Progress on stderr: rich's bar with counts, rate and ETA on a terminal, plain lines otherwise."""
import io
import re

from grader.frontends.batch.progress import Progress


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    p = Progress(3, skipped=2, stream=out, tty=False)
    p.begin()
    p.update("alice", 9, 9, "graded", failed=False, crashed=False)
    p.update("bob", 0, 9, "unreadable", failed=True, crashed=True)
    p.update("eve\x1b[2J[bold]", 1.5, 9, "graded", failed=True, crashed=False)
    p.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "grading 3 submissions, 2 unchanged and skipped"
    assert re.fullmatch(r"\[1/3\] alice: 9 / 9 \([\d.]+/min, ETA \S+\)", lines[1])
    assert lines[2].startswith("[2/3] bob: unreadable (")
    assert lines[3].startswith("[3/3] eve\\x1b[2J[bold]: 1.5 / 9 (")      # a name is shown, never run
    assert lines[4].startswith("graded 3 in ")
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_bar_with_rate_and_eta_on_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "140")                 # rich's width: a wide terminal shows every count
    out = io.StringIO()
    p = Progress(4, stream=out, tty=True)
    p.begin()
    p.update("alice", 9, 9, "graded", failed=False, crashed=False)
    p.update("bob", 3, 9, "graded", failed=True, crashed=True)
    frames = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.getvalue()).split("\r")
    assert re.search(r"[━╺╸]+ 2/4 0:00:\d\d ETA \S+ · [\d.]+/min · 1 not full marks · 1 crashed", frames[-1]), frames
    assert "alice" not in out.getvalue()                  # the bar, not one line per student
    p.finish()
    text = out.getvalue()
    assert text.startswith("grading 4 submissions\n") and "\x1b[?25h" in text    # the cursor is given back
    assert re.fullmatch(r"(\x1b\[\?25h)?graded 2 in \S+ \([\d.]+ submissions/min\)", text.splitlines()[-1])
