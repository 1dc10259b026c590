"""The notebook front-end: Jupyter notebooks in, nbgrader notebooks out.

- `notebook_source(path)` (source.py): a handed-in .ipynb as the Python source of one module,
  for the loader (`grader check`/`grader batch` on notebooks);
- `write_source_notebooks(...)` (generate.py): nbgrader *source* notebooks, one per module, from
  solutions/, for `grader notebooks --out DIR` and then `nbgrader generate_assignment`;
- inprocess.py and recover.py: what `grader.notebook.check` needs to grade a function living
  in a notebook's kernel with the engine's own grade_exercise.
"""
from grader.notebooks.source import notebook_source

__all__ = ["notebook_source"]
