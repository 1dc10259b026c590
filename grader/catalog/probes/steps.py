"""Which time step? The localiser of the *_forward exercises (rnn, lstm, gru): the first time
step whose state differs from the reference's."""
from __future__ import annotations

from typing import Any, Callable

import torch

from grader.catalog.spec import Case
from grader.pipeline.compare import close


def first_bad_step(H: Any, ref_H: torch.Tensor, atol: float, rtol: float) -> int | None:
    """The first time step t where H[:, t] differs from the reference (None: none, or shapes differ)."""
    if not isinstance(H, torch.Tensor) or H.shape != ref_H.shape:
        return None
    for t in range(ref_H.shape[1]):
        if not close(H[:, t], ref_H[:, t], atol, rtol):
            return t
    return None


def step_localiser(reference: Callable[..., Any], tol: Callable[[torch.dtype, Case], tuple[float, float]],
                   initial: str, carried: str) -> Callable[[Case, Any, Any], str]:
    """Localiser for *_forward: names the first time step whose state differs."""
    def localise(case: Case, output: Any, probe: Any) -> str:
        ref = reference(*case.args, **case.kwargs)
        H = output[0] if isinstance(output, (tuple, list)) and output else None
        atol, rtol = tol(ref[0].dtype, case)
        t = first_bad_step(H, ref[0], atol, rtol)
        if t is None:
            return ""
        T = ref[0].shape[1]
        if t == 0:
            return (f"Where: H[:, 0] is already wrong, the state after the first step, which depends only on "
                    f"{initial} and X[:, 0]: check which initial state you start from and what you store in H.")
        return (f"Where: H[:, t] is right for t < {t} and wrong from t = {t} on (of T = {T}): the first step is "
                f"right, so look at what is carried from one step to the next ({carried}).")
    return localise
