#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image (the bundle is
# unpacked in /autograder/source). It installs a Python >= 3.11 virtual environment in
# /autograder/venv with the grader's dependencies; the grader itself runs from source/lib.
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${AUTOGRADER_ROOT:-/autograder}"

PY=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    PY="$candidate"; break
  fi
done
if [ -z "$PY" ]; then                      # Ubuntu 22.04 images ship 3.10: the grader needs 3.11 (tomllib)
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv
  PY=python3.11
fi
if ! "$PY" -m venv "$ROOT/venv"; then      # Debian splits venv out of python3
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$(basename "$PY")-venv" || \
    DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv
  "$PY" -m venv "$ROOT/venv"
fi
"$ROOT/venv/bin/python" -m pip install --upgrade --quiet pip
# The CPU wheel of torch: the default (CUDA) one is gigabytes and Gradescope has no GPU.
"$ROOT/venv/bin/python" -m pip install --extra-index-url https://download.pytorch.org/whl/cpu \
    -c "$SOURCE/constraints.txt" -r "$SOURCE/requirements.txt"
PYTHONPATH="$SOURCE/lib" "$ROOT/venv/bin/python" -c \
    "import torch, grader; print('grader', grader.__version__, 'with torch', torch.__version__)"
