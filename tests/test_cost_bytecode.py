"""Issue 18: the student's modules are compiled once in the parent (grader.sandbox.bytecode), and a
child imports that bytecode only when it is the bytecode of the source beside it."""
from __future__ import annotations

import importlib.abc
import marshal
import os
import sys
import warnings

import pytest

from grader.pipeline import static
from grader.sandbox import bytecode
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Sandbox

SOURCE = "def f():\n    return 'compiled from the source'\n"
OTHER = b"def f():\n    return 'the bytecode written beside it'\n"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox() as sb:
        yield sb


@pytest.fixture
def workdir():
    folder = make_workdir()
    yield folder
    remove_workdir(folder)


def _pyc(workdir: str) -> str:
    return os.path.join(workdir, bytecode.FOLDER, f"m.{sys.implementation.cache_tag}.pyc")


def _graft(workdir: str, code_of: bytes) -> None:
    """The pyc beside m.py made to hold the code of `code_of`, its header (the source's hash) kept."""
    with open(_pyc(workdir), "rb") as f:
        header = f.read(16)
    with open(_pyc(workdir), "wb") as f:
        f.write(header + bytecode.compiled(code_of)[16:])


def _call_f(sandbox: Sandbox, workdir: str) -> tuple[object, str]:
    session = sandbox.open(workdir, "m", import_timeout=30)
    try:
        assert session.ready.kind == "ok", session.ready
        value = session.call("f", (), {}, timeout=30).value
    finally:
        session.close()
    return value, session.output[0]


def test_the_child_imports_the_bytecode_the_parent_wrote(sandbox, workdir):
    """What the child runs is the parent's bytecode: grafted with another function's code (the
    source's hash kept), the pyc is what answers. A child that compiled the source would not."""
    copy_submission({"m": SOURCE}, workdir, ["m"])
    _graft(workdir, OTHER)
    assert _call_f(sandbox, workdir)[0] == "the bytecode written beside it"


def test_bytecode_of_another_source_is_ignored(sandbox, workdir):
    """The hash is checked: a pyc that is not the source's (the source changed after it was
    written) is passed over, and the child compiles the source beside it, as it always did."""
    copy_submission({"m": SOURCE}, workdir, ["m"])
    with open(_pyc(workdir), "wb") as f:
        f.write(bytecode.compiled(OTHER))
    assert _call_f(sandbox, workdir)[0] == "compiled from the source"


def test_only_the_modules_named_are_compiled(workdir):
    copy_submission({"m": SOURCE, "n": SOURCE}, workdir, ["m"])
    assert os.listdir(os.path.join(workdir, bytecode.FOLDER)) == [os.path.basename(_pyc(workdir))]


@pytest.mark.parametrize("source", [
    "x = 1\nif x is 1:\n    pass\n",            # SyntaxWarning: "is" with a literal
    "PATTERN = '\\d+'\n",                        # DeprecationWarning: invalid escape sequence
    "def f(:\n    pass\n",                       # SyntaxError
    "x = 1\x00\n",                               # null byte
])
def test_a_source_the_compiler_remarks_on_gets_no_bytecode_and_the_parent_says_nothing(source, workdir, capfd):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")     # a filter before the module's own: the module puts its own first again
        assert bytecode.compiled(source.encode()) is None
        copy_submission({"m": source}, workdir, ["m"])
    assert not os.path.exists(os.path.join(workdir, bytecode.FOLDER))
    assert caught == [] and capfd.readouterr().err == ""


def test_the_compilers_warning_still_reaches_the_students_output(sandbox, workdir):
    copy_submission({"m": "def f():\n    x = 1\n    return x is 1\n"}, workdir, ["m"])
    value, output = _call_f(sandbox, workdir)
    assert value is True and "SyntaxWarning" in output and '"is" with a literal' in output, output


def test_the_bytecode_is_the_one_the_childs_import_would_compile():
    """What the import system compiles from the same bytes (importlib's own source_to_code: its own
    future imports only, not the grader's `annotations`), and it runs as such."""
    source = b"def f(x: undefined_name):\n    assert x\n    return __debug__\n"
    code = marshal.loads(bytecode.compiled(source)[16:])
    reference = importlib.abc.InspectLoader.source_to_code(source, bytecode._COMPILED_AS)
    assert marshal.dumps(code) == marshal.dumps(reference)
    with pytest.raises(NameError):      # the annotation is evaluated: the grader's __future__ import did not leak
        exec(code, {})


def test_the_import_closure_follows_the_students_own_imports():
    files = {"moe": "from transformer import feed_forward\nimport torch\n",
             "transformer": "from attention import causal_mask\n", "attention": "import transformer\n",
             "tokens": "import re\n"}
    assert static.import_closure("moe", files) == ["moe", "transformer", "attention"]
    assert static.import_closure("attention", files) == ["attention", "transformer"]     # a cycle ends
    assert static.import_closure("tokens", files) == ["tokens"]
