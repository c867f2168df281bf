"""Generated programs of shared tensors, views and containers give through the judge what they give in one process.

tests/judge_fuzz.py generates each program from a seed, runs it in one process for the truth, then through the judge
against a kernel's agent in a thread (tests/judge_kernel.py). This file runs a fixed batch of seeds, in chunks of
`CHUNK` (about 1 s each on 2 cores), and a smaller batch of programs twice as long, whose later steps reach what
the earlier ones built (views handed out again, objects that cross twice). A failure prints the program, the first
observation that differs and the line that made it, and the command that runs that seed again.
``python tests/judge_fuzz.py --start S --count N [--steps K]`` runs more seeds.
"""

from __future__ import annotations

import pytest
from judge_fuzz import generate, report, through_judge

SEEDS = 1500  # Seeds 0 to SEEDS - 1 of programs of 20 steps: about 20 s on this 2-core machine.
LONG_SEEDS, LONG_STEPS = 300, 40  # And of 40 steps: about 10 s.
CHUNK = 100
BATCHES = [*((20, first) for first in range(0, SEEDS, CHUNK)),
           *((LONG_STEPS, first) for first in range(0, LONG_SEEDS, CHUNK))]

# torch warns when an ``out=`` argument of other elements is resized, which the programs do on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")


@pytest.mark.parametrize("steps, first", BATCHES, ids=[f"steps{steps}-seeds{first}-{first + CHUNK - 1}"
                                                       for steps, first in BATCHES])
def test_generated_programs_observe_through_the_judge_what_they_observe_in_one_process(steps, first):
    failures = []
    for seed in range(first, first + CHUNK):
        program = generate(seed, steps)
        failure = through_judge(program)
        if failure is not None:
            failures.append((program, failure))
    if failures:
        program, failure = failures[0]
        others = " ".join(f"{each.seed} ({fail.kind})" for each, fail in failures[1:])
        pytest.fail(report(program, failure) + (f"Other failing seeds: {others}\n" if others else ""), pytrace=False)
