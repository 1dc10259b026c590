"""Public path for notebooks: `from grader.notebook import check` (see grader.frontends.notebooks.check)."""
from grader.frontends.notebooks.check import TRUST_NOTE, ExerciseFailed, NotebookResult, check

__all__ = ["check", "NotebookResult", "ExerciseFailed", "TRUST_NOTE"]
