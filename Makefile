# The two commands of the README:
#   make        set up .venv from the pinned versions, then run the main job
#   make test   set up .venv, then run the test suite (every layer, on every core)
# The test layers (tests/layers.py), each also `pytest -m <layer>`; `pytest -m task2_4` runs one task's tests:
#   make test-fast        unit and property tests (under 2 minutes on 2 idle cores)
#   make test-mutants     the mutation suite
#   make test-notebooks   every notebook run once in JupyterLab (Chromium), its kernel in a Colab-like environment
#   make test-grading     batches graded end to end (grading command, sandbox, Slurm)
#   make test-browser     Chromium and Playwright
# And for authors:
#   make notebooks   regenerate source/ <-> authoring/, release/, solutions/ and the README's tables
#   make lint        ruff over the package, the grading tools, tests, benchmarks and the notebooks' cells
#   make lock        compile requirements/lock.txt from requirements/dev.in (pip-tools)
PYTHON ?= python3.11
VENV := .venv
BIN := $(abspath $(VENV))/bin
# nbgrader runs alembic as a program, so the environment's bin/ must come first on PATH.
export PATH := $(BIN):$(PATH)

.PHONY: all main test test-fast test-mutants test-notebooks test-grading test-browser venv clean bench notebooks lint lock

all: main

venv: $(VENV)/.installed

# jsonschema (under nbformat, nbgrader and Jupyter's servers) imports rfc3987-syntax when it is installed, which
# compiles 38 lark grammars on import: 1.7 s of CPU in every such process (nbformat's import 1.9 s -> 0.2 s without
# it). Nothing here checks the "iri" formats it adds; jupyter-events' extra pulls it in, and pip check accepts it gone.
# uv installs the lock: about 45 s with bytecode compiled, where pip took about 110 s of the CI's setup. It reads
# pip's find-links only from UV_FIND_LINKS: the folders of PIP_FIND_LINKS (where a machine keeps torch's CPU build)
# are passed on. It compiles bytecode only when asked, as pip always does: where PYTHONDONTWRITEBYTECODE is set (as in
# CI), every process would otherwise compile torch's and Jupyter's sources again at each import.
$(VENV)/.installed: requirements/lock.txt requirements/dev.in pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c requirements/lock.txt uv
	UV_FIND_LINKS="$${UV_FIND_LINKS:-$$(printf %s "$$PIP_FIND_LINKS" | tr -s ' ' ',')}" \
		$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python \
		-c requirements/lock.txt -r requirements/dev.in -e .
	$(BIN)/uv pip uninstall --quiet --python $(BIN)/python rfc3987-syntax lark
	touch $@

main: venv
	$(BIN)/python -m grading.main

# pytest-xdist runs the tests on every core; tests/layers.py keeps the tests that share a graded course, an
# environment or a judge on one worker (--dist loadgroup) and orders the groups, longest first (--no-loadscope-reorder
# keeps that order).
PYTEST := $(BIN)/python -m pytest -q -n auto --dist loadgroup --no-loadscope-reorder

test: venv
	$(PYTEST)

test-fast test-mutants test-notebooks test-grading test-browser: test-%: venv
	$(PYTEST) -m $*

notebooks: venv
	$(BIN)/python -m grading.authoring.notebooks

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
	rm -rf $(VENV) gradebook.db grades.csv statuses.csv grading-shards grading-results.json submitted autograded/*/ feedback build

# Benchmarks (not tests): each prints ratios measured in one run.
bench: venv
	$(BIN)/python bench/bench_victim.py
	$(BIN)/python bench/bench_replay.py
	$(BIN)/python bench/bench_scheduler.py
	$(BIN)/python bench/bench_kernels.py
	$(BIN)/python bench/bench_autograde.py --students 4
