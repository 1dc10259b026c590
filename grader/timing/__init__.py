"""Performance checks: timing a student's function against PyTorch without being fooled.

The folder reads in the order the data flows:
  config      the [performance] section of autograde.toml (named in grader.config.EXTRA_SECTIONS);
  specs       what to time, per exercise id: input sizes per device, the allowed ratio, points;
  references  the PyTorch side of each timing (F.conv2d, torch.lstm, ...), keyed by exercise id;
  timers      how one call is timed: a registry of "cpu" (monotonic clock) and "cuda" (events);
  measure     the timed loop itself, run inside the sandboxed child (driver) or in-process;
  driver      the child's entry point: setup, load inputs, warm up, time a block, hand outputs back;
  harness     the parent's handle on that child (and on a clean child timing the reference alone);
  rounds      adaptive rounds of fresh inputs until the ratio is tight or the budget is spent,
              every output checked here in the parent;
  records     the data the rounds produce (Block, Measurement);
  stats       medians, their relative standard errors, the ratio and its spread;
  guards      anti-cheat rules over a Measurement, one per function, each with its rationale;
  policy      a Measurement and a spec's limit -> PerfResult (pass, fail, suspicious, skipped);
  stage       the engine's hook: which exercises to time, on which device, after correctness.
"""
