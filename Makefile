# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test check bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamp files so repeated runs do not reinstall; they are rebuilt when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/threadline run

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

check: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy bot core adapters config tests

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/startup.py

clean:
	rm -rf $(VENV) build *.egg-info
