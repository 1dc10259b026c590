"""A substitute's tuple reads as the student's own type where a plain tuple cannot
(grader.sandbox.substitutes): correct code that names the fields of its own namedtuple, or the
properties of its own tuple subclass, keeps its marks where the grader's function stands in for its
own, and code that reads a plain tuple's way never runs the student's function a second time."""
from __future__ import annotations

import copy
import pickle
from collections import namedtuple

import pytest

from grader.sandbox import wire
from grader.sandbox.substitutes import recorded
from scenarios import submission

# The exercise graded with a substitute -> the function it stands in for, which the scenario's
# student returns as a namedtuple (lstm_cell, scaled_dot_product_attention, perceptron_update) or as
# a tuple subclass with properties (rnn_forward).
READ_BY_NAME = {"lstm.lstm_forward": "lstm_cell", "attention.multi_head_attention": "scaled_dot_product_attention",
                "rnn.rnn_bptt": "rnn_forward", "neurons.perceptron_fit": "perceptron_update"}


@pytest.fixture(scope="module")
def graded(grade_dir):
    names = [*READ_BY_NAME, *(f"{e.split('.')[0]}.{f}" for e, f in READ_BY_NAME.items())]
    return {e.id: e for e in grade_dir(submission("named_tuple_returns"), *names).exercises}


@pytest.mark.parametrize("exercise", sorted(READ_BY_NAME))
def test_reading_the_students_own_fields_of_a_substitutes_answer_keeps_full_marks(graded, exercise):
    e = graded[exercise]
    assert e.passed and e.points == e.max_points, (e.status, e.message)
    note = [n for n in e.notes if n.startswith("Graded with the grader's reference ")]
    assert note and READ_BY_NAME[exercise] in note[0].split(" in place of yours")[0], e.notes
    own = graded[f"{exercise.split('.')[0]}.{READ_BY_NAME[exercise]}"]
    assert own.passed and own.points == own.max_points


Pair = namedtuple("Pair", "first second")


def _own(calls: list):
    def pair(a, b):
        calls.append((a, b))
        return Pair(a, b)
    return pair


def test_a_plain_read_never_calls_the_students_own_function():
    calls: list = []
    called: set[str] = set()
    value = recorded("pair", lambda a, b: (a, b), called, _own(calls))(1, 2)
    first, second = value
    assert (first, second) == (1, 2) and value == (1, 2) and value[1] == 2 and len(value) == 2
    assert isinstance(value, tuple) and value + (3,) == (1, 2, 3)
    for copied in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert type(copied) is tuple and copied == (1, 2)
    assert not hasattr(value, "_fields") and not hasattr(value, "__array__")   # probes by private names
    assert wire.loads(wire.dumps(value)) == (1, 2)
    assert calls == [] and called == {"pair"}


def test_a_field_read_gives_the_substitutes_values_in_the_students_type():
    calls: list = []
    substitute = recorded("pair", lambda a, b: (a * 10, b * 10), set(), _own(calls))
    value = substitute(1, 2)
    assert (value.first, value.second) == (10, 20)          # the substitute's values, not their function's
    assert substitute(3, 4).second == 40
    assert calls == [(1, 2)]                                  # their function ran once, to learn its type
    with pytest.raises(AttributeError, match="'Pair' object has no attribute 'third'"):
        _ = value.third


def test_a_key_read_gives_the_substitutes_values_by_the_keys_of_the_students_dict():
    """A dict breaks the contract (lstm_cell returns the tuple (h_t, c_t)): that is charged once, in the
    function's own exercise; the function that reads it by key is graded on its own code."""
    calls: list = []

    def own(a, b):
        calls.append((a, b))
        return {"first": a, "second": b}
    value = recorded("pair", lambda a, b: (a * 10, b * 10), set(), own)(1, 2)
    assert value[0] == 10 and value[-1] == 20 and value[:1] == (10,) and calls == []
    assert (value["first"], value["second"]) == (10, 20) and calls == [(1, 2)]
    with pytest.raises(KeyError):
        _ = value["third"]


def test_a_students_function_that_returns_a_plain_tuple_or_fails_leaves_a_plain_tuple():
    for own in (lambda a, b: (a, b), lambda a, b: 1 / 0, lambda a, b: [a, b]):
        value = recorded("pair", lambda a, b: (a, b), set(), own)(1, 2)
        with pytest.raises(AttributeError, match="'tuple' object has no attribute 'first'"):
            _ = value.first
    for own in (lambda a, b: (a, b), lambda a, b: Pair(a, b)):
        with pytest.raises(TypeError, match="tuple indices must be integers or slices, not str"):
            _ = recorded("pair", lambda a, b: (a, b), set(), own)(1, 2)["first"]
    assert type(recorded("pair", lambda a, b: (a, b), set())(1, 2)) is tuple     # no function of theirs
    assert type(recorded("one", lambda a: [a], set(), _own([]))(1)) is list        # only tuples are answered


def test_a_namedtuples_own_methods_read_as_the_students_type():
    """A correct lstm_forward wrote `state._replace(h=...)` on its own namedtuple lstm_cell's answer
    (a red team's): under the substitute it raised, and lost its points. A namedtuple's methods read
    as the student's type does; `_fields`, which libraries probe, stays a plain tuple's."""
    calls: list = []
    value = recorded("pair", lambda a, b: (a * 10, b * 10), set(), _own(calls))(1, 2)
    assert not hasattr(value, "_fields") and calls == []
    assert value._replace(second=5) == Pair(10, 5) and type(value._replace(second=5)) is Pair
    assert value._asdict() == {"first": 10, "second": 20} and calls == [(1, 2)]
