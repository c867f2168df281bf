"""Inputs, checks and a launch counter for the Triton kernels of notebook 09.

- `paged_pool` and `paged_batch` build a paged KV cache for tests and experiments: the pool lies
  inside a larger tensor whose first and last blocks are NaN (guard blocks), so that a kernel that
  reads outside the pool returns NaN instead of crashing, and a write outside it shows in the guard;
  block tables have free blocks, a shared block and -1 past each sequence's blocks.
- `check_paged_batch` raises a clear error for inputs that a kernel would read out of bounds.
- `count_launches` counts the Triton kernel launches of a call, compiled or interpreted.
- `watch_memory` says which elements of a call's tensors its Triton kernels read and wrote, under the
  interpreter (``TRITON_INTERPRET=1``).
- `speed_up_interpreter` makes Triton's interpreter skip work it repeats (notebook 09's setup calls it).

Nothing here imports triton until `count_launches` or `speed_up_interpreter` runs, so the rest of the
course never needs it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["GUARD_BLOCKS", "LaunchCounter", "PagedBatch", "check_paged_batch", "count_launches", "paged_batch",
           "paged_pool", "speed_up_interpreter", "watch_memory"]

GUARD_BLOCKS = 2  # NaN blocks before and after the pool.


def _is_power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


def paged_pool(num_blocks: int, block_size: int, num_heads: int, head_dim: int, *, dtype: torch.dtype = torch.float32,
               device: torch.device | str | None = None, seed: int = 0,
               interleaved: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A key pool and a value pool of random (stale) data, with NaN guard blocks around them.

    The data is drawn on ``device`` (None: the CPU) with a generator seeded with ``seed``.

    Returns:
        ``(k_cache, v_cache, storage)``: each pool is ``[num_blocks, block_size, num_heads, head_dim]``, a view
        of ``storage`` without its first and last `GUARD_BLOCKS` blocks, which are NaN. Without ``interleaved``
        ``storage`` is ``[2, num_blocks + 2 * GUARD_BLOCKS, block_size, num_heads, head_dim]`` and each pool is
        contiguous; with it ``storage`` is ``[num_blocks + 2 * GUARD_BLOCKS, block_size, 2, num_heads, head_dim]``:
        a token's key and value sit side by side, so the pools are not contiguous (their slot stride is
        ``2 * num_heads * head_dim``).

    Used in notebook 09's tests and experiments.
    """
    total = num_blocks + 2 * GUARD_BLOCKS
    shape = (total, block_size, 2, num_heads, head_dim) if interleaved else (2, total, block_size, num_heads, head_dim)
    device = torch.device("cpu") if device is None else torch.device(device)
    generator = torch.Generator(device=device).manual_seed(seed)
    storage = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    inside = slice(GUARD_BLOCKS, GUARD_BLOCKS + num_blocks)
    guard = torch.ones(total, dtype=torch.bool, device=device)
    guard[inside] = False
    if interleaved:
        storage[guard] = float("nan")
    else:
        storage[:, guard] = float("nan")
    if interleaved:
        return storage[inside, :, 0], storage[inside, :, 1], storage
    return storage[0, inside], storage[1, inside], storage


@dataclasses.dataclass
class PagedBatch:
    """A batch of sequences in a paged KV cache (see `paged_batch`)."""

    k_cache: torch.Tensor
    v_cache: torch.Tensor
    block_tables: torch.Tensor
    lengths: torch.Tensor
    storage: torch.Tensor


def paged_batch(lengths: Sequence[int], block_size: int, num_heads: int, head_dim: int, *,
                dtype: torch.dtype = torch.float32, device: torch.device | str | None = None, seed: int = 0,
                free_blocks: int = 2, share_first_block: bool = True, interleaved: bool = False,
                extra_table_columns: int = 0) -> PagedBatch:
    """Sequences of the given lengths in a pool with scattered, free and shared blocks.

    Sequence ``s`` uses ``ceil(lengths[s] / block_size)`` blocks, at random places of the pool;
    ``free_blocks`` more blocks belong to no sequence. With ``share_first_block``, every sequence
    whose first block is full shares the first such block (a common prefix, as after a fork). The
    block table is int32 ``[num_seqs, max_blocks + extra_table_columns]`` with -1 past each
    sequence's blocks; ``lengths`` is int32. Every slot holds random data, those past a sequence's
    length included (stale tokens), and the pools lie inside guard blocks of NaN (`paged_pool`).

    Used in notebook 09's tests and experiments.
    """
    counts = [-(-length // block_size) for length in lengths]
    full = [s for s, length in enumerate(lengths) if length >= block_size]
    shared = share_first_block and len(full) >= 2
    distinct = sum(counts) - (len(full) - 1 if shared else 0)
    num_blocks = max(1, distinct + free_blocks)
    generator = torch.Generator().manual_seed(seed + 1)
    places = torch.randperm(num_blocks, generator=generator).tolist()
    max_blocks = max(counts, default=0) + extra_table_columns
    table = torch.full((len(lengths), max_blocks), -1, dtype=torch.int32)
    for s, count in enumerate(counts):
        for b in range(count):
            table[s, b] = table[full[0], 0] if shared and b == 0 and s in full[1:] else places.pop()
    k_cache, v_cache, storage = paged_pool(num_blocks, block_size, num_heads, head_dim, dtype=dtype, device=device,
                                           seed=seed, interleaved=interleaved)
    return PagedBatch(k_cache, v_cache, table.to(device), torch.tensor(list(lengths), dtype=torch.int32, device=device),
                      storage)


def check_paged_batch(caller: str, cache: Any, block_tables: Any, lengths: Any, min_length: int = 0) -> None:
    """Raise a clear error unless a kernel can read ``cache`` through ``block_tables`` and ``lengths``.

    The rules: ``cache`` a float16 or float32 tensor ``[num_blocks, block_size, num_heads, head_dim]``
    whose block size and head dimension are powers of two; ``block_tables`` an int32 tensor
    ``[num_seqs, max_blocks]``; ``lengths`` an int32 tensor ``[num_seqs]`` with every length in
    ``[min_length, max_blocks * block_size]``; the three on one device; and every block id that a
    length uses (the first ``ceil(lengths[s] / block_size)`` of row ``s``) a block of the pool.
    Entries past them are not read and may hold anything.

    Raises:
        TypeError: a wrong type or dtype.
        ValueError: a wrong shape, length, block id or device, naming it.

    Used in notebook 09 (the given lines of each kernel's launcher).
    """
    if not all(type(tensor) is torch.Tensor for tensor in (cache, block_tables, lengths)):
        raise TypeError(f"{caller}: the cache, block_tables and lengths must be torch.Tensor")
    if cache.dtype not in (torch.float16, torch.float32):
        raise TypeError(f"{caller}: the cache must be float16 or float32, got {cache.dtype}")
    if block_tables.dtype != torch.int32 or lengths.dtype != torch.int32:
        raise TypeError(f"{caller}: block_tables and lengths must be int32, got {block_tables.dtype} and "
                        f"{lengths.dtype}")
    if cache.dim() != 4 or block_tables.dim() != 2 or tuple(lengths.shape) != tuple(block_tables.shape[:1]):
        raise ValueError(f"{caller}: need a cache [num_blocks, block_size, num_heads, head_dim], block_tables "
                         f"[num_seqs, max_blocks] and lengths [num_seqs]; got {list(cache.shape)}, "
                         f"{list(block_tables.shape)} and {list(lengths.shape)}")
    num_blocks, block_size, _, head_dim = cache.shape
    if not (_is_power_of_two(block_size) and _is_power_of_two(head_dim)):
        raise ValueError(f"{caller}: block_size and head_dim must be powers of two, got {block_size} and {head_dim}")
    if len({cache.device, block_tables.device, lengths.device}) > 1:
        raise ValueError(f"{caller}: the cache, block_tables and lengths must be on one device")
    capacity = block_tables.shape[1] * block_size
    wrong = (lengths < min_length) | (lengths > capacity)
    if bool(wrong.any()):
        seq = int(wrong.nonzero()[0, 0])
        raise ValueError(f"{caller}: lengths[{seq}] = {int(lengths[seq])} is not in [{min_length}, {capacity}] "
                         f"({block_tables.shape[1]} blocks of {block_size} slots)")
    columns = torch.arange(block_tables.shape[1], device=lengths.device)
    used = columns < (lengths[:, None] + block_size - 1) // block_size
    outside = used & ((block_tables < 0) | (block_tables >= num_blocks))
    if bool(outside.any()):
        seq, column = (int(index) for index in outside.nonzero()[0])
        raise ValueError(f"{caller}: block_tables[{seq}, {column}] = {int(block_tables[seq, column])} is used by "
                         f"lengths[{seq}] = {int(lengths[seq])} but is not a block of the pool (0 to {num_blocks - 1})")


class LaunchCounter:
    """Counts the Triton kernel launches made in this process while it is active (a context manager).

    A compiled launch goes through ``JITFunction.run``, an interpreted one (``TRITON_INTERPRET=1``)
    through the interpreter's ``GridExecutor.__call__`` (in every Triton release since 2.2); both are
    counted while the counter is active and put back afterwards.
    """

    def __init__(self) -> None:
        self.launches = 0
        self._originals: list = []

    def __enter__(self) -> LaunchCounter:
        from triton.runtime import interpreter, jit

        self._originals = [(jit.JITFunction, "run", jit.JITFunction.run),
                           (interpreter.GridExecutor, "__call__", interpreter.GridExecutor.__call__)]
        for kind, name, original in self._originals:
            setattr(kind, name, self._counting(original))
        return self

    def _counting(self, original):
        def launch(kernel, *launch_args, **launch_kwargs):
            if not launch_kwargs.get("warmup", False):
                self.launches += 1
            return original(kernel, *launch_args, **launch_kwargs)
        return launch

    def __exit__(self, *exc) -> None:
        for kind, name, original in reversed(self._originals):
            setattr(kind, name, original)


# The launch counters of `count_launches` active now, innermost last. When grading, the judge
# (grading/judge/) adds to them the launches that the student's code made in its own process meanwhile.
COUNTING: list[LaunchCounter] = []


def count_launches(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Call ``function(*args, **kwargs)``; return its result and the number of Triton kernels it launched.

    Used in notebook 09's tests (a copy of many blocks must be one launch).
    """
    counted_elsewhere = getattr(type(function), "judge_count_launches", None)
    if counted_elsewhere is not None:  # A function of the student's kernel, while grading: the kernel counts.
        return counted_elsewhere(function, *args, **kwargs)
    with LaunchCounter() as counter:
        COUNTING.append(counter)
        try:
            result = function(*args, **kwargs)
        finally:
            COUNTING.remove(counter)
    return result, counter.launches


class _MemoryWatch:
    """Stands in for the interpreter's memory functions (``triton.runtime.interpreter._interpreter``) while
    `watch_memory` runs: each load, store and atomic operation is done, and the bytes it touched recorded."""

    def __init__(self, inner) -> None:
        self.inner, self.read, self.written = inner, [], []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    @staticmethod
    def _bytes(pointers, mask, itemsize: int):
        import numpy

        starts = numpy.asarray(pointers, dtype=numpy.uint64).reshape(-1)
        if mask is not None:
            starts = starts[numpy.asarray(mask, dtype=bool).reshape(-1)]
        return (starts[:, None] + numpy.arange(itemsize, dtype=numpy.uint64)).reshape(-1)

    def load(self, pointers, mask, other, dtype):
        import numpy

        self.read.append(self._bytes(pointers, mask, numpy.dtype(dtype).itemsize))
        return self.inner.load(pointers, mask, other, dtype)

    def store(self, pointers, value, mask):
        self.written.append(self._bytes(pointers, mask, value.dtype.itemsize))
        return self.inner.store(pointers, value, mask)

    def atomic_rmw(self, op, pointers, value, mask, sem):
        touched = self._bytes(pointers, mask, value.dtype.itemsize)
        self.read.append(touched)
        self.written.append(touched)
        return self.inner.atomic_rmw(op, pointers, value, mask, sem)

    def atomic_cas(self, pointers, compare, value, sem):
        touched = self._bytes(pointers, None, value.dtype.itemsize)
        self.read.append(touched)
        self.written.append(touched)
        return self.inner.atomic_cas(pointers, compare, value, sem)


def _element_bytes(tensor: torch.Tensor):
    """The byte addresses of each element of a CPU tensor, ``[*tensor.shape, itemsize]`` (uint64)."""
    import numpy

    offsets = torch.zeros(tensor.shape, dtype=torch.int64)
    for dim, (size, stride) in enumerate(zip(tensor.shape, tensor.stride())):
        shape = [1] * tensor.dim()
        shape[dim] = size
        offsets = offsets + torch.arange(size, dtype=torch.int64).view(shape) * stride
    itemsize = tensor.element_size()
    starts = numpy.uint64(tensor.data_ptr()) + offsets.numpy().astype(numpy.uint64) * numpy.uint64(itemsize)
    return starts[..., None] + numpy.arange(itemsize, dtype=numpy.uint64)


def _touched(tensor: Any, addresses) -> torch.Tensor | None:
    """Which elements of ``tensor`` (a CPU tensor) any of the byte ``addresses`` fall in; None for another value."""
    import numpy

    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
        return None
    if tensor.numel() == 0:
        return torch.zeros(tensor.shape, dtype=torch.bool)
    return torch.from_numpy(numpy.isin(_element_bytes(tensor), addresses).any(axis=-1))


def watch_memory(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, dict]:
    """Call ``function(*args, **kwargs)``; return its result and which memory its Triton kernels touched.

    Under Triton's interpreter (``TRITON_INTERPRET=1``, on CPU tensors) every load, store and atomic
    operation of a kernel is recorded, and the second value says, as ``bool`` tensors of each tensor's shape,
    which elements of the arguments the kernels read and wrote (``"read"``, ``"written"``: one entry per
    positional argument, None for one that is not a CPU tensor), which elements of the result they wrote
    (``"result written"``: one entry for the result, or for each item of a tuple or list result), and how many
    bytes they read and wrote that lie in none of these tensors (``"read elsewhere"``, ``"written elsewhere"``: a
    scratch tensor the function made, a guard block). ``"watched"`` is False, and the rest empty, where nothing
    could be recorded (a compiled kernel on a GPU, or a tensor on another device). What PyTorch itself reads or
    writes is not recorded: only what the kernels do.

    Used in notebook 09's tests (a kernel never reads a slot past a sequence's length).
    """
    watched_elsewhere = getattr(type(function), "judge_watch_memory", None)
    if watched_elsewhere is not None:  # A function of the student's kernel, while grading: the kernel watches.
        return watched_elsewhere(function, *args, **kwargs)
    import os

    tensors = [value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)]
    if os.environ.get("TRITON_INTERPRET") != "1" or any(tensor.device.type != "cpu" for tensor in tensors):
        return function(*args, **kwargs), {"watched": False, "read": [], "written": [], "result written": [],
                                           "read elsewhere": 0, "written elsewhere": 0}
    import numpy
    from triton.runtime import interpreter

    watch = _MemoryWatch(interpreter._interpreter)
    interpreter._interpreter = watch
    try:
        result = function(*args, **kwargs)
    finally:
        interpreter._interpreter = watch.inner
    empty = numpy.zeros(0, dtype=numpy.uint64)
    read = numpy.unique(numpy.concatenate(watch.read)) if watch.read else empty
    written = numpy.unique(numpy.concatenate(watch.written)) if watch.written else empty
    results = list(result) if type(result) in (tuple, list) else [result]
    use = {"watched": True, "read": [_touched(value, read) for value in args],
           "written": [_touched(value, written) for value in args],
           "result written": [_touched(value, written) for value in results]}
    known = [_element_bytes(value).reshape(-1) for value in (*args, *kwargs.values(), *results)
             if isinstance(value, torch.Tensor) and value.numel()]
    known = numpy.concatenate(known) if known else empty
    use["read elsewhere"] = int((~numpy.isin(read, known)).sum())
    use["written elsewhere"] = int((~numpy.isin(written, known)).sum())
    return result, use


class _DevicePatchesOncePerLaunch:
    """Makes Triton's interpreter set up ``triton.language`` once per launch for each device function.

    Before a launch runs its programs, the interpreter patches ``triton.language`` (its builtins become
    interpreted ones) and undoes that at the launch's end. It patches again at every call of a
    ``@triton.jit`` device function, and ``tl.sum``, ``tl.max``, ``tl.cdiv`` and ``tl.zeros`` are such
    functions: each call walks every attribute of the modules and sets them again, and nothing undoes a
    device function's patch. Within one launch, a device function's second patch therefore sets only what
    its first one set; it is skipped here. Notebook 09's reference kernels call them about 3,000 times in
    their tests, which took a third of the tests' time.
    """

    def __init__(self, interpreter) -> None:
        self.patch_lang = interpreter._patch_lang
        self.run_launch = interpreter.GridExecutor.__call__
        self.patched: set | None = None  # The functions patched in the launch running now; None between launches.

    def patch_lang_once(self, fn):
        patched = self.patched
        if patched is not None:
            if fn in patched:
                return _NothingToUndo()
            patched.add(fn)
        return self.patch_lang(fn)

    def launch(self):
        """What replaces ``GridExecutor.__call__``: a plain function, which binds to each launch (a bound method
        of this object would not get the launch as its first argument)."""
        device_patches, run_launch = self, self.run_launch

        def run_once_per_launch(executor, *args, **kwargs):
            outer, device_patches.patched = device_patches.patched, set()
            try:
                return run_launch(executor, *args, **kwargs)
            finally:
                device_patches.patched = outer
        return run_once_per_launch


class _NothingToUndo:
    """What a skipped patch returns (the interpreter ignores what a device function's patch returns)."""

    def restore(self) -> None:
        pass


def _interpreter_works_as_described(interpreter) -> bool:
    """Whether this Triton's interpreter patches as `_DevicePatchesOncePerLaunch` says (read from its source)."""
    import inspect

    try:
        launch = inspect.getsource(interpreter.GridExecutor.__call__)
        device_call = inspect.getsource(interpreter.InterpretedFunction.__call__)
    except (AttributeError, OSError, TypeError):
        return False
    return ("patch_scope = _patch_lang(self.fn)" in launch and "patch_scope.restore()" in launch
            and "_patch_lang(self.fn)" in device_call and "scope" not in device_call)


def _overflow_checks_are_discarded(interpreter) -> bool:
    """Whether this Triton's interpreter works out integer-overflow checks only to discard them (read from its
    source): a check ends in ``device_assert``, which does nothing unless the options say ``debug``, and the
    interpreter's options never do."""
    import inspect

    from triton.language.semantic import TritonSemantic

    try:
        check = inspect.getsource(TritonSemantic.binary_op_sanitize_overflow_impl)
        device_assert = inspect.getsource(TritonSemantic.device_assert)
        options = interpreter.interpreter_builder.options
    except (AttributeError, OSError, TypeError):
        return False
    return ("not self.builder.options.sanitize_overflow" in check and "self.device_assert(" in check
            and "if not self.builder.options.debug:\n            return" in device_assert
            and dataclasses.is_dataclass(options) and not options.debug and hasattr(options, "sanitize_overflow"))


def speed_up_interpreter() -> bool:
    """With ``TRITON_INTERPRET=1``: skip work of Triton's interpreter that changes no result, for the same
    results in about half the time in notebook 09. Two kinds: its repeated set-up of ``triton.language``
    within a launch (`_DevicePatchesOncePerLaunch`), and the overflow check it works out for each integer
    ``+``, ``-`` and ``*`` (in int64, with two comparisons and an ``and``) and then throws away, since its
    ``device_assert`` runs only in debug mode, which the interpreter never is. Returns whether the first is in
    effect; it does nothing (False) with a Triton whose interpreter works otherwise, and once is enough."""
    from triton.runtime import interpreter

    if _overflow_checks_are_discarded(interpreter) and interpreter.interpreter_builder.options.sanitize_overflow:
        interpreter.interpreter_builder.options = dataclasses.replace(interpreter.interpreter_builder.options,
                                                                      sanitize_overflow=False)
    if isinstance(getattr(interpreter._patch_lang, "__self__", None), _DevicePatchesOncePerLaunch):
        return True
    if not _interpreter_works_as_described(interpreter):
        return False
    device_patches = _DevicePatchesOncePerLaunch(interpreter)
    interpreter._patch_lang = device_patches.patch_lang_once
    interpreter.GridExecutor.__call__ = device_patches.launch()
    return True
