# The two commands of the README:
#   make        set up .venv from the pinned versions, then run the main job
#   make test   set up .venv, then run the test suite
# And for authors:
#   make notebooks   regenerate source/ <-> authoring/, release/, solutions/ and the README's tables
#   make lint        ruff over the package, the grading tools, tests, benchmarks and the notebooks' cells
#   make lock        compile requirements/lock.txt from requirements/dev.in (pip-tools)
PYTHON ?= python3.11
VENV := .venv
BIN := $(abspath $(VENV))/bin
# nbgrader runs alembic as a program, so the environment's bin/ must come first on PATH.
export PATH := $(BIN):$(PATH)

.PHONY: all main test venv clean bench notebooks lint lock

all: main

venv: $(VENV)/.installed

$(VENV)/.installed: requirements/lock.txt requirements/dev.in pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements/lock.txt -r requirements/dev.in -e .
	touch $@

main: venv
	$(BIN)/python -m grading.main

test: venv
	$(BIN)/python -m pytest -q

notebooks: venv
	$(BIN)/python -m grading.notebooks

lint: venv
	$(BIN)/ruff check .

# pip-tools keeps every pin that lock.txt already has unless asked to upgrade (pip-compile --upgrade).
# It resolves torch to the CPU build on this machine's disk (2.13.0+cpu); the lock pins the public
# version, which that build satisfies.
lock: venv
	$(BIN)/pip-compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
		--output-file requirements/lock.txt requirements/dev.in
	sed -i 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' requirements/lock.txt

clean:
	rm -rf $(VENV) gradebook.db submitted autograded/*/ feedback build

# Benchmarks (not tests): each prints ratios measured in one run.
bench: venv
	$(BIN)/python bench/bench_victim.py
	$(BIN)/python bench/bench_replay.py
	$(BIN)/python bench/bench_scheduler.py
	$(BIN)/python bench/bench_autograde.py --runs 5
