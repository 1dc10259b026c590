"""The notebook front-end: nbgrader notebooks out, grading inside a notebook's kernel.

Reading a handed-in .ipynb as a module is the submission loader's job (grader.submission.notebook).

- `write_source_notebooks(...)` (generate.py): nbgrader *source* notebooks, one per module, from
  solutions/, for `grader notebooks --out DIR` and then `nbgrader generate_assignment`;
- check.py (public as `grader.notebook`): `check(exercise_id, fn)` in a notebook's kernel, over
  grader.api.check_function, which grades the function object with inprocess.py (a stand-in for
  the sandbox that calls it in this process) and recover.py (its source, for the static scan);
- course_imports.py: the IPython extension each generated notebook loads in its locked setup cell,
  so `from attention import ...` imports the student's attention.ipynb as `grader check` imports
  attention.py (under nbgrader's autograde: from the student's submitted/ folder).
"""
