"""The control files the grading process reads and writes for each child (its group, the submission's
memory budget, the watch slot), through grader.sandbox.hierarchies, as open() read and wrote them."""
from __future__ import annotations

import pytest

from grader.sandbox import hierarchies


def test_control_values_are_written_and_read_as_open_did(tmp_path):
    path = str(tmp_path / "value")
    assert hierarchies.write_value(path, "123456\n")           # created, as open(path, "w") did
    assert hierarchies.write_value(path, "9")                  # and truncated
    assert hierarchies.read_text(path) == "9"
    assert hierarchies.read_value(path) == "9"
    big = "\n".join(str(i) for i in range(40_000))            # longer than one read
    assert hierarchies.write_value(path, big) and hierarchies.read_text(path) == big
    assert not hierarchies.write_value(str(tmp_path / "no" / "such"), "1")
    assert hierarchies.read_value(str(tmp_path / "missing")) == ""
    with pytest.raises(FileNotFoundError):
        hierarchies.read_text(str(tmp_path / "missing"))
