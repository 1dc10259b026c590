"""Instructor batch grading: a whole class, in parallel, resumable, with a class report.

    discover -> gradebook (skip what is current) -> workers (warm, one Sandbox each)
             -> outputs (per-student feedback, grades.csv) -> class_report

grader.frontends.batch.run composes the steps (its docstring lists them); `grader batch` is its front-end.
"""
