"""The grader's own tensor work, run outside the child's operator watch.

The watch (grader.sandbox.tripwires.AtenWatch) is a dispatch mode: every ATen operator that runs
while it is on crosses into Python (~10 us each), to see whether the student's code reached a
forbidden kernel by some route. The grader's trusted code (a substitute standing in for a function
the graded one calls; the capstone's weights, batches, loss, backward pass and optimizer step) is
the grader's, not the student's: watching it costs most of the watch's time (in the capstone, the
grader's layers are ~95% of a forward pass's operators, and its training loop two thirds of what is
left), and a hit there would be a false one wherever a rule names an operator it uses (the loss is
log_softmax and nll_loss).

Everything else stays in force there: the attribute tripwires, and the kernel's count of forbidden
kernels (grader.sandbox.native_watch, authoritative, where the machine offers it) over the whole
call. What student code runs inside trusted code (a hook, a tensor subclass, a patched torch
function) is not seen by this in-process net, which student code could pop from the stack anyway.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from torch._C import _len_torch_dispatch_stack
from torch.utils._python_dispatch import _pop_mode, _push_mode


@contextlib.contextmanager
def unwatched() -> Iterator[None]:
    """Every dispatch mode on this thread's stack set aside, then put back as it was."""
    modes = [_pop_mode() for _ in range(_len_torch_dispatch_stack())]
    try:
        yield
    finally:
        for mode in reversed(modes):
            _push_mode(mode)
