"""course.kernels (notebook 09's inputs, checks and launch counter), and notebook 09's reference kernels
compiled for a GPU without one: Triton's wheel ships the compiler and ptxas, so CI (no GPU) proves that
the kernels the interpreter grades are also valid compiled Triton."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import nbformat
import pytest
import torch

from course.kernels import GUARD_BLOCKS, check_paged_batch, count_launches, paged_batch, paged_pool
from grading.authoring.given import catalogue
from grading.config import ASSIGNMENTS, ROOT

pytest.importorskip("triton")


def test_paged_pool_puts_nan_guard_blocks_around_contiguous_or_interleaved_pools():
    k_cache, v_cache, storage = paged_pool(5, 4, 2, 8, seed=3)
    assert k_cache.shape == v_cache.shape == (5, 4, 2, 8) and k_cache.is_contiguous()
    assert storage.shape == (2, 5 + 2 * GUARD_BLOCKS, 4, 2, 8)
    assert not k_cache.isnan().any() and not v_cache.isnan().any()
    assert storage[:, :GUARD_BLOCKS].isnan().all() and storage[:, -GUARD_BLOCKS:].isnan().all()
    k_cache, v_cache, storage = paged_pool(3, 2, 2, 4, dtype=torch.float16, interleaved=True)
    assert k_cache.dtype == torch.float16 and not k_cache.is_contiguous()
    assert k_cache.stride(1) == 2 * 2 * 4 and k_cache.data_ptr() + 2 * 4 * 2 == v_cache.data_ptr()
    assert storage[:GUARD_BLOCKS].isnan().all() and not storage[GUARD_BLOCKS:-GUARD_BLOCKS].isnan().any()
    again, _, _ = paged_pool(3, 2, 2, 4, dtype=torch.float16, interleaved=True)
    assert torch.equal(again, k_cache), "the same seed gives the same pool"


def test_paged_batch_has_free_shared_and_padding_blocks():
    batch = paged_batch([9, 4, 0, 5], 4, 1, 4, free_blocks=3, seed=2)
    table = batch.block_tables
    assert table.dtype == torch.int32 and batch.lengths.dtype == torch.int32
    assert table.shape == (4, 3) and batch.lengths.tolist() == [9, 4, 0, 5]
    used = [table[s, :count].tolist() for s, count in enumerate([3, 1, 0, 2])]
    assert table[0, 0] == table[1, 0] == table[3, 0], "the full first blocks are shared"
    assert all(value == -1 for s, count in enumerate([3, 1, 0, 2]) for value in table[s, count:].tolist())
    distinct = {block for row in used for block in row}
    assert len(distinct) == 3 + 1 and batch.k_cache.shape[0] == len(distinct) + 3, "three free blocks"
    assert paged_batch([3], 4, 1, 4, extra_table_columns=2).block_tables.tolist() == [[0, -1, -1]]


@pytest.mark.parametrize("change, error, words", [
    (dict(cache=torch.zeros(4, 4, 1, 4, dtype=torch.float64)), TypeError, "float16 or float32"),
    (dict(block_tables=torch.zeros(2, 2, dtype=torch.int64)), TypeError, "int32"),
    (dict(cache=torch.zeros(4, 3, 1, 4)), ValueError, "powers of two"),
    (dict(lengths=torch.tensor([3, 9], dtype=torch.int32)), ValueError, "lengths[1] = 9"),
    (dict(block_tables=torch.tensor([[0, -1], [4, 2]], dtype=torch.int32)), ValueError, "block_tables[1, 0] = 4"),
    (dict(lengths=torch.tensor([3], dtype=torch.int32)), ValueError, "lengths [num_seqs]"),
])
def test_check_paged_batch_names_what_a_kernel_would_read_out_of_bounds(change, error, words):
    inputs = dict(cache=torch.zeros(4, 4, 1, 4), block_tables=torch.tensor([[0, -1], [1, 2]], dtype=torch.int32),
                  lengths=torch.tensor([3, 5], dtype=torch.int32))
    check_paged_batch("kernel", **inputs)  # valid: the -1 is past sequence 0's one block
    inputs.update(change)
    with pytest.raises(error, match=f"^kernel: .*{words.replace('[', '.').replace(']', '.')}"):
        check_paged_batch("kernel", **inputs)
    with pytest.raises(ValueError, match="in \\[1, 8\\]"):
        check_paged_batch("kernel", torch.zeros(4, 4, 1, 4), torch.tensor([[0, 1]], dtype=torch.int32),
                          torch.tensor([0], dtype=torch.int32), min_length=1)


def test_count_launches_counts_interpreted_launches(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when a kernel is defined
    import triton
    import triton.language as tl
    from triton.runtime import interpreter, jit

    def fill(out_ptr, value, COUNT: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, COUNT), tl.full([COUNT], value, tl.float32))

    kernel = triton.jit(fill)
    assert isinstance(kernel, interpreter.InterpretedFunction)
    out = torch.zeros(4)

    def twice():
        kernel[(1,)](out, 1.0, COUNT=4)
        kernel[(1,)](out, 2.0, COUNT=4)
        return "done"

    before = (jit.JITFunction.run, interpreter.GridExecutor.__call__)
    assert count_launches(twice) == ("done", 2) and out.tolist() == [2.0] * 4
    assert count_launches(lambda: None) == (None, 0)
    with pytest.raises(ZeroDivisionError):
        count_launches(lambda: 1 / 0)
    assert (jit.JITFunction.run, interpreter.GridExecutor.__call__) == before, "the launch methods are put back"


def test_only_triton_notebooks_turn_on_the_interpreter_before_importing_triton():
    entries = catalogue()
    for assignment in ASSIGNMENTS:
        notebook = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
        setup = next(cell.source for cell in notebook.cells if cell.metadata.get("given") == "setup")
        if entries[assignment].get("triton"):
            assert setup.index('os.environ["TRITON_INTERPRET"] = "1"') < setup.index("import triton"), assignment
            assert "Colab" in setup and "Linux" in setup, f"{assignment}: say where Triton installs"
        else:
            assert "triton" not in setup.lower(), f"{assignment} needs no triton"


COMPILE = textwrap.dedent('''
    import json, linecache, sys, warnings
    import nbformat, triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from grading.authoring.reference import solution_code

    warnings.simplefilter("ignore")
    POINTERS = {"block_tables_ptr": "*i32", "lengths_ptr": "*i32", "pairs_ptr": "*i64", "scores_ptr": "*fp32"}
    notebook = nbformat.read(sys.argv[1], as_version=4)
    compiled = []
    for grade_id, code in solution_code(notebook).items():
        filename = f"<{grade_id}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        names = {}
        exec(compile(code, filename, "exec"), names)
        for kernel in [value for value in names.values() if isinstance(value, triton.runtime.JITFunction)]:
            for dtype in ("fp16", "fp32"):
                signature = {p.name: "constexpr" if p.is_constexpr else POINTERS.get(p.name, f"*{dtype}")
                             if p.name.endswith("_ptr") else "fp32" if p.name == "scale" else "i32"
                             for p in kernel.params}
                source = ASTSource(kernel, signature, constexprs={"BLOCK_SIZE": 16, "HEAD_DIM": 128})
                binary = triton.compile(source, target=GPUTarget("cuda", 90, 32))
                compiled.append([kernel.__name__, dtype, len(binary.asm["cubin"])])
    print(json.dumps(compiled))
''')


def test_reference_kernels_compile_for_a_gpu():
    """About 10 s: each of notebook 09's four kernels compiled to a cubin for sm_90, in float16 and float32."""
    environment = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    environment["PYTHONPATH"] = str(ROOT)
    notebook = ROOT / "source" / "09_triton_kernels" / "09_triton_kernels.ipynb"
    result = subprocess.run([sys.executable, "-c", COMPILE, str(notebook)], capture_output=True, text=True,
                            env=environment, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    compiled = json.loads(result.stdout.strip().splitlines()[-1])
    names = {name for name, _, _ in compiled}
    assert names == {"_paged_gather_kernel", "_copy_blocks_kernel", "_paged_decode_kernel", "_h2o_scores_kernel"}
    assert len(compiled) == 8 and all(size > 1000 for _, _, size in compiled)
