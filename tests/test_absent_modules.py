"""Modules a student's code imports that are neither in the submission nor installed where the grader
runs (grader.sandbox.absent_modules): a notebook's `import seaborn as sns` no longer costs every
exercise of its module. The functions that do not use them are graded as written, with a note; one
that does fails, saying what is missing; an import the student guards, and a failure their own code
raises naming a module that exists, are left as they were."""
from __future__ import annotations

import sys
import textwrap

import pytest

from grader.pipeline.feedback import absent_note
from grader.sandbox import absent_modules, wire
from grader.sandbox.replies import outcome
from scenarios import submission

STOOD_IN = ("einops", "seaborn", "torchvision", "sklearn")


@pytest.fixture(scope="module")
def graded(grade_dir):
    return grade_dir(submission("absent_packages"), "attention")


def test_the_functions_that_do_not_use_an_absent_package_score_full_marks(graded):
    by_id = {e.id: e for e in graded.exercises}
    for exercise in ("attention.causal_mask", "attention.scaled_dot_product_attention",
                     "attention.multi_head_attention"):
        e = by_id[exercise]
        assert e.passed and e.points == e.max_points, (exercise, e.status, e.message)
        note = next(n for n in e.notes if n.startswith("Your code imports "))
        assert all(name in note for name in STOOD_IN) and "torchvision.transforms" not in note, note
        assert "not installed where the grader runs" in note and "of the course" not in note, note
        assert not [n for n in e.notes if "could not be imported as written" in n], e.notes
    used = by_id["attention.positional_encoding"]
    assert used.status.value == "error" and used.points == 0
    assert ("einops.rearrange cannot be used here: einops is neither a module at the top of your submission nor "
            "installed") in used.message


@pytest.fixture
def student_folder(tmp_path, monkeypatch):
    """A folder on sys.path for a module of the student's; every module imported meanwhile is
    forgotten after (stand-ins included)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _module(folder, name: str, source: str) -> str:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def test_what_is_taken_from_a_stand_in_fails_only_when_used(student_folder):
    name = _module(student_folder, "student_absent_a", """
        import zz_absent_pkg.sub as sub
        from zz_absent_other import helper, Thing
        from zz_absent_pkg import sub as same
        def f(x):
            return x + 1
        def g(x):
            return helper(x)
        """)
    module, absent = absent_modules.imported(name)
    assert absent == ["zz_absent_pkg", "zz_absent_pkg.sub", "zz_absent_other"]
    assert module.f(1) == 2 and module.sub is module.same
    with pytest.raises(ModuleNotFoundError, match="zz_absent_other.helper cannot be used here: zz_absent_other is "
                                                  "neither a module at the top of your submission nor "
                                                  "installed") as raised:
        module.g(1)
    assert raised.value.name == "zz_absent_other"
    for use in (lambda: list(module.Thing), lambda: module.sub.fn[0], lambda: module.Thing.method()):
        with pytest.raises(ModuleNotFoundError):
            use()
    assert not hasattr(module.sub, "__version__") and not hasattr(module.Thing, "__array__")


def test_a_guarded_import_and_a_raised_name_of_a_real_module_are_left_alone(student_folder):
    guarded = _module(student_folder, "student_absent_b", """
        try:
            import zz_absent_guarded
        except ImportError:
            zz_absent_guarded = None
        """)
    module, absent = absent_modules.imported(guarded)
    assert absent == [] and module.zz_absent_guarded is None
    raised = _module(student_folder, "student_absent_c", """
        raise ModuleNotFoundError("No module named 'os'", name="os")
        """)
    with pytest.raises(ModuleNotFoundError, match="'os'"):
        absent_modules.imported(raised)
    assert not isinstance(sys.modules["os"], absent_modules.AbsentModule)
    many = _module(student_folder, "student_absent_d", "".join(
        f"import zz_absent_many_{i}\n" for i in range(absent_modules.MOST + 1)))
    with pytest.raises(ModuleNotFoundError, match=f"zz_absent_many_{absent_modules.MOST}"):
        absent_modules.imported(many)


def test_the_parent_takes_only_module_names_from_the_child():
    ready = {"ready": True, "functions": ["f"], "notes": [], "hits": []}
    assert outcome({**ready, "absent": ["seaborn", "torchvision.transforms"]}).absent == (
        "seaborn", "torchvision.transforms")
    assert outcome(ready).absent == ()
    for bad in (["<b>seaborn</b>"], ["a b"], [1], "seaborn", [f"m{i}" for i in range(absent_modules.MOST + 1)]):
        with pytest.raises(wire.WireError):
            outcome({**ready, "absent": bad})
    assert absent_note("attention", ()) == ""
    note = absent_note("attention", ("torchvision", "torchvision.transforms"))
    assert note.startswith("Your code imports torchvision, which is not installed where the grader runs. "
                           "attention.py was graded with an empty stand-in in its place"), note


def test_a_course_module_left_out_of_the_submission_is_stood_in_for_and_named(grade_dir):
    """tests/fixtures/submissions/alt_transformer_plain holds transformer.py alone, which imports the
    student's attention.py: its exercises were all errors ("No module named 'attention'"). The
    grader's references stand in for what they take from attention, as they do beside a broken
    attention.py, so transformer.py's own code is what is graded."""
    result = grade_dir(submission("alt_transformer_plain"), "transformer.encoder_layer", "transformer.layer_norm")
    for e in result.exercises:
        assert e.passed and e.points == e.max_points, (e.id, e.status, e.message)
        assert ("Your code imports attention, a module of the course that your submission does not include: "
                "hand in attention.py with transformer.py.") in " ".join(e.notes), e.notes
