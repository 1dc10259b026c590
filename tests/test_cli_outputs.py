"""Where a command writes is checked before anything runs: a folder given for a file, a file for a
folder, a place where nothing can be written is a usage error (exit 2, the flag, the path and why),
never a traceback after the grading; and checking leaves nothing behind. A batch says what it found
when it found no student."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SOLUTIONS
from grader.cli import main
from grader.frontends.batch.executors import BatchError
from grader.frontends.batch.run import Options, run_batch

# (argv before the flag, the flag, whether it names a folder): every command's output destination.
DESTINATIONS = [
    (["check", "attention"], "--output", False),
    (["ci"], "--out", True),
    (["ci"], "--summary", False),
    (["batch", "subs"], "--out", True),
    (["similarity", "subs"], "--out", True),
    (["notebooks"], "--out", True),
    (["export", "csv", "graded", "--format", "canvas", "--name", "hw"], "--output", False),
    (["gradescope"], "--out", False),
    (["bench", "attention.causal_mask"], "--output", False),
    (["init-ci"], "--output", False),
]


def refused(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("before,flag,folder", DESTINATIONS, ids=lambda x: " ".join(x) if isinstance(x, list) else x)
def test_a_destination_that_cannot_be_written_is_a_usage_error_before_anything_runs(before, flag, folder, tmp_path,
                                                                                     capsys):
    a_file, a_folder = tmp_path / "a-file", tmp_path / "a-folder"
    a_file.write_text("kept\n")
    a_folder.mkdir()
    wrong_kind = a_file if folder else a_folder
    err = refused([*before, flag, str(wrong_kind)], capsys)
    assert f"argument {flag}: {wrong_kind} is a {'file' if folder else 'folder'}: name a " in err
    under_a_file = a_file / "sub" / "x"
    err = refused([*before, flag, str(under_a_file)], capsys)
    assert f"{a_file} is a file, so no folder can be made under it" in err
    err = refused([*before, flag, "/proc/no-such-folder/x"], capsys)
    assert "nothing can be written in /proc (No such file or directory); choose a path" in err
    assert sorted(os.listdir(tmp_path)) == ["a-file", "a-folder"] and a_file.read_text() == "kept\n"
    assert not os.listdir(a_folder)


def test_a_folder_for_the_gradescope_bundle_suggests_autograder_zip_in_it(tmp_path, capsys):
    err = refused(["gradescope", "--out", str(tmp_path)], capsys)
    assert f"{tmp_path} is a folder: name a file in it, e.g. {tmp_path / 'autograder.zip'}" in err


def test_a_writable_destination_is_taken_and_the_check_leaves_nothing(tmp_path):
    from grader.frontends.commands import output_file, output_folder
    nested = tmp_path / "new" / "deeper" / "report.html"
    assert output_file(str(nested)) == str(nested) and output_folder(str(tmp_path / "out")) == str(tmp_path / "out")
    assert os.listdir(tmp_path) == []        # made by the command when it writes, not by the check
    assert output_file("/dev/stdout") == "/dev/stdout"     # a file that exists: its own permission decides


def test_a_report_the_system_refuses_to_take_is_a_usage_error_naming_the_flag(tmp_path):
    """/proc/version passes the check beforehand as root (os.access) and refuses the write (EIO): that
    was an OSError traceback, exit 3, as a full disk would be."""
    from grader.errors import UsageError
    from grader.frontends.commands import write_output
    with pytest.raises(UsageError, match=r"^--output /proc/version: cannot be written \(.+\); choose another path$"):
        write_output("/proc/version", "<html>", "--output")
    with pytest.raises(UsageError, match="^--output .*: cannot be written"):
        write_output(str(tmp_path), "a,b\n", "--output", atomic=True)
    write_output(str(tmp_path / "new" / "r.md"), "x", "--output")
    write_output(str(tmp_path / "new" / "r.md"), "y", "--output", append=True)
    assert (tmp_path / "new" / "r.md").read_text() == "xy"


@pytest.mark.parametrize("name", ["x.txt", "plot", "x.png.bak"])
def test_bench_refuses_a_plot_matplotlib_cannot_write_before_timing(name, tmp_path, capsys):
    """Before: timed every size, then matplotlib's ValueError and exit 3 (a 'bug in the grader')."""
    err = refused(["bench", "attention.scaled_dot_product_attention", "--output", str(tmp_path / name)], capsys)
    stem = os.path.splitext(str(tmp_path / name))[0]
    assert (f"argument --output: {tmp_path / name}: the plot is written as .png, .svg, .pdf; end the file name in "
            f"one of them, e.g. {stem}.png") in err
    assert os.listdir(tmp_path) == []


def test_every_plot_format_bench_takes_is_one_matplotlib_writes(tmp_path):
    from grader.catalog import select
    from grader.frontends.commands.bench import PLOT_FORMATS
    from grader.timing.scaling import Row, plot
    from grader.timing.specs import perf_specs
    (spec,) = select(["attention.scaled_dot_product_attention"])
    rows = [Row(8, 0.1, 0.05, 2.0, 0.03, 32), Row(16, 0.2, 0.1, 2.0, 0.03, 32)]
    for ext in PLOT_FORMATS:
        path = tmp_path / f"made{ext}"
        assert plot(rows, perf_specs(spec)[0], "cpu", str(path)) == str(path) and path.stat().st_size > 0


def test_bench_writes_its_plot_in_the_working_folder_and_says_where(tmp_path):
    """The default reports/bench-<exercise>.png is the working folder's, as ci --out grader-results
    is (before: the folder of autograde.toml); sizes as the README writes them, spaces between."""
    p = subprocess.run([sys.executable, "-m", "grader", "bench", "attention.scaled_dot_product_attention",
                        "--config", str(ROOT / "autograde.toml"), "--submission", str(SOLUTIONS), "--budget", "0.3",
                        "--sizes", "16", "8"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NO_COLOR": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert [line.split()[0] for line in p.stdout.splitlines()[3:5]] == ["8", "16"]
    plot = "reports/bench-attention.scaled_dot_product_attention.png"
    assert f"plot written to {plot} (made the folder reports)" in p.stdout
    assert (tmp_path / plot).stat().st_size > 0 and os.listdir(tmp_path) == ["reports"]


def test_batch_refuses_to_write_into_the_submissions_folder_itself(tmp_path, config):
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    with pytest.raises(BatchError, match=r"is the submissions folder itself.*e\.g\. --out .*subs-graded"):
        run_batch(Options(submissions=str(subs), out=str(subs) + "/", names=("attention.causal_mask",)), config)
    assert os.listdir(subs) == ["alice"]


def test_a_batch_that_finds_no_student_says_what_a_class_is(tmp_path, config):
    one, empty = tmp_path / "hw3", tmp_path / "empty"
    one.mkdir()
    empty.mkdir()
    (one / "attention.py").write_text("import torch\n")
    with pytest.raises(BatchError) as said:
        run_batch(Options(submissions=str(one), out=str(tmp_path / "a"), names=("attention.causal_mask",), jobs=1),
                  config)
    assert str(said.value) == (
        f"no submissions in {one}, but modules of its own (attention.py): a class is one folder or .zip per "
        f"student; to grade this one, run grader check --submission {one}\n  attention.py: skipped (not a folder or "
        "a .zip)")
    with pytest.raises(BatchError) as said:
        run_batch(Options(submissions=str(empty), out=str(tmp_path / "b"), names=("attention.causal_mask",), jobs=1),
                  config)
    assert str(said.value) == f"no submissions in {empty}: a class is one folder or .zip per student, or nbgrader's " \
                              "submitted/"
    assert sorted(os.listdir(tmp_path)) == ["empty", "hw3"]        # no --out folder made for nothing
