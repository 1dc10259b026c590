"""Progress on stderr: a bar with counts, rate and ETA on a terminal, plain lines otherwise."""
import io
import re

from grader.frontends.batch.progress import Progress


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    p = Progress(3, skipped=2, stream=out, tty=False)
    p.begin()
    p.update("alice", 9, 9, "graded", failed=False, crashed=False)
    p.update("bob", 0, 9, "unreadable", failed=True, crashed=True)
    p.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "grading 3 submissions, 2 unchanged and skipped"
    assert re.fullmatch(r"\[1/3\] alice: 9/9 \([\d.]+/min, ETA \S+\)", lines[1])
    assert lines[2].startswith("[2/3] bob: unreadable (")
    assert lines[3].startswith("graded 2 in ")
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_bar_with_rate_and_eta_on_a_terminal():
    out = io.StringIO()
    p = Progress(4, stream=out, tty=True)
    p.update("alice", 9, 9, "graded", failed=False, crashed=False)
    p.update("bob", 3, 9, "graded", failed=True, crashed=True)
    text = out.getvalue()
    last = text.split("\r\033[K")[-1]
    assert re.match(r"\[#{14}\.{14}\] 2/4 · [\d.]+/min · ETA \S+ · 1 not full marks · "
                    r"1 crashed, timed out or unreadable", last)
    p.finish()
    assert out.getvalue().endswith("\n") and "graded 2 in" in out.getvalue()
