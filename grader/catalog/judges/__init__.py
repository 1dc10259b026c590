"""Judges: the checks that replace the value-by-value comparison for behavioural and statistical
exercises, `judge(case, value, ref, tol) -> Verdict` (tol: the case's tolerance, overrides applied; a judge
with a `probe` parameter also gets the probe, grader.catalog.spec).
Each module is one exercise's judge: perceptron (perceptron_fit), glorot (glorot_uniform's
statistical tests), tokens (BPE token lists), capstone (the transformer that must learn)."""
