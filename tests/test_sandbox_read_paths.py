"""What the grading process decides on the file system for each child, with one stat a path: the
Landlock read paths, and whether others may read all of them (a child keeps a read capability
otherwise)."""
from __future__ import annotations

import collections
import os
import random
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import provision


def _oracle(path: str) -> bool:
    """The rule, spelled out: every folder on the way searchable by others, the path readable by them."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        sub = os.sep.join(parts[:i]) or os.sep
        if os.path.isdir(sub) and not os.stat(sub).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IROTH)


@pytest.fixture
def open_folder():
    """A folder others may search, in /tmp (pytest's own tmp_path lies beneath a private one)."""
    folder = Path(tempfile.mkdtemp(prefix="read-paths-"))
    os.chmod(folder, 0o755)
    yield folder
    for root, dirs, _ in os.walk(folder):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(folder)


def test_world_readable_is_the_rule_for_every_path_together(open_folder):
    rng, tmp_path = random.Random(7), open_folder
    files = []
    for d in range(6):
        folder = tmp_path / f"d{d}" / "inner"
        folder.mkdir(parents=True)
        for f in range(3):
            path = folder / f"f{f}"
            path.write_text("x")
            os.chmod(path, rng.choice((0o644, 0o640, 0o600, 0o604)))
            files.append(str(path))
        os.chmod(folder, rng.choice((0o755, 0o750, 0o711, 0o754)))
        os.chmod(folder.parent, rng.choice((0o755, 0o751, 0o700)))
    link = tmp_path / "link"
    link.symlink_to(files[0])
    files.append(str(link))
    decided = collections.Counter()
    for _ in range(300):
        chosen = rng.sample(files, rng.randint(1, 3))
        decided[provision.world_readable(chosen)] += 1
        assert provision.world_readable(chosen) == all(map(_oracle, chosen)), chosen
    assert decided[True] > 20 and decided[False] > 20, decided
    assert provision.world_readable(provision.read_paths()) == all(map(_oracle, provision.read_paths()))


def test_a_missing_path_is_an_error_as_os_stat_says(open_folder):
    with pytest.raises(FileNotFoundError):
        provision.world_readable([str(open_folder / "gone")])


def test_each_path_is_looked_up_once_a_decision(monkeypatch):
    seen: collections.Counter[str] = collections.Counter()
    real = os.stat

    def counted(path, *args, **kwargs):
        seen[os.fspath(path)] += 1
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "stat", counted)
    modes = provision.Modes()                   # as the sandbox decides for a child: both questions at once
    paths = provision.read_paths(modes)
    provision.world_readable(paths, modes)
    assert paths and max(seen.values()) == 1, seen.most_common(3)
    assert seen["/etc"] == 1 and seen["/etc/passwd"] == 1
    seen.clear()
    provision.world_readable(paths)             # on its own: one stat a folder or file, however many share it
    assert max(seen.values()) == 1, seen.most_common(3)


def test_read_paths_exist_and_leave_the_grader_package_out():
    package = os.path.join(provision.package_root(), "grader")
    paths = provision.read_paths()
    assert all(os.path.exists(p) for p in paths)
    assert not any(p == package or p.startswith(package + os.sep) or (package + os.sep).startswith(p + os.sep)
                   for p in paths)
    assert os.path.realpath(os.__file__).startswith(tuple(os.path.realpath(p) + os.sep for p in paths))
