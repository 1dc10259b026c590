"""Stubs are generated from solutions; exercises/ must be exactly what the generator makes."""
import pytest

from conftest import ROOT
from grader.stubs import StubError, make_stub, stale


def test_exercises_match_the_generator():
    bad = stale(str(ROOT / "solutions"), str(ROOT / "exercises"))
    assert not bad, f"regenerate with `grader stubs`: {bad}"


def test_regions_become_not_implemented_naming_the_exercise():
    src = 'def f(x):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n'
    stub = make_stub(src, "mod")
    assert 'raise NotImplementedError("mod.f: not implemented yet")' in stub
    assert "return x" not in stub and '"""Doc."""' in stub


def test_no_solution_text_leaks_into_any_stub():
    for path in (ROOT / "solutions").glob("*.py"):
        stub = (ROOT / "exercises" / path.name).read_text()
        assert "BEGIN SOLUTION" not in stub and "END SOLUTION" not in stub


@pytest.mark.parametrize("src", [
    "def f():\n    ### BEGIN SOLUTION\n    return 1\n",
    "def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n",
])
def test_malformed_regions(src):
    with pytest.raises(StubError):
        make_stub(src, "mod", "mod.py")
