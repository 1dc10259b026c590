"""`from attention import ...` in a course notebook's kernel: the module is the student's attention.ipynb.

Course modules import each other (transformer.py: `from attention import causal_mask, ...`;
moe.py: `from transformer import feed_forward`). `grader check` grades such a module as the
student wrote it, beside the student's own attention.py (or attention.ipynb, which the
submission loader turns into attention.py), and each exercise then swaps the grader's trusted
versions in for the functions its spec `depends` on, so a bug in attention is charged once,
in attention. A notebook has no attention.py to import. Every generated notebook therefore
starts with a locked setup cell

    %load_ext grader.frontends.notebooks.course_imports

which appends to sys.meta_path a finder that resolves a top-level import of `<name>` to
`<name>.ipynb` in the student's folder, after every ordinary finder (a real `<name>.py` still
wins, as it does in the submission loader). The notebook becomes a module exactly as `grader
check` reads it: grader.submission.notebook.notebook_source (its code cells in order; nbgrader's
locked test cells, `grader.notebook` calls, IPython magics and shell escapes left out), run as
the module's body. A module whose body raises, exits or runs past max(call_timeout,
STARTUP_GRACE) seconds is, as in grader.pipeline.imports, replaced by the salvaged copy its
importers get (grader.submission.loader.salvage_for_importers: its imports and definitions), with
a note on stderr. The locked test cells then grade in the kernel with grader.notebook.check, whose
in-process sandbox swaps in the same trusted `depends` during each call: the scores agree with
`grader check` on the same handed-in folder.

Why the student's own notebook and not the grader's reference module: that is what `grader check`
does with the same files (it imports the student's attention.py, then substitutes per exercise),
so the two routes agree even where a student's function calls something the spec does not
substitute; it is what the course text asks of students ("reuse your own functions", so the
notebook works the same while they write it in Jupyter); and the reference implementations
still stand in wherever the catalog says a dependency must not cost points twice.

Which folder: the kernel's working folder when the setup cell runs (Jupyter and nbconvert start
the kernel in the notebook's folder), except under nbgrader's autograde. That runs each notebook
in `<course>/autograded/<student>/<assignment>/`, in an order of its own (moe before transformer),
and writes a notebook there only after running it; so when the kernel's folder is
`.../autograded/<student>/<assignment>` and `.../submitted/<student>/<assignment>` exists (nbgrader's
default folder names), the notebooks are read from the latter: what the student handed in, the
folder `grader check`/`grader batch` grade, whatever order autograde takes.

No import reaches a notebook that is not there: with one assignment per module (`grader notebooks`
without --assignment), transformer's folder holds no attention.ipynb, and the import fails here as
it does in `grader check`; put modules that import each other in one assignment.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import linecache
import os
import signal
import sys
import threading
from typing import Any

SUBMITTED, AUTOGRADED = "submitted", "autograded"      # nbgrader's default step folders
MAGIC = "%load_ext grader.frontends.notebooks.course_imports"


def notebook_folder(cwd: str) -> str:
    """Where `<name>.ipynb` is looked for, from the kernel's folder (see the module docstring)."""
    parts = os.path.normpath(os.path.abspath(cwd)).split(os.sep)
    if len(parts) > 3 and parts[-3] == AUTOGRADED:
        submitted = os.sep.join(parts[:-3] + [SUBMITTED] + parts[-2:])
        if os.path.isdir(submitted):
            return submitted
    return cwd


class NotebookFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds top-level module `<name>` as `<folder>/<name>.ipynb` and runs it as grader check reads it."""

    course_notebooks = True                         # how install() knows one, across %reload_ext

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name: str, path=None, target=None):
        if path is not None or not name.isidentifier():
            return None
        notebook = os.path.join(self.folder, f"{name}.ipynb")
        if not os.path.isfile(notebook):
            return None
        return importlib.util.spec_from_loader(name, self, origin=notebook)

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        from grader.errors import SubmissionError
        from grader.submission.notebook import notebook_source
        path = module.__spec__.origin
        module.__file__ = path
        try:
            source = notebook_source(path)
        except SubmissionError as e:
            raise ImportError(str(e), name=module.__name__, path=path) from None
        limit = _import_limit()
        try:
            _run(source, path, module, limit)
        except KeyboardInterrupt:
            raise
        except BaseException as e:                  # SystemExit and the time limit too, as in the sandbox
            self._salvaged(module, source, path, _why(e, limit))

    def _salvaged(self, module, source: str, path: str, why: str) -> None:
        from grader.submission.loader import salvage_for_importers
        name = module.__name__
        for key in [k for k in module.__dict__ if not k.startswith("__")]:
            del module.__dict__[key]
        _run(salvage_for_importers(source, name, why), path, module, None)
        print(f"{name}.ipynb could not be imported as written ({why}); its imports and function definitions "
              f"were kept, the rest skipped, as `grader check` does. Fix {name}.ipynb first.", file=sys.stderr)


class _ImportTimeout(BaseException):
    """Raised into a notebook's body when it runs past the import limit."""


def _run(source: str, path: str, module, limit: float | None) -> None:
    # The text under the notebook's name, for tracebacks and inspect (mtime None: linecache keeps it).
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    code = compile(source, path, "exec")
    with _time_limit(limit):
        exec(code, module.__dict__)


def _import_limit() -> float:
    """grader.pipeline.imports' limit on a module's import: max(call_timeout, STARTUP_GRACE)."""
    from grader.pipeline.run import STARTUP_GRACE
    try:
        from grader.api import load
        return max(load().call_timeout, STARTUP_GRACE)
    except Exception:                               # a broken autograde.toml: check() says so itself
        return STARTUP_GRACE


@contextlib.contextmanager
def _time_limit(seconds: float | None):
    """SIGALRM after `seconds`, in the main thread and when no other timer runs (check()'s own)."""
    if (seconds is None or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "setitimer") or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        yield
        return

    def expired(signum, frame):
        raise _ImportTimeout()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _why(e: BaseException, limit: float) -> str:
    if isinstance(e, _ImportTimeout):
        return f"importing it took longer than {limit:g} s: is there an endless loop at the top level?"
    if isinstance(e, SystemExit):
        return f"SystemExit: the module calls exit() at the top level ({e.code!r})"
    return f"{type(e).__name__}: {e}".split("\n")[0]


def install(folder: str | None = None) -> NotebookFinder:
    """Put the notebook finder (one, for `folder`: default the kernel's) at the end of sys.meta_path."""
    folder = notebook_folder(folder if folder is not None else os.getcwd())
    for finder in sys.meta_path:
        if getattr(finder, "course_notebooks", False):
            finder.folder = folder
            return finder
    finder = NotebookFinder(folder)
    sys.meta_path.append(finder)
    return finder


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "course_notebooks", False)]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext grader.frontends.notebooks.course_imports` (the setup cell of every generated notebook)."""
    install()


def unload_ipython_extension(ipython: Any) -> None:
    uninstall()
