"""Stand-ins for the modules a student's code imports that are neither in the submission nor installed
where the grader runs: a notebook's `import seaborn as sns`, `from tqdm import tqdm`, `from torchvision
import datasets`. Without them one such line cost every exercise of its module, though the graded
functions never used it.

The child (grader.sandbox.child) imports the student's module with `imported`: where the import
fails because a module cannot be found anywhere, a stand-in takes its place in sys.modules and the
import is tried again, a few times at most. A stand-in is a package with nothing in it: what code
takes from it (`sns.heatmap`, `tqdm` itself) fails when it is used, saying what is missing, so a
function that needs the module fails as it would have, and the others are graded as written. An
import the student guards (`try: import tqdm / except ImportError: ...`) fails inside their own
code as before: only a failure that ends the import is stood in for. The child says which modules
it stood in for (its ready reply's "absent"); the parent notes it in the feedback (grader.pipeline.run).

Nothing here trusts the student: their code can put anything in sys.modules anyway, and a stand-in
only ever fails.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from typing import Any

MOST = 8                # stand-ins a child makes at most
NAME = re.compile(r"[A-Za-z_]\w{0,63}(?:\.[A-Za-z_]\w{0,63}){0,7}\Z")    # a dotted module name


def imported(module: str) -> tuple[types.ModuleType, list[str]]:
    """`module` imported, with a stand-in for each module it needs that cannot be found anywhere;
    and the names of those stood in for."""
    absent: list[str] = []
    while True:
        try:
            return importlib.import_module(module), absent
        except ModuleNotFoundError as exc:
            name = exc.name
            if len(absent) >= MOST or not _absent(name, module):
                raise
        _stand_in(name)
        absent.append(name)


def _absent(name: Any, module: str) -> bool:
    """Whether `name` is a module that is nowhere to be found (the import system's word is checked:
    student code can raise ModuleNotFoundError naming anything)."""
    if not isinstance(name, str) or not NAME.match(name) or name == module or name in sys.modules:
        return False
    try:
        return importlib.util.find_spec(name) is None
    except Exception:       # its parent does not import: not this name's absence
        return False


def _stand_in(name: str) -> None:
    stand_in = AbsentModule(name)
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        try:
            setattr(sys.modules[parent], child, stand_in)
        except (AttributeError, TypeError):
            pass


class AbsentModule(types.ModuleType):
    """A module that is not there: a package whose submodules are looked for (and stood in for in
    turn), and whose every attribute is an Absent."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"Stand-in: {name} is neither in the submission nor installed where the "
                               "grader runs.")
        self.__path__: list[str] = []

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Absent(f"{self.__name__}.{attr}")


class Absent:
    """What code takes from a stand-in module: it fails, saying what is missing, when it is used."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Absent(f"{self._name}.{attr}")

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        root = self._name.split(".")[0]
        raise ModuleNotFoundError(f"{self._name} cannot be used here: {root} is neither a module at the "
                                  "top of your submission nor installed where the grader runs", name=root)

    __call__ = __iter__ = __getitem__ = __enter__ = __len__ = _fail

    def __repr__(self) -> str:
        return f"<stand-in for {self._name}: not installed where the grader runs>"
