"""The notebook front-end: nbgrader notebooks out, grading inside a notebook's kernel.

Reading a handed-in .ipynb as a module is the submission loader's job (grader.submission.notebook).

- `write_source_notebooks(...)` (generate.py): nbgrader *source* notebooks, one per module, from
  solutions/, for `grader notebooks --out DIR` and then `nbgrader generate_assignment`;
- check.py (public as `grader.notebook`), inprocess.py and recover.py: what `grader.notebook.check` needs to grade a function living
  in a notebook's kernel with the engine's own grade_exercise.
"""
