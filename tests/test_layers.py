"""The test layers' grouping holds: pytest-xdist sends every test of one group to one worker.

tests/layers.py gives the tests that share a graded batch an ``xdist_group`` marker, and `make test` runs with
``--dist loadgroup``. A pytest that pytest-xdist cannot rename tests in (pytest 9.2 with xdist 3.8) or a
conftest hook that runs after xdist's loses the grouping without an error, and each worker then grades the
shared batches again. This runs a small suite, grouped as tests/conftest.py groups, on two workers.
"""

from __future__ import annotations

import os
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


def test_the_tests_of_a_module_that_share_a_module_fixture_are_one_group(tmp_path):
    # A hub or a JupyterLab (module fixtures) made on each worker cost minutes in CI: such a module is one group.
    plugin = tmp_path / "print_groups.py"
    plugin.write_text(textwrap.dedent(f'''
        def pytest_collection_finish(session):
            with open({str(tmp_path / "groups.txt")!r}, "w") as out:
                for item in session.items:
                    marker = item.get_closest_marker("xdist_group")
                    out.write(item.path.name + " " + (marker.args[0] if marker else "-") + "\\n")
    '''))
    files = ["tests/test_hub.py", "tests/test_browser_sanitize.py", "tests/test_browser.py", "tests/test_options.py"]
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "print_groups", "-p",
                          "no:xdist", "-p", "no:cacheprovider", *files], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    groups: dict[str, set[str]] = {}
    for line in (tmp_path / "groups.txt").read_text().splitlines():
        name, group = line.split()
        groups.setdefault(name, set()).add(group)
    assert groups["test_browser_sanitize.py"] == {"module-test_browser_sanitize.py"}, groups
    assert groups["test_browser.py"] == {"module-test_browser.py"}, groups
    assert groups["test_options.py"] == {"-"}, "tests without a module fixture are spread over the workers"
    assert groups.get("test_hub.py", {"module-test_hub.py"}) == {"module-test_hub.py"}, groups
