"""Whatever a child sends back, judging it is a verdict, never a grader fault.

The child is the student's process: a hostile one can send any value the wire decodes (an integer
of 400 digits, a bool matrix where weights belong, a dict without the keys a driver always writes).
A judge or comparison that raised on it would turn a wrong answer into "the grader failed, no grade"
(a GRADER_FAULT, retried on every run, never a grade). Every exercise of the catalog is graded here
in-process with its worked solution (grader.api.check_function), and each value its function or
driver returned (on its first case, and the capstone's) is judged again in many malformed variants,
each carried through the wire as a reply is (so only what a child could send): every judge, the
comparison, the known mistakes, the localisers and the heatmaps must answer each with a verdict.
"""
from __future__ import annotations

import math
from typing import Any, Iterator

import pytest
import torch

from grader.pipeline import run as pipeline_run
from grader.sandbox import wire

LEAVES_VARIED = 4       # the first few leaves of a value each get every variant (the rest: the same code)


def _leaf_variants(x: Any) -> Iterator[Any]:
    if isinstance(x, torch.Tensor):
        yield x.bool()
        yield x.long()
        yield x.double() if x.dtype != torch.float64 else x.float()
        yield x.reshape(-1)
        yield x.reshape(-1)[:0]
        yield x.sum() if x.is_floating_point() else torch.tensor(0)
        if x.is_floating_point():
            yield torch.full_like(x, math.nan)
            yield torch.full_like(x, torch.finfo(x.dtype).max)
        yield x.unsqueeze(0)
    yield 10 ** 400
    yield -(10 ** 30)
    yield math.inf
    yield "text"
    yield b"bytes"
    yield None
    yield []
    yield {}


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """Paths (keys and indices) to the leaves of a value, depth first."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))
    else:
        yield path


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    items = list(value)
    items[head] = _replaced(items[head], rest, new)
    return type(value)(items) if isinstance(value, tuple) else items


def _containers(value: Any) -> Iterator[Any]:
    """The value with one container changed: a dict less a key, a list or tuple one item short or
    long, a tuple as a list."""
    if isinstance(value, dict):
        for k in list(value)[:LEAVES_VARIED]:
            yield {key: v for key, v in value.items() if key != k}
            yield {**value, k: {"nested": value[k]}}
    if isinstance(value, (list, tuple)):
        yield type(value)(list(value)[:-1]) if isinstance(value, list) else tuple(value)[:-1]
        yield [*value, value[0] if value else 0]
        yield list(value)


def variants(value: Any) -> Iterator[Any]:
    """Malformed versions of a value a correct function returned, as a child could send them."""
    yield from (None, 10 ** 400, math.nan, "text", [], {}, (), [[[[[[1]]]]]], torch.zeros(0),
                torch.ones(2, 2, dtype=torch.bool), torch.tensor(7))
    yield from _containers(value)
    leaves = {path: _leaf(value, path) for path in _paths(value)}
    chosen = list(leaves)[:LEAVES_VARIED]
    chosen += [next(p for p, leaf in leaves.items() if kind(leaf)) for kind in (_is_number, _is_other)
               if any(map(kind, leaves.values()))]     # and the first number, the first other leaf
    for path in dict.fromkeys(chosen):
        for new in _leaf_variants(leaves[path]):
            yield _replaced(value, path, new)


def _leaf(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_other(x: Any) -> bool:
    return not isinstance(x, torch.Tensor) and not _is_number(x)


def _through_the_wire(value: Any) -> tuple[bool, Any]:
    try:
        return True, wire.loads(wire.dumps(value))
    except Exception:     # not something the child's encoder sends
        return False, None


@pytest.mark.slow
def test_every_judge_answers_every_value_a_child_could_send(config, solution_modules):
    from grader.api import check_function
    from grader.catalog import catalog

    judge, raised, judged, varied = pipeline_run.judge, [], [0], set()

    def judging_variants_too(spec, case, value, ref, tol, **kw):
        first = spec.id not in varied or "capstone" in case.kwargs     # a case of each kind: enough
        varied.add(spec.id)
        for variant in variants(value) if first else ():
            sent, decoded = _through_the_wire(variant)
            if not sent:
                continue
            judged[0] += 1
            try:
                judge(spec, case, decoded, ref, tol, **kw)
            except Exception as e:
                raised.append(f"{spec.id}, {case.name}: {type(e).__name__}: {e} (value {str(decoded)[:120]})")
        return judge(spec, case, value, ref, tol, **kw)

    pipeline_run.judge = judging_variants_too
    try:
        for exercise_id, spec in catalog().items():
            result = check_function(exercise_id, getattr(solution_modules[spec.module], spec.function), config)
            assert result.points == result.max_points, (exercise_id, result.message)
    finally:
        pipeline_run.judge = judge
    assert judged[0] > 61 * 20
    assert not raised, f"{len(raised)} values made a judge raise:\n" + "\n".join(raised[:40])
