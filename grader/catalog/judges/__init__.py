"""Judges: the checks that replace the value-by-value comparison for behavioural and statistical
exercises, `judge(case, value, ref, tol, probe=None) -> Verdict` (tol: the case's tolerance, overrides
applied; probe: what the child recorded of the call, grader.catalog.spec).
Each module is one exercise's judge: perceptron (perceptron_fit), glorot (glorot_uniform's
statistical tests), tokens (BPE token lists), capstone (the transformer that must learn)."""
