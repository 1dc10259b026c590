"""Front-ends: thin layers over grader.api that turn a way of asking for a grade into a call.

- commands/       one module per `grader` subcommand (grader.cli discovers them);
- batch/          a class at once: workers, the SQLite gradebook, feedback files, class report;
- ci/             grading a pull request: step summary, annotations, pinned workflows;
- gradescope/     the autograder bundle and its run inside Gradescope's container;
- notebooks/      nbgrader source notebooks, and `grader.notebook.check` inside a kernel;
- pytest_plugin   `pytest exercises/` grades the submission folder autograde.toml names.
"""
