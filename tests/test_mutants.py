"""Every task's test cells fail plausible wrong answers and pass correct ones in other styles.

The answers live in tests/answers/<topic>.py. Each runs through the notebook's own test cells (hidden
tests included) with the answer and the tests in one process: a fresh process per notebook, forked per
answer (grading.authoring.harness.ForkedHarness), which takes a fraction of a second per answer. Grading runs the
test cells in the judge instead (grading/judge/), where one answer of notebook 06 costs seconds: so that
the judge's verdicts are those of this suite, every task's first wrong answer and first correct alternative also
run through the judge (grading.authoring.harness.JudgedHarness, as the grading command runs them) and must give the
same result, test cell by test cell (the reference solutions go through the judge in the grading tests, which grade
them with the grading command and require full marks: tests/test_pipeline.py); ``python -m
grading.judge.compare`` compares every answer both ways. No surprise at grading: each wrong answer also
fails a visible test, the one a student runs before submitting in their own kernel, unless its module's
``HIDDEN_ONLY`` says why no visible case can show that mistake. A wrong answer runs again without the hidden tests
only where its run with them does not already tell: one that failed before any hidden test ran fails the visible
tests alone the same way (`caught_by_visible_tests`; on 2026-12-03, 369 of the 665 wrong answers, each time as
their run without the hidden tests said).

The tests are per task (``pytest -m task2_4``, tests/layers.py); each answer is graded once per run
(`Suite`), and the README's mutation table is checked against those results, so that neither
``make notebooks`` nor anything else runs the suite a second time.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from grading.authoring import readme
from grading.authoring.harness import ForkedHarness, JudgedHarness, read_notebook
from grading.authoring.samples import load_mutants
from grading.authoring.task import show
from grading.config import ASSIGNMENTS, ROOT

MIN_WRONG = 3
MIN_ALTERNATIVES = 2


def _path(assignment: str):
    return ROOT / "source" / assignment / f"{assignment}.ipynb"


TASKS = [(assignment, grade_id) for assignment in ASSIGNMENTS for grade_id in read_notebook(_path(assignment))[0]]
task = pytest.mark.parametrize("assignment, grade_id", TASKS, ids=[f"{a}-{g}" for a, g in TASKS])
# The tasks whose mutants list the clauses of their contracts (CLAUSES; notebooks 07 and 08 so far).
CLAUSED = [(a, g) for a, g in TASKS if hasattr(load_mutants(a), "CLAUSES")]
notebook = pytest.mark.parametrize("assignment", ASSIGNMENTS)


class Suite:
    """The harnesses of one notebook at a time (tests/layers.py keeps a notebook's tests together), and every
    answer's results, each computed once."""

    def __init__(self) -> None:
        self.assignment: str | None = None
        self.harness: ForkedHarness | None = None
        self.judged: JudgedHarness | None = None
        self.results: dict[tuple[str, str, str, str], list] = {}

    def open(self, assignment: str) -> ForkedHarness:
        """The notebook's harness: the answer and the tests in one process (a fork of the notebook's own)."""
        if assignment != self.assignment:
            self.close()
            self.harness, self.assignment = ForkedHarness(_path(assignment)), assignment
        return self.harness

    def judge(self, assignment: str) -> JudgedHarness:
        """The notebook's harness through the judge, as grading runs the test cells."""
        self.open(assignment)
        if self.judged is None:
            self.judged = JudgedHarness(_path(assignment))
        return self.judged

    def answers(self, assignment: str, grade_id: str, kind: str) -> dict[str, list]:
        """Each answer of ``kind`` ("WRONG" or "ALTERNATIVES") to the task, with its results test cell by test
        cell (hidden tests included)."""
        variants = getattr(load_mutants(assignment), kind).get(grade_id, {})
        for name, answer in variants.items():
            key = (assignment, grade_id, kind, name)
            if key not in self.results:
                self.results[key] = self.open(assignment).results(grade_id, answer)
        return {name: self.results[(assignment, grade_id, kind, name)] for name in variants}

    def close(self) -> None:
        for harness in (self.harness, self.judged):
            if harness is not None:
                harness.close()
        self.harness = self.judged = self.assignment = None


@pytest.fixture(scope="session")
def suite():
    """Grade with one torch thread, as the grading kernels do: the notebooks' tensors are small, and on a busy
    machine the threads of every small operation wait for each other (07's decode tests run 20 times slower)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    suite = Suite()
    yield suite
    suite.close()
    torch.set_num_threads(threads)


@notebook
def test_mutants_name_only_the_notebooks_tasks(assignment):
    tasks = read_notebook(_path(assignment))[0]
    mutants = load_mutants(assignment)
    assert set(mutants.WRONG) <= set(tasks), "mutants name a grade_id the notebook does not have"
    clauses = getattr(mutants, "CLAUSES", None)
    if clauses is not None:
        assert set(clauses) == set(tasks), f"{assignment}: CLAUSES must list every task and only those"


@task
def test_every_task_has_enough_wrong_and_alternative_answers(assignment, grade_id):
    mutants = load_mutants(assignment)
    assert len(mutants.WRONG.get(grade_id, {})) >= MIN_WRONG, f"{assignment} {grade_id}: too few wrong answers"
    assert len(mutants.ALTERNATIVES.get(grade_id, {})) >= MIN_ALTERNATIVES, (
        f"{assignment} {grade_id}: too few alternatives")


@task
def test_reference_solution_passes(suite, assignment, grade_id):
    harness = suite.open(assignment)
    passed, message = harness.grade(grade_id, harness.tasks[grade_id].solution)
    assert passed, f"reference solution of {grade_id} fails its own tests: {message}"


@task
def test_wrong_answers_lose_points(suite, assignment, grade_id):
    survivors = [name for name, results in suite.answers(assignment, grade_id, "WRONG").items()
                 if all(result.passed for result in results)]
    assert not survivors, f"{assignment} {grade_id}: wrong answers that pass: {survivors}"


@pytest.mark.parametrize("assignment, grade_id", CLAUSED, ids=[f"{a}-{g}" for a, g in CLAUSED])
def test_every_clause_has_a_wrong_answer_that_its_test_cell_fails(suite, assignment, grade_id):
    """A module's CLAUSES lists each task's contract clause by clause: (clause, test cell, wrong answer that breaks
    only that clause), or None for a clause that only a second device shows (then the clause says "CUDA")."""
    clauses = load_mutants(assignment).CLAUSES
    wrong_results = suite.answers(assignment, grade_id, "WRONG")
    cells = [test.grade_id for test in read_notebook(_path(assignment))[0][grade_id].tests]
    problems = []
    for clause, cell, wrong in clauses.get(grade_id, []):
        where = f"{grade_id}: {clause!r}"
        if cell not in cells:
            problems.append(f"{where} names {cell}, not one of the task's test cells {cells}")
        elif wrong is None:
            if "CUDA" not in clause:
                problems.append(f"{where} has no wrong answer and is not a clause checked on CUDA")
        elif wrong not in wrong_results:
            problems.append(f"{where} names {wrong!r}, which is not a wrong answer of the task")
        elif next(result for result in wrong_results[wrong] if result.grade_id == cell).passed:
            problems.append(f"{where}: {wrong!r} passes {cell}")
    assert not problems, f"{assignment}: {problems}"


def caught_by_visible_tests(suite, assignment: str, grade_id: str, name: str, answer: str) -> bool:
    """Whether the wrong answer ``name`` fails a test cell of its task with the hidden tests left out, as in the
    release. Its run with them (the suite's) answers that at no cost when it failed before any hidden test ran
    (`Result.hidden_ran`): the same statements ran, so the visible tests alone fail it the same way. Otherwise the
    answer runs again without them."""
    results = suite.answers(assignment, grade_id, "WRONG")[name]
    first = next((result for result in results if not result.passed), None)
    if first is not None and not first.hidden_ran:
        return True
    return not suite.open(assignment).grade(grade_id, answer, visible_only=True)[0]


@task
def test_wrong_answers_fail_a_visible_test(suite, assignment, grade_id):
    mutants = load_mutants(assignment)
    hidden_only = getattr(mutants, "HIDDEN_ONLY", {}).get(grade_id, {})
    surprises = []
    for name, answer in mutants.WRONG.get(grade_id, {}).items():
        reason = hidden_only.get(name)
        caught = caught_by_visible_tests(suite, assignment, grade_id, name, answer)
        if caught and reason:
            surprises.append(f"{name}: HIDDEN_ONLY says {reason!r}, but a visible test catches it")
        elif not caught and not reason:
            surprises.append(f"{name}: only hidden tests catch it")
    assert not surprises, f"{assignment} {grade_id}: {surprises}"


@task
def test_alternative_answers_keep_points(suite, assignment, grade_id):
    failures = [f"{name}: {next((r.message for r in results if not r.passed), '')}"
                for name, results in suite.answers(assignment, grade_id, "ALTERNATIVES").items()
                if not all(result.passed for result in results)]
    assert not failures, f"{assignment} {grade_id}: correct answers that fail: {failures}"


@task
def test_release_stub_fails(suite, assignment, grade_id):
    release = nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    stubs = {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in release.cells
             if cell.metadata.get("nbgrader", {}).get("solution")}
    assert set(stubs) == set(read_notebook(_path(assignment))[0]), "the release's tasks are the source's"
    assert "raise NotImplementedError()" in stubs[grade_id]
    passed, _ = suite.open(assignment).grade(grade_id, stubs[grade_id])
    assert not passed, f"the release stub of {grade_id} passes its tests"


# What a stub that computes nothing does: each body below replaces every function and method the task defines.
EMPTY_BODIES = {"returns None": "return None", "returns 0": "return 0", "returns -1": "return -1",
                "returns []": "return []", "returns its first argument": "return args[0] if args else None",
                "returns its last argument": "return args[-1] if args else None",
                "returns zeros shaped as its first tensor": "return next((torch.zeros_like(value) for value in args "
                                                            "if isinstance(value, torch.Tensor)), None)",
                "raises ValueError": "raise ValueError('nothing computed')"}

# A stub may also empty what it was given first (the test's tensors zeroed, its lists, dicts and sets cleared, the
# tensors an object holds zeroed): a test whose oracle reads those objects after the call then expects nothing.
EMPTY_THE_INPUTS = """
def empty_the_inputs(args, kwargs):
    import torch

    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, dict, set)):
            value.clear()
        for tensor in [value] if isinstance(value, torch.Tensor) else getattr(value, "__dict__", {}).values():
            if isinstance(tensor, torch.Tensor) and tensor.numel() and not tensor.is_inference():
                tensor.detach().zero_()
"""


def computes_nothing(solution: str, body: str, empty_inputs: bool = False) -> str:
    """``solution`` with every function ``body`` and every class an object whose every method is ``body``, each
    emptying its inputs first where ``empty_inputs`` says so; imports and constants stay."""
    def block(indent: str) -> str:
        return (f"{indent}empty_the_inputs(args, kwargs)\n" if empty_inputs else "") + f"{indent}{body}"

    lines = ["import torch", EMPTY_THE_INPUTS]
    for node in ast.parse(solution).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.append(f"def {node.name}(*args, **kwargs):\n{block(' ' * 4)}")
        elif isinstance(node, ast.ClassDef):
            lines.append(f"class {node.name}:\n    def __init__(self, *args, **kwargs):\n"
                         f"        {'empty_the_inputs(args, kwargs)' if empty_inputs else 'pass'}\n\n"
                         f"    def __getattr__(self, name):\n        if name.startswith('__'):\n"
                         f"            raise AttributeError(name)\n\n        def method(*args, **kwargs):\n"
                         f"{block(' ' * 12)}\n        return method")
        else:
            lines.append(ast.unparse(node))
    return "\n\n".join(lines)


@task
def test_a_stub_that_computes_nothing_earns_no_part(suite, assignment, grade_id):
    """A task graded in parts gives no part's points to code that computes nothing, also when it empties what the
    test gave it first: a check that counts torch operations or expects an error passes such a stub unless its cell
    asks for a right answer too, and an oracle that reads the test's objects after the call expects nothing."""
    harness = suite.open(assignment)
    earned = []
    for empty_inputs in (False, True):
        for name, body in EMPTY_BODIES.items():
            results = harness.results(grade_id, computes_nothing(harness.tasks[grade_id].solution, body, empty_inputs))
            label = f"{name}{' (its inputs emptied first)' if empty_inputs else ''}"
            earned += [f"{label}: {result.grade_id}" for result in results if result.passed]
    assert not earned, f"{assignment} {grade_id}: test cells that a stub passes: {earned}"


@task
def test_the_judge_gives_a_wrong_and_a_correct_answer_the_same_results(suite, assignment, grade_id):
    """Through the judge, as grading runs them, a sample of the task's answers passes and fails the same test cells
    as in this process: the first wrong answer and the first alternative. The reference solution's full marks through
    the judge are the grading tests' (tests/test_pipeline.py grades it in every notebook with the grading command)."""
    mutants = load_mutants(assignment)
    sample = {}
    for kind, label in (("WRONG", "wrong answer"), ("ALTERNATIVES", "correct alternative")):
        for name, answer in list(getattr(mutants, kind).get(grade_id, {}).items())[:1]:
            sample[f"the {label} {name!r}"] = (answer, suite.answers(assignment, grade_id, kind)[name])
    judged = suite.judge(assignment) if sample else None
    differences = []
    for label, (answer, results) in sample.items():
        here = [(result.grade_id, result.passed) for result in results]
        there = judged.results(grade_id, answer)
        if here != [(result.grade_id, result.passed) for result in there]:
            differences.append(f"{label}: in process {here}; judged "
                               f"{[(r.grade_id, r.passed, r.message[:200]) for r in there]}")
    assert not differences, f"{assignment} {grade_id}: {differences}"


@notebook
def test_the_readme_mutation_table_shows_this_run(suite, assignment):
    """The README's row of the notebook is the one these results make (the table is never computed elsewhere
    in a CI run; `python -m grading.authoring.readme --write` rewrites it)."""
    tasks = read_notebook(_path(assignment))[0]
    wrong = [all(result.passed for result in results) for grade_id in tasks
             for results in suite.answers(assignment, grade_id, "WRONG").values()]
    right = [all(result.passed for result in results) for grade_id in tasks
             for results in suite.answers(assignment, grade_id, "ALTERNATIVES").values()]
    expected = readme.mutation_row(assignment, wrong, right)
    table = re.search(r"<!-- BEGIN GENERATED: mutation table -->\n(.*?)\n<!-- END GENERATED",
                      (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert table, "README.md has no generated mutation table"
    rows = [line for line in table.group(1).splitlines() if line.startswith(f"| {assignment} |")]
    assert rows == [expected], (f"README.md's mutation table is stale for {assignment}: its row must read "
                                f"{expected!r} (python -m grading.authoring.readme --write rewrites the table)")


def test_task_viewer_shows_a_task_whole():
    text = show("1.1", show_diff=True)
    for part in ("## Task 1.1: select_victim", "def select_victim(values):", "### BEGIN HIDDEN TESTS",
                 "## Wrong answers (each must lose points)", "- [ok] 0/2  max instead of min", "-    return min(",
                 "## Correct alternatives (each must keep every point)", "- [ok] 2/2  an explicit scan"):
        assert part in text, part
    with pytest.raises(LookupError, match="the tasks are 1.1, 1.2"):
        show("9.9")
