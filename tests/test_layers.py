"""The test layers' grouping holds: pytest-xdist sends every test of one group to one worker.

tests/layers.py gives the tests that share a graded batch an ``xdist_group`` marker, and `make test` runs with
``--dist loadgroup``. A pytest that pytest-xdist cannot rename tests in (pytest 9.2 with xdist 3.8) or a
conftest hook that runs after xdist's loses the grouping without an error, and each worker then grades the
shared batches again. This runs a small suite, grouped as tests/conftest.py groups, on two workers.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_group_s_tests_run_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(config, items):
            for item in items:
                item.add_marker(pytest.mark.xdist_group("shared"))
    '''))
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(textwrap.dedent(f'''
            import os
            import pytest

            @pytest.mark.parametrize("index", range(6))
            def test_{name}(index):
                with open("workers.txt", "a") as log:
                    log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
        '''))
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = (tmp_path / "workers.txt").read_text().split()
    assert len(workers) == 12 and len(set(workers)) == 1, f"one group ran on {sorted(set(workers))}"
