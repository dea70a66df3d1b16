# Entry points: `make demo` (the main job), `make test` (what CI runs: lint, then every test
# against the real stack) and `make check` (the edit-test loop: lint and the unit tests, which
# start no service and load no model: under a minute).
# Each creates .venv and installs everything in one pip resolution on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo up test check lint browser bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch 2.13.0 is pinned in the same resolution so the CPU build is used (no CUDA download).
	$(BIN)/pip install --quiet "torch==2.13.0" -e ".[server,langchain,llamaindex,dev]"
	touch $@

demo: $(BIN)/.installed
	$(BIN)/memstream demo

up: $(BIN)/.installed
	$(BIN)/memstream up

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The timeline page is tested in a real headless browser: Debian's chromium (root installs it;
# anyone else is told the one command to run).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "make: the browser tests need Debian's chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }

test: lint browser
	$(BIN)/pytest

check: lint
	$(BIN)/pytest -q -p no:cacheprovider tests/unit

clean:
	rm -rf $(VENV) .memstream .mypy_cache .ruff_cache .pytest_cache
