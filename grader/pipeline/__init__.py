"""The pipeline from a loaded submission to a SubmissionResult; engine.py composes the steps
(its docstring lists them in order), the other modules are the steps:

    context   what the steps of one submission share (typed; the module loads, the deadline)
    static    forbidden APIs the student's source provably uses
    forbidden the FORBIDDEN message (static or run-time hits): the line quoted, what to do instead
    imports   does each module import as written (salvaged if not)
    cases     the cases, their references, and each case's tolerance
    run       the child sessions: one call per case, two strikes, hidden cases apart
    judge     one reply judged: compare or the spec's judge, known mistakes, localiser, heatmaps
    compare   value-by-value comparison with the reference, each Comparison with its kind
    redact    what a hidden case may say: fixed words chosen by kind
    precision after all cases: float64 misses of float32's size, named as such
    feedback  the words for the student
    scoring   points and the exercise's headline
"""
