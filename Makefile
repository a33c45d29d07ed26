# Two commands: `make demo` and `make test`. Each creates .venv when missing and installs the project.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROTOCOL ?= ../shared/protocol
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck venv clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/mwp-local conformance --root $(PROTOCOL)
	$(BIN)/python sample_missions/walkthrough.py

lint: $(STAMP)
	$(BIN)/ruff check mwp_local tests
	$(BIN)/ruff format --check mwp_local tests

typecheck: $(STAMP)
	$(BIN)/mypy mwp_local

test: $(STAMP) lint typecheck
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build *.egg-info
