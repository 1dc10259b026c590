"""What every stage of one submission's grading shares: the submission, the resolved config, the
sandbox, the deadline, and how each of the student's modules was loaded.

One Context per submission, made by grader.pipeline.engine.grade (or the notebook front-end);
exercises are graded on several threads at once, so the record of module loads is guarded.
Stages use only the public methods below.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection

from grader.config import Config
from grader.sandbox.provision import Staged, copy_submission
from grader.sandbox.runner import Sandbox
from grader.submission.loader import Submission


@dataclass(frozen=True)
class ModuleLoad:
    """How one of the student's modules is loaded for grading: the files every child gets (the
    module salvaged when it does not import as written, and the student's modules it imports as
    an importer gets them), notes for the feedback, and why it did not import ("" when it did).

    `for_importers` holds the sources a module importing this one gets where they differ from
    the submission's: this module's salvaged copy with stand-ins for what was lost
    (grader.submission.loader.salvage_for_importers), and those of the modules it imports.
    `broken_imports` is (module, why, through) for each module it imports that does not import
    as written; `through` is the module it imports that imports it ("" when imported directly)."""

    files: dict[str, str]
    notes: tuple[str, ...] = ()
    import_error: str = ""
    for_importers: dict[str, str] = field(default_factory=dict)
    broken_imports: tuple[tuple[str, str, str], ...] = ()


@dataclass
class Context:
    """The shared state of one submission's grading.

    `sandbox` is the parent side of the sandbox (or a stand-in with the same `open()` and
    `limits`, as the notebook front-end's in-process one); `deadline` is on time.monotonic().
    """

    submission: Submission
    config: Config
    sandbox: Sandbox
    deadline: float
    _loads: dict[str, ModuleLoad] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _module_locks: dict[str, threading.Lock] = field(default_factory=dict, init=False, repr=False)
    staged: Staged = field(default_factory=Staged, init=False, repr=False)   # removed once it is graded

    def remaining(self) -> float:
        """Seconds left of the submission's time limit (negative once it is used up)."""
        return self.deadline - time.monotonic()

    def module_load(self, module: str, decide: Callable[[str], ModuleLoad]) -> ModuleLoad:
        """How `module` is loaded, decided once per submission by `decide(module)`: exercises of
        the same module on other threads wait for the first decision and share it."""
        with self._lock:
            lock = self._module_locks.setdefault(module, threading.Lock())
        with lock:
            with self._lock:
                load = self._loads.get(module)
            if load is None:
                load = decide(module)
                with self._lock:
                    self._loads[module] = load
            return load

    def child_options(self, files: dict[str, str], compiled: Collection[str], workdir: str) -> dict[str, Any]:
        """How a child of this submission gets `files` and the bytecode of `compiled`, and what else it is
        opened with. Where the sandbox gives each child a private uid (run as root: grader.sandbox.runner),
        which can neither write them nor read another submission's, the files are staged once for all of
        the submission's children, and each child copies those it gets (grader.sandbox.provision.Staged);
        elsewhere they are written into its `workdir`, its own. A real sandbox's children also share the
        submission's memory budget (grader.sandbox.budgets), and the kernel counts their forbidden
        kernels during each call (grader.sandbox.native_watch); a stand-in (the notebook front-end's,
        in process) gets nothing more."""
        real = isinstance(self.sandbox, Sandbox)
        staged = self.staged.for_child(files, compiled) if real and os.geteuid() == 0 else None
        if staged is None:
            copy_submission(files, workdir, compiled)
        return {"submission": f"{id(self):x}", "count_kernels": True, "staged": staged} if real else {}

    def files_for(self, module: str) -> dict[str, str]:
        """The files a child gets to run `module`: those it was graded with (salvaged if it had
        to be), or the submission's own when it was not loaded."""
        with self._lock:
            load = self._loads.get(module)
        return dict(load.files if load is not None else self.submission.files)

    def import_errors(self) -> tuple[tuple[str, str], ...]:
        """(module, why) for every module that did not import as written, in the order decided."""
        with self._lock:
            return tuple((m, load.import_error) for m, load in self._loads.items() if load.import_error)
