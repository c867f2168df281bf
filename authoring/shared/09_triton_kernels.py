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
