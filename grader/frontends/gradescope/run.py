"""What run_autograder runs on Gradescope: grade /autograder/submission, write results.json.

    python -m grader.frontends.gradescope.run          (root: $AUTOGRADER_ROOT, default /autograder)

The submission is whatever the student uploaded: modules at the top, a folder of them (a GitHub
submission of the whole course repository: exercises/attention.py), a .zip or notebooks.
Whatever happens, results/results.json is written: a broken submission gets its feedback and
zero points from the engine; a failure of the grader itself gets a placeholder that says so.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import grader

SKIP_DIRS = ("__MACOSX", "__pycache__", ".git")


def find_submission(folder: str, modules: set[str], preferred: str) -> str:
    """The shallowest folder under `folder` holding one of the expected modules (or the folder)."""
    wanted = {f"{m}.py" for m in modules} | {f"{m}.ipynb" for m in modules}
    levels: list[list[str]] = [[folder]]
    for _ in range(4):
        hits = [d for d in levels[-1] if wanted & set(os.listdir(d))]
        if hits:
            named = [d for d in hits if os.path.basename(d) == preferred]
            return (named or sorted(hits))[0]
        levels.append(sorted(os.path.join(d, n) for d in levels[-1] for n in os.listdir(d)
                             if n not in SKIP_DIRS and not n.startswith(".") and os.path.isdir(os.path.join(d, n))
                             and not os.path.islink(os.path.join(d, n))))
    zips = [n for n in os.listdir(folder) if n.endswith(".zip")]
    return os.path.join(folder, zips[0]) if len(zips) == 1 else folder


def read_env(source: str) -> dict[str, str]:
    """NAME=VALUE lines of the bundle's grader.env (absent: no hidden cases)."""
    path = os.path.join(source, "grader.env")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line and not line.startswith("#"))


def placeholder(message: str) -> dict:
    return {"score": 0, "output": message, "output_format": "text", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def grade_submission(root: str) -> str:
    # Imported here, inside main's try: a grader that cannot even import still writes results.json.
    from grader import api
    from grader.catalog import select
    from grader.reports import render

    source = os.path.join(root, "source")
    with open(os.path.join(source, "bundle.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    # grader.env holds the secret seed: read into the configuration here, never put in an environment.
    config = api.load(os.path.join(source, "autograde.toml"), env={**os.environ, **read_env(source)})
    # Were it set in Gradescope's environment, drop it too: the sandbox's child gets an allow-listed
    # environment (grader.sandbox.provision.child_environment), and nothing else here needs it.
    os.environ.pop(config.seed_env, None)
    names = manifest["names"]
    specs = select(names)
    submission = find_submission(os.path.join(root, "submission"), {s.module for s in specs},
                                 os.path.basename(os.path.normpath(config.submission)))
    hidden = "on" if config.secret_seed is not None else "off"
    print(f"grading {submission}: {len(specs)} exercises, hidden cases {hidden}")
    result = api.grade(submission, names, config)
    print(render(result, "terminal", color=False))
    return render(result, "json", visibility=config.visibility)


def main() -> int:
    root = os.environ.get("AUTOGRADER_ROOT", "/autograder")
    out = os.path.join(root, "results", "results.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    print(f"grader {grader.__version__} from {os.path.dirname(grader.__file__)}")
    try:
        text = grade_submission(root)
    except Exception:
        traceback.print_exc()
        text = json.dumps(placeholder("The autograder itself failed, so this submission was not graded. This is "
                                      "not a problem with your code: please tell your instructor."), indent=2)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
