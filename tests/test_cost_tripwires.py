"""Issue 18: the tripwires of the catalog are made once in the sandbox's zygote
(grader.sandbox.tripwires.prepare); each child puts its own exercise's in place, and they record
exactly what wrappers made in the child record."""
from __future__ import annotations

from dataclasses import asdict

import pytest

from grader.catalog import catalog, rules
from grader.pipeline.engine import tripwire_targets
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Sandbox

STUDENT = '''import sys
import torch


def f():
    made = sys.modules["grader.sandbox.tripwires"]._ready.get((RULE, "torch.relu"))
    in_place = made is not None and torch.relu is made[3]
    torch.relu(torch.ones(2))
    return in_place
'''
CALL_LINE = 8


@pytest.fixture
def workdir():
    folder = make_workdir()
    copy_submission({"m": f"RULE = {rules.RELU.name!r}\n" + STUDENT}, folder)
    yield folder
    remove_workdir(folder)


def _call(sandbox: Sandbox, workdir: str):
    session = sandbox.open(workdir, "m", forbidden=[asdict(rules.RELU)], import_timeout=30)
    try:
        assert session.ready.kind == "ok", session.ready
        return session.call("f", (), {}, timeout=30)
    finally:
        session.close()


@pytest.mark.parametrize("prepared", [True, False], ids=["made in the zygote", "made in the child"])
def test_the_childs_tripwires_are_the_zygotes_and_record_the_same(workdir, prepared):
    """The first child after the sandbox starts already has the zygote's wrappers in place (the
    spare forked before they were made is not used); a target that does not resolve is passed over.
    The hit, its rule, file and line, is the same as a wrapper made in the child records."""
    targets = tripwire_targets([s for s in catalog().values() if rules.RELU in s.forbidden])
    assert (rules.RELU.name, "torch.relu") in targets
    with Sandbox(tripwires=targets + [("a rule", "torch.no_such_function")] if prepared else ()) as sandbox:
        outcome = _call(sandbox, workdir)
        again = _call(sandbox, workdir)
    assert outcome.kind == "ok" and outcome.value is prepared and again.value is prepared
    line = CALL_LINE + 1
    for o in (outcome, again):      # the tripwire's hit, then the operator watch's (aten::relu)
        assert [(h["rule"], h["via"], h["file"], h["line"]) for h in o.hits] == \
            [(rules.RELU.name, "torch.relu", "m.py", line), (rules.RELU.name, "aten::relu", "m.py", line)]
