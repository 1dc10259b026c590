"""Every fixture's score and diagnosis, as JSON: the check that a refactor changes no grade.

    .venv/bin/python scripts/fixture_scores.py > before.json
    ... change the engine ...
    .venv/bin/python scripts/fixture_scores.py > after.json && diff before.json after.json

Grades solutions/, every folder under tests/fixtures/submissions/ (its own modules; a scenario
built by tests/scenarios.py as the tests grade it), and every known-mistake variant of
tests/fixtures/mistakes/ swapped into the solutions (packed in rounds with at most one variant per
exercise, as tests/conftest.py does). Per exercise it records the status, the points, the diagnosis
and the headline message; timings are left out.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import scenarios  # noqa: E402
from conftest import _rounds, mistake_source, replace_function  # noqa: E402

from grader import api  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
SOLUTIONS = ROOT / "solutions"


def record(result, only=None) -> dict:
    return {e.id: [e.status.value, e.points, e.diagnosis, e.message.split("\n")[0]]
            for e in result.exercises if only is None or e.id in only}


def variants() -> list[tuple[str, str]]:
    import ast
    entries = []
    for path in sorted((FIXTURES / "mistakes").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and "__" in node.name:
                function, variant = node.name.split("__", 1)
                entries.append((f"{path.stem}.{function}", variant))
    return entries


def main() -> None:
    config = api.load(str(ROOT / "autograde.toml"), env={})
    out: dict[str, dict] = {}
    with api.sandbox(config) as sandbox:
        def run(path, names):
            return api.grade(path, names, config, sandbox=sandbox)
        out["solutions"] = record(run(SOLUTIONS, []))
        for name in scenarios.names():
            folder = scenarios.submission(name)
            modules = sorted({p.stem for p in folder.glob("*.py")} | {p.stem for p in folder.glob("*.ipynb")})
            if modules:
                out[f"submissions/{name}"] = record(run(folder, modules))
        tmp = Path(tempfile.mkdtemp(prefix="fixture-scores-"))
        try:
            for k, chosen in enumerate(_rounds(variants())):
                dest = tmp / f"round{k}"
                dest.mkdir()
                for f in SOLUTIONS.glob("*.py"):
                    shutil.copy(f, dest / f.name)
                for exercise, variant in chosen.items():
                    module, function = exercise.split(".")
                    path = dest / f"{module}.py"
                    path.write_text(replace_function(path.read_text(), function,
                                                     mistake_source(module, f"{function}__{variant}")))
                for eid, row in record(run(dest, list(chosen))).items():
                    out[f"mistakes/{eid}__{chosen[eid]}"] = {eid: row}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
