"""Grading in CI: pinning the trusted configuration, GitHub annotations, the workflow template.

The front-ends are `grader ci` (grade a pull request) and `grader init-ci` (write the
workflow); docs/ci.md explains the threat model these pieces defend against.
"""
