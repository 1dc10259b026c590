"""The course's chapters, one module (or small package) each, in the order of CURRICULUM.md.

A chapter module exposes `SPECS`, a tuple of ExerciseSpec in the chapter's order; each spec's
reference, cases and known mistakes sit side by side. grader.catalog lists the chapters.
"""
