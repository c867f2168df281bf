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

from course.kernels import GUARD_BLOCKS, check_paged_batch, count_launches, paged_batch, paged_pool, watch_memory
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


def test_watch_memory_says_which_elements_a_kernel_read_and_wrote(monkeypatch):
    """watch_memory records the interpreter's loads, stores and atomics, maps them to the elements of the call's
    tensors (views, other strides, results), counts what lies in none of them, and puts the interpreter back."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl
    from triton.runtime import interpreter

    def copy_some(src_ptr, dst_ptr, scratch_ptr, stride, COUNT: tl.constexpr):
        offsets = tl.arange(0, COUNT)
        values = tl.load(src_ptr + offsets * stride, mask=offsets < 3, other=0.0)  # Elements 0, 1, 2 of the view.
        tl.store(dst_ptr + offsets, values)
        tl.atomic_add(scratch_ptr + 1, 1.0)  # Reads and writes one element of a tensor of its own.

    kernel = triton.jit(copy_some)
    base = torch.arange(12.0)
    src = base[1::2]  # Elements 1, 3, 5, ... of base: a view with a stride of 2.

    def run(view):
        out, scratch = torch.zeros(4), torch.zeros(2)
        kernel[(1,)](view, out, scratch, view.stride(0), COUNT=4)
        return out

    inner = interpreter._interpreter
    out, use = watch_memory(run, src)
    assert out.tolist() == [1.0, 3.0, 5.0, 0.0] and use["watched"]
    assert use["read"][0].tolist() == [True, True, True, False, False, False]
    assert use["written"][0].tolist() == [False] * 6
    assert use["result written"][0].tolist() == [True] * 4
    assert use["read elsewhere"] == use["written elsewhere"] == 4  # The scratch element's four bytes.
    assert interpreter._interpreter is inner, "the interpreter's memory functions are put back"
    assert watch_memory(lambda text: text * 2, "ab") == ("abab", {
        "watched": True, "read": [None], "written": [None], "result written": [None], "read elsewhere": 0,
        "written elsewhere": 0})
    with pytest.raises(ZeroDivisionError):
        watch_memory(lambda: 1 / 0)
    assert interpreter._interpreter is inner
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # Compiled kernels: nothing can be watched.
    assert watch_memory(lambda: 5) == (5, {"watched": False, "read": [], "written": [], "result written": [],
                                           "read elsewhere": 0, "written elsewhere": 0})


# Run in a process of its own: triton.language's device functions (tl.sum...) are interpreted only when
# TRITON_INTERPRET was set before triton was first imported.
DEVICE_FUNCTIONS = textwrap.dedent('''
    import torch, triton
    import triton.language as tl
    from triton.runtime import interpreter
    from course import kernels

    set_up = []
    own_patch_lang = interpreter._patch_lang
    interpreter._patch_lang = lambda fn: set_up.append(fn.__name__) or own_patch_lang(fn)

    @triton.jit
    def row_sums(x_ptr, out_ptr, rows, COLUMNS: tl.constexpr):
        columns = tl.arange(0, COLUMNS)
        for row in range(0, tl.cdiv(rows * COLUMNS, COLUMNS)):
            tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * COLUMNS + columns)))

    @triton.jit
    def fail_after_a_sum(out_ptr):
        tl.store(out_ptr + tl.arange(0, 3), tl.sum(tl.full([2], 1, tl.int32)))  # 3 lanes: not a power of 2

    x = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    language = {name: getattr(tl, name) for name in ("arange", "load", "sum", "range", "cdiv")}

    def launch_twice():
        set_up.clear()
        outputs = [torch.zeros(6) for _ in range(2)]
        for out in outputs:
            row_sums[(1,)](x, out, 6, COLUMNS=4)
        assert torch.equal(outputs[0], outputs[1])
        return outputs[0], sorted(set_up)

    expected, by_triton = launch_twice()
    assert torch.equal(expected, x.sum(1)), expected
    assert by_triton.count("sum") == 12 and by_triton.count("row_sums") == 2, by_triton  # 6 rows, 2 launches
    assert kernels.speed_up_interpreter() and kernels.speed_up_interpreter(), "in effect with the pinned Triton"
    found, quicker = launch_twice()
    assert torch.equal(found, expected), found
    assert quicker == ["cdiv", "cdiv", "row_sums", "row_sums", "sum", "sum"], quicker
    assert {name: getattr(tl, name) for name in language} == language, "each launch undoes its set-up"
    set_up.clear()
    assert tl.cdiv(10, 4) == 3 and tl.cdiv(11, 4) == 3 and set_up == ["cdiv", "cdiv"], set_up  # Outside a launch.
    try:
        fail_after_a_sum[(1,)](torch.zeros(4, dtype=torch.int32))
    except Exception as error:  # A launch that fails ends too: the next one sets up again.
        assert "power of 2" in repr(error), repr(error)
    else:
        raise AssertionError("a range of 3 lanes did not fail")
    again, quicker = launch_twice()
    assert torch.equal(again, expected) and quicker.count("sum") == 2, quicker
    print("ok")
''')


def run_interpreted(script: str) -> None:
    """Run ``script`` in a new Python with TRITON_INTERPRET=1 set before triton is imported; it must print "ok"."""
    environment = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=environment, cwd=ROOT, timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def test_the_interpreter_sets_up_each_device_function_once_per_launch_with_the_same_results():
    """speed_up_interpreter: a kernel that calls tl.sum and tl.cdiv in a loop sets triton.language up once
    per launch for each, not at every call; its results, and triton.language after the launch, are those of
    Triton's own interpreter; outside a launch, and after a launch that failed, nothing changes."""
    run_interpreted(DEVICE_FUNCTIONS)

OVERFLOW_CHECKS = textwrap.dedent('''
    import torch, triton
    import triton.language as tl
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter
    from course import kernels

    # Each overflow check ends in an `and` of two comparisons, which the kernel below never asks for itself.
    checks = []
    own_and = TritonSemantic.and_
    TritonSemantic.and_ = lambda *a: checks.append(1) or own_and(*a)

    @triton.jit
    def mixed(x_ptr, y_ptr, out_ptr, f_ptr, N: tl.constexpr):
        i = tl.arange(0, N)
        x, y = tl.load(x_ptr + i), tl.load(y_ptr + i)
        tl.store(out_ptr + i, x * y + x - y * 3)  # int32: wraps around past 2**31, as on a GPU.
        tl.store(f_ptr + i, x.to(tl.float32) * 0.5 - 1)

    x = torch.tensor([1, -7, 46341, 2**31 - 1, -(2**31), 12, 0, 99], dtype=torch.int32)
    y = torch.tensor([3, 5, 46341, 2, 1, -4, 2**30, 7], dtype=torch.int32)

    def launch():
        checks.clear()
        out, f = torch.zeros(8, dtype=torch.int32), torch.zeros(8)
        mixed[(1,)](x, y, out, f, N=8)
        return out, f, len(checks)

    out, f, before = launch()
    wrapped = ((x.long() * y.long() + x.long() - y.long() * 3 + 2**31) % 2**32 - 2**31).int()
    assert torch.equal(out, wrapped) and before >= 4, (out, wrapped, before)
    assert kernels.speed_up_interpreter()
    assert not interpreter.interpreter_builder.options.sanitize_overflow
    again, f_again, after = launch()
    assert torch.equal(again, out) and torch.equal(f_again, f) and after == 0, (again, after)
    print("ok")
''')


def test_the_interpreter_skips_the_overflow_checks_it_would_discard_with_the_same_results():
    """speed_up_interpreter: the interpreter worked out an overflow check for each integer +, - and * and then
    discarded it (its device_assert runs only in debug mode); skipped, the results are the same, wrapping included."""
    run_interpreted(OVERFLOW_CHECKS)


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
