# The two commands of the README:
#   make        set up .venv from the pinned versions, then run the main job
#   make test   set up .venv, then run the test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(abspath $(VENV))/bin
# nbgrader runs alembic as a program, so the environment's bin/ must come first on PATH.
export PATH := $(BIN):$(PATH)

.PHONY: all main test venv clean bench

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

clean:
	rm -rf $(VENV) gradebook.db grades.csv statuses.csv grading-shards grading-results.json submitted autograded/*/ feedback build

# Benchmarks (not tests): each prints ratios measured in one run.
bench: venv
	$(BIN)/python bench/bench_victim.py
	$(BIN)/python bench/bench_replay.py
	$(BIN)/python bench/bench_scheduler.py
	$(BIN)/python bench/bench_autograde.py --students 4
