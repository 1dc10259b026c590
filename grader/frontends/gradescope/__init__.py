"""Gradescope: the autograder bundle `grader gradescope --out autograder.zip` builds, and its runner.

    autograder.zip
      setup.sh          Gradescope runs it once when it builds the image: a Python >= 3.11 venv in
                        /autograder/venv with requirements.txt under constraints.txt (CPU torch)
      run_autograder    Gradescope runs it per submission: grades /autograder/submission with the
                        bundled grader and always leaves /autograder/results/results.json
      autograde.toml    the course configuration; bundle.json: exercises, grader version, checksum
      grader.env        only with hidden cases: SEED_VARIABLE=seed, read by the runner (never exported)
      lib/grader/       the grader package's source, put on PYTHONPATH (no build step, no wheel)
      requirements.txt, constraints.txt

`grader.frontends.gradescope.bundle` builds it, `grader.frontends.gradescope.run` is what run_autograder runs;
the shell scripts are in files/. docs/gradescope.md is the instructor's guide.
"""
