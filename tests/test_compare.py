"""Comparison: shape and dtype first, then NaN/Inf, then error figures; zeros never pass."""
import torch

from grader.pipeline.compare import compare_outputs, compare_tensor
from grader.sandbox import wire

TOL = lambda dtype: (1e-5, 1e-4)  # noqa: E731


def test_equal_within_tolerance():
    e = torch.randn(4, 5)
    c = compare_tensor(e + 1e-7, e, "out", TOL)
    assert c.ok and c.max_abs_error < 1e-6


def test_zeros_never_pass_for_order_one_outputs():
    e = torch.randn(8, 8)
    c = compare_tensor(torch.zeros(8, 8), e, "out", TOL)
    assert not c.ok and c.mismatch_fraction > 0.9


def test_shape_mismatch_is_reported_before_values():
    c = compare_tensor(torch.zeros(3, 4), torch.zeros(4, 3), "out", TOL)
    assert not c.ok and c.problem == "shape (3, 4) but expected (4, 3)"


def test_dtype_mismatch():
    c = compare_tensor(torch.zeros(2, dtype=torch.float64), torch.zeros(2), "out", TOL)
    assert not c.ok and c.problem == ("dtype float64 but expected float32 (return float32: the inputs' "
                                  "dtype, or the one the docstring names where the inputs are not tensors); its "
                                  "values are right")
    wrong = compare_tensor(torch.ones(2, dtype=torch.float64), torch.zeros(2), "out", TOL)
    assert wrong.problem.endswith("are not tensors)"), wrong.problem
    nan = compare_tensor(torch.full((2,), float("nan")), torch.ones(2, dtype=torch.bool), "mask", TOL)
    assert nan.problem == "dtype float32 but expected bool (return a torch.bool tensor)", nan.problem
    mask = compare_tensor(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.bool), "mask", TOL)   # causal_mask(T)
    assert mask.problem == "dtype float32 but expected bool (return a torch.bool tensor); its values are right"


def test_a_python_number_for_a_0d_tensor_is_named_as_the_item_mistake():
    """mse_loss returning loss.item(): the value may be right, the type is not (the stub says 0-d tensor)."""
    right = compare_tensor(0.25, torch.tensor(0.25), "loss", TOL)
    assert not right.ok and right.problem == ("expected a 0-d torch.Tensor, got the Python float 0.25 (the right "
                                              "value): return the tensor itself (.item() and float() turn it into "
                                              "a number)")
    wrong = compare_tensor(3, torch.tensor(0.25), "loss", TOL)
    assert not wrong.ok and wrong.problem.startswith("expected a 0-d torch.Tensor, got the Python int 3: return")
    assert compare_tensor(10**400, torch.tensor(0.25), "loss", TOL).problem.startswith(
        "expected a 0-d torch.Tensor, got an integer of about 401 digits: return")
    for other in (compare_tensor(0.25, torch.tensor([0.25]), "loss", TOL),        # not 0-d
                  compare_tensor(True, torch.tensor(True), "ok", TOL),
                  compare_tensor("0.25", torch.tensor(0.25), "loss", TOL)):
        assert other.problem.startswith("expected a torch.Tensor, got "), other.problem


def test_nan_where_reference_is_finite():
    e = torch.ones(4)
    a = e.clone()
    a[2] = float("nan")
    c = compare_tensor(a, e, "out", TOL)
    assert not c.ok and "1 NaN" in c.problem and c.worst_index == (2,)
    assert c.problem == "1 NaN and 0 Inf values where the reference is finite, the first at [2]"


def test_exact_outputs_say_where_the_first_difference_is():
    """A mask (bool) or token ids (int): the terminal and Markdown reports show the problem line
    alone, so it names the first element that differs, as the HTML report's mismatch list does."""
    e = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    c = compare_tensor(torch.tril(torch.ones(4, 4, dtype=torch.bool), diagonal=-1), e, "mask", TOL)
    assert c.problem == "4 of 16 values differ (25.0%); the first at [0, 0]: yours False, expected True"
    ids = compare_tensor(torch.tensor([3, 7, 9]), torch.tensor([3, 8, 9]), "ids", TOL)
    assert ids.problem == "1 of 3 values differ (33.3%); the first at [1]: yours 7, expected 8"


def test_an_integer_too_large_for_a_float_is_a_wrong_value_not_a_crash():
    (c,) = compare_outputs(10 ** 400, 10, ("t",), TOL)
    assert not c.ok and c.kind.value == "values" and c.problem == "expected 10, got an integer of about 401 digits"


def test_matching_infinities_and_nans_are_equal():
    e = torch.tensor([float("-inf"), 1.0, float("nan")])
    assert compare_tensor(e.clone(), e, "out", TOL).ok
    assert not compare_tensor(torch.tensor([float("inf"), 1.0, float("nan")]), e, "out", TOL).ok


def test_where_and_how_much():
    e = torch.zeros(3, 4)
    a = e.clone()
    a[1, 2] = 0.5
    c = compare_tensor(a, e, "out", TOL)
    assert c.worst_index == (1, 2) and abs(c.max_abs_error - 0.5) < 1e-9
    assert c.mismatches[0].index == (1, 2) and c.mismatch_fraction == 1 / 12


def test_bool_tensors_compare_exactly():
    e = torch.tril(torch.ones(3, 3, dtype=torch.bool))
    c = compare_tensor(~e, e, "mask", TOL)
    assert not c.ok and "values differ" in c.problem


def test_tuple_outputs_are_reported_by_name():
    e = (torch.ones(2), torch.zeros(2), torch.ones(3))
    comps = compare_outputs((torch.ones(2), torch.ones(2), torch.ones(3)), e, ("dX", "dW", "db"), TOL)
    assert [c.ok for c in comps] == [True, False, True] and comps[1].name == "dW"


def test_wrong_arity_and_none():
    (c,) = compare_outputs(torch.ones(2), (torch.ones(2), torch.ones(2)), ("out", "weights"), TOL)
    assert not c.ok and "tuple of 2" in c.problem
    c = compare_tensor(None, torch.ones(2), "out", TOL)
    assert "None (did you forget a return statement?)" in c.problem


def test_subclass_claimed_by_the_child_is_rejected():
    class Friendly(torch.Tensor):
        pass
    back = wire.loads(wire.dumps(torch.ones(2).as_subclass(Friendly)))
    c = compare_tensor(back, torch.ones(2), "out", TOL)
    assert not c.ok and "not a plain torch.Tensor" in c.problem


def test_the_figures_are_those_of_the_elementwise_criterion_with_or_without_non_finite_values():
    """Finite outputs take a shorter route than outputs with NaN or Inf: both give the figures
    computed element by element here, the worst element's index and the first mismatches included."""
    gen = torch.Generator().manual_seed(0)
    for trial in range(200):
        shape = tuple(int(n) for n in torch.randint(1, 5, (trial % 4,), generator=gen))
        e = torch.randn(shape, generator=gen, dtype=torch.float64)
        a = e + torch.randn(shape, generator=gen, dtype=torch.float64) * 10.0 ** -(trial % 7)
        with_nan = trial % 3 == 0 and e.numel() > 1
        if with_nan:
            a.view(-1)[-1] = e.view(-1)[-1] = float("nan")     # NaN where the reference has it: no mismatch
        c = compare_tensor(a, e, "out", TOL)
        flat_a, flat_e = a.reshape(-1).tolist(), e.reshape(-1).tolist()
        errs = [0.0 if x != x and y != y else abs(x - y) for x, y in zip(flat_a, flat_e)]
        bad = [i for i, (err, y) in enumerate(zip(errs, flat_e)) if err > 1e-5 + 1e-4 * (0.0 if y != y else abs(y))]
        worst = max(range(len(errs)), key=lambda i: (errs[i], -i))     # the largest error, the first of equals
        index = [int(i) for i in torch.unravel_index(torch.tensor(worst), shape)] if shape else []
        assert c.ok == (not bad) and c.max_abs_error == max(errs), (trial, c)
        assert list(c.worst_index) == index and c.mismatch_fraction == len(bad) / len(errs), (trial, c)
        assert [list(m.index) for m in c.mismatches] == [
            [int(i) for i in torch.unravel_index(torch.tensor(i), shape)] if shape else [] for i in bad[:5]]


def test_every_dtype_and_layout_with_infinities_gets_the_figures_of_the_elementwise_criterion():
    """The same criterion element by element in Python floats (float64), whatever the float dtype
    (float16 and bfloat16 included), the layout (transposed, 0-d) and the non-finite values on either
    side: Inf matches only the same Inf, NaN only NaN; a non-finite value on one side is a mismatch
    with an infinite error, and the relative error ignores a non-finite reference."""
    import math
    import random
    rng = random.Random(0)
    specials = [math.nan, math.inf, -math.inf, 0.0, 1e30]
    for trial in range(400):
        dtype = (torch.float32, torch.float64, torch.float16, torch.bfloat16)[trial % 4]
        shape = tuple(rng.randint(1, 4) for _ in range(rng.choice([0, 1, 2, 3])))
        e = torch.randn(shape, dtype=torch.float64)
        a = e + torch.randn(shape, dtype=torch.float64) * 10.0 ** -rng.randint(1, 6)
        for _ in range(rng.randint(0, 3)):
            i, v = rng.randrange(e.numel()), rng.choice(specials)
            for t in rng.choice([(a,), (e,), (a, e)]):
                t.view(-1)[i] = v
        a, e = a.to(dtype), e.to(dtype)
        if len(shape) >= 2 and trial % 3 == 0:      # strided, not contiguous
            a, e = a.transpose(0, 1).contiguous().transpose(0, 1), e.transpose(0, 1).contiguous().transpose(0, 1)
        atol, rtol = rng.choice([(1e-5, 1e-4), (0.0, 0.0), (1e-2, 0.0)])
        c = compare_tensor(a, e, "out", lambda dt, tol=(atol, rtol): tol)
        xs, ys = a.double().reshape(-1).tolist(), e.double().reshape(-1).tolist()
        errs, bad = [], []
        for i, (x, y) in enumerate(zip(xs, ys)):
            one_nan, one_inf = math.isnan(x) != math.isnan(y), math.isinf(x) != math.isinf(y)
            same = (math.isnan(x) and math.isnan(y)) or (math.isinf(x) and x == y)
            err = 0.0 if same else math.inf if one_nan or one_inf else abs(x - y)
            errs.append(err)
            if one_nan or (math.isinf(x) and not same) or err > atol + rtol * (abs(y) if math.isfinite(y) else 0.0):
                bad.append(i)
        ranked = [1e300 if i in bad and err == math.inf else err if i in bad or math.isfinite(err) else 0.0
                  for i, err in enumerate(errs)]
        worst = max(range(len(ranked)), key=lambda i: (ranked[i], -i))
        assert c.ok == (not bad) and c.mismatch_fraction == len(bad) / len(xs), (trial, c)
        assert c.max_abs_error == max(errs) and list(c.worst_index) == _index(worst, shape), (trial, c)
        assert [(list(m.index), repr(m.actual), repr(m.expected)) for m in c.mismatches] == [
            (_index(i, shape), repr(xs[i]), repr(ys[i])) for i in bad[:5]], (trial, c)     # repr: NaN is NaN


def _index(flat: int, shape: tuple[int, ...]) -> list[int]:
    return [int(i) for i in torch.unravel_index(torch.tensor(flat), shape)] if shape else []
