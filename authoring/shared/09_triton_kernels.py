"""Notebook 09's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs.
"""

import torch


def expected_scores(q, batch, scores, scale=None):
    """The scores plus this step's attention, summed over the query heads, computed with torch."""
    block_size, group = batch.k_cache.shape[1], q.shape[1] // batch.k_cache.shape[2]
    want = scores.clone()
    for s, length in enumerate(batch.lengths.tolist()):
        used = batch.block_tables[s, :(length + block_size - 1) // block_size].long()
        keys = batch.k_cache[used].flatten(0, 1)[:length].float().repeat_interleave(group, dim=1)
        x = torch.einsum("hd,thd->ht", q[s].float(), keys) * (q.shape[2] ** -0.5 if scale is None else scale)
        want[s, :length] += torch.softmax(x, dim=-1).sum(dim=0)
    return want


def check_memory(use, batch, caller, pools, may_write=None, written_elsewhere=None):
    """Fail when a kernel, as `course.kernels.watch_memory` saw it (``use``), read a pool slot past a sequence's
    length (``pools``: ``{position: name}`` of the K/V pools among the arguments); with ``may_write``
    (``{position: bool mask of the elements it may write}``), when it wrote any other element of an argument; with
    ``written_elsewhere``, when it wrote more bytes than that outside its arguments and result. Nothing is checked
    where nothing could be watched (a compiled kernel on a GPU)."""
    if not use["watched"]:
        return
    block_size = batch.k_cache.shape[1]
    in_use = torch.zeros(batch.k_cache.shape[:2], dtype=torch.bool)
    for s, length in enumerate(batch.lengths.tolist()):
        for t in range(length):
            in_use[int(batch.block_tables[s, t // block_size]), t % block_size] = True
    for position, name in pools.items():
        past = use["read"][position].flatten(2).any(-1) & ~in_use
        assert not bool(past.any()), (
            f"{caller} read {name} at (block, slot) {past.nonzero().tolist()[:4]}: slots past the sequences' lengths "
            "(the kernel never reads them: load under the mask)")
    if may_write is not None:
        for position, written in enumerate(use["written"]):
            allowed = may_write.get(position)
            wrong = written if allowed is None or written is None else written & ~allowed
            assert wrong is None or not bool(wrong.any()), (
                f"{caller} wrote into its argument {position} at {wrong.nonzero().tolist()[:4]}: it may not write there")
    if written_elsewhere is not None:
        assert use["written elsewhere"] <= written_elsewhere, (
            f"{caller} wrote {use['written elsewhere']} bytes outside its result and arguments, more than "
            f"{written_elsewhere} (a tensor of its own as large as the attention matrix?)")
