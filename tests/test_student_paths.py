"""What a student reads names their files as they know them, relative to their submission, never
by the folders of the machine that graded it (the loader is where file names enter a result).

The whole batch is scanned for such paths by tests/test_browser_reports.py; these are the
loader's rules, one per kind of submission, and where the CI front-ends still find the file.
"""
import zipfile

from conftest import ROOT, SOLUTIONS
from grader import api
from grader.submission.loader import load_submission, on_disk


def _no_machine_path(sub, machine: str) -> None:
    assert all(machine not in shown for shown in sub.origin.values()), sub.origin
    assert all(machine not in problem for problem in sub.problems), sub.problems


def test_a_folder_names_its_modules_by_file_name(tmp_path):
    folder = tmp_path / "grading" / "bob"
    folder.mkdir(parents=True)
    (folder / "neurons.py").write_text((SOLUTIONS / "neurons.py").read_text())
    (folder / "attention.ipynb").write_text("{not json")
    sub = load_submission(str(folder))
    assert sub.origin == {"neurons": "neurons.py"}
    assert sub.problems and sub.problems[0].startswith("attention.ipynb: not a readable Jupyter notebook")
    _no_machine_path(sub, str(tmp_path))
    assert on_disk(sub.path, sub.origin["neurons"]) == str(folder / "neurons.py")      # CI still annotates it


def test_a_zip_names_its_members_and_itself_by_its_own_name(tmp_path):
    archive = tmp_path / "grading" / "bob.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("bob/neurons.py", (SOLUTIONS / "neurons.py").read_text())
    sub = load_submission(str(archive))
    assert sub.origin == {"neurons": "bob/neurons.py"} and on_disk(sub.path, "bob/neurons.py") == ""
    _no_machine_path(sub, str(tmp_path))
    empty = tmp_path / "grading" / "carol.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("notes.txt", "no code")
    assert load_submission(str(empty)).problems == ("carol.zip: the archive holds no .py modules or .ipynb notebooks",)


def test_a_single_file_and_an_empty_folder(tmp_path):
    one = tmp_path / "grading" / "neurons.py"
    one.parent.mkdir()
    one.write_text((SOLUTIONS / "neurons.py").read_text())
    sub = load_submission(str(one))
    assert sub.origin == {"neurons": "neurons.py"} and on_disk(sub.path, "neurons.py") == str(one)
    (tmp_path / "grading" / "erin").mkdir()
    empty = load_submission(str(tmp_path / "grading" / "erin"))
    assert empty.problems[0].startswith("erin: no .py modules found")
    _no_machine_path(empty, str(tmp_path))


def test_the_configuration_is_named_as_given_or_by_its_file_name(tmp_path, monkeypatch):
    assert api.load(str(ROOT / "autograde.toml"), env={}).summary()["config"] == "autograde.toml"
    monkeypatch.chdir(ROOT / "tests")
    assert api.load("../autograde.toml", env={}).summary()["config"] == "../autograde.toml"
