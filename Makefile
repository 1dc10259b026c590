# Two commands do all set-up on a fresh machine:
#   make grade   creates .venv if missing, installs the project, grades solutions/ and writes an HTML report
#   make test    creates .venv if missing, installs the project, runs the linter (ruff) and the whole test suite
# Every install goes through constraints.txt (torch is pinned: never let a requirement pull another torch).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
REPORT ?= reports/report.html
PIP    := $(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: grade test lint install stubs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test]'
	@$(BIN)/python -c "import torch, sys; v = torch.__version__.split('+')[0]; sys.exit(0 if v == '2.13.0' else 'torch ' + v + ' installed, 2.13.0 required')"
	@touch $@

# Bytecode of the grader's own modules, as pip writes for a package it installs: an editable install
# gets none, and where PYTHONDONTWRITEBYTECODE is set nothing writes it later, so every grading
# process, its sandbox's zygote and each child (the trusted modules) compiled them from source again.
# Python reads a .pyc only while it records its source's time and size: an edited module is compiled
# as before until the next make.
install: $(STAMP)
	@$(BIN)/python -m compileall -q grader

lint: install
	$(BIN)/ruff check grader tests benchmarks scripts

grade: install
	@mkdir -p $(dir $(REPORT))
	$(BIN)/grader check --submission solutions --format html --output $(REPORT)

test: install
	$(BIN)/ruff check grader tests benchmarks scripts
	$(BIN)/python -m pytest

stubs: install
	$(BIN)/grader stubs

clean:
	rm -rf $(VENV) reports .pytest_cache
	find grader -name __pycache__ -prune -exec rm -rf {} +
