"""grader.trees: the one map, clone and flatten of nested structures, parent and child alike."""
from __future__ import annotations

from collections import namedtuple

import torch

from grader.trees import clone, leaves, tree_map


def test_a_clone_shares_no_container_or_tensor_with_the_original():
    t = torch.arange(3.0)
    tokens = [b"ab", b"c", b" "]                           # a list of atoms only (the fast path)
    original = {"tokens": tokens, "merges": [(b"a", b"b")], "mixed": [1, t, "x"], "pair": (2.0, None, True)}
    copy = clone(original)
    assert copy == {"tokens": tokens, "merges": [(b"a", b"b")], "mixed": [1, copy["mixed"][1], "x"],
                    "pair": (2.0, None, True)}
    assert copy["tokens"] is not tokens and copy["merges"] is not original["merges"]
    copy["tokens"].append(b"z")
    copy["merges"].clear()
    assert tokens == [b"ab", b"c", b" "] and original["merges"] == [(b"a", b"b")]
    assert copy["mixed"][1] is not t and torch.equal(copy["mixed"][1], t)    # a tensor among atoms: cloned


def test_tuple_and_list_subclasses_come_back_plain_as_before():
    Pair = namedtuple("Pair", "left right")

    class Tokens(list):
        pass
    out = tree_map(lambda t: t, [Pair(b"a", b"b"), Tokens([b"c"]), Pair(torch.ones(1), 1)])
    assert [type(x) for x in out] == [tuple, list, tuple]
    assert out[0] == (b"a", b"b") and out[1] == [b"c"]


def test_atoms_that_are_subclasses_are_kept_as_they_are():
    class Token(bytes):
        pass
    token = Token(b"ab")
    out = clone([token, 3])
    assert type(out[0]) is Token and out[0] is token


def test_leaves_are_the_tensors_in_order():
    a, b = torch.zeros(1), torch.ones(2)
    found = leaves({"x": [a, b"t", (1, b)]})
    assert len(found) == 2 and found[0] is a and found[1] is b
