# Two commands: `make demo` and `make test`. Each creates .venv when missing and installs the project.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROTOCOL ?= ../shared/protocol
STAMP := $(VENV)/.installed

.PHONY: demo test quick lint typecheck venv bytecode clean bench golden

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,engines,plots]'
	touch $(STAMP)

venv: $(STAMP)

# The package's bytecode, as a regular (non-editable) install would write it: start-up stays fast
# where PYTHONDONTWRITEBYTECODE is set. Only changed modules are compiled again.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q mwp_local

ifndef DEMO_DIR
DEMO_DIR := $(shell mktemp -d -u /tmp/mwp-flagship-XXXXXX)
endif

demo: bytecode
	$(BIN)/mwp-local conformance --root $(PROTOCOL)
	$(BIN)/mwp-local run sample_missions/flagship.toml --dir $(DEMO_DIR) --mode step
	$(BIN)/mwp-local verify-log $(DEMO_DIR)
	@echo "Next: $(BIN)/jupyter lab notebooks/01_quickstart.ipynb --ServerApp.root_dir=.  (tutorials/README.md leads through notebooks 01-08)"

lint: $(STAMP)
	$(BIN)/ruff check mwp_local tests tools
	$(BIN)/ruff format --check mwp_local tests tools

typecheck: $(STAMP)
	$(BIN)/mypy mwp_local

test: bytecode lint typecheck
	$(BIN)/python -m pytest

# The inner loop: everything but the slow tier, real threads and the browser (a few minutes).
quick: bytecode
	$(BIN)/python -m pytest -m "not slow and not threads and not browser and not spark"

# Speed against same-run ceilings (13-17 min on 2 cores): prints a table, writes benchmarks/results.json.
bench: bytecode
	$(BIN)/python benchmarks/run.py

# Same seed, same bytes: every sample run against tools/golden.json (the suite runs it too).
golden: bytecode
	$(BIN)/python tools/golden.py

clean:
	rm -rf $(VENV) build *.egg-info
