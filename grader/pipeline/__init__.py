"""The pipeline from a loaded submission to a SubmissionResult; engine.py composes the steps
(its docstring lists them in order), the other modules are the steps."""
