"""Wrong and alternative answers for notebook 07 (see grading/mutants/__init__.py)."""

from grading.reference import Reference

ref = Reference("07_token_eviction")

ATTEND, STREAM, H2O = "task7_1_attend_kept", "task7_2_streaming_keep", "task7_3_h2o_keep"
SNAP, PYRAMID, DECODE = "task7_4_snapkv_keep", "task7_5_pyramid_budgets", "task7_6_decode_with_eviction"

_MASK_SOFTMAX = ('scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))\n'
                 "    probabilities = torch.softmax(scores, dim=-1)")
_H2O_SORT = "order = torch.sort(scores[..., :older], dim=-1, descending=True, stable=True).indices"
_SNAP_POOL = ("pooled = F.avg_pool1d(votes.reshape(-1, 1, prefix), kernel_size, stride=1, padding=kernel_size // 2,\n"
              "                          count_include_pad=False).reshape(votes.shape)")
_SNAP_SORT = "order = torch.sort(pooled, dim=-1, descending=True, stable=True).indices"
_STEP = "logits, kv, attention = model(tokens[:, step:step + 1], past_kv=kv, position=step, return_attention=True)"
_ACCUMULATE = ("scores = [torch.cat((old, torch.zeros_like(old[..., :1])), dim=-1) + row "
               "for old, row in zip(scores, rows)]")
_PRUNE_SCORES = "scores = [layer_scores[keep].reshape(*layer_scores.shape[:-1], budget)"

WRONG = {
    ATTEND: {
        "the mask applied after the softmax (rows no longer sum to 1)": ref.edit(
            ATTEND, (_MASK_SOFTMAX, "probabilities = torch.softmax(scores, dim=-1) * keep.unsqueeze(-2)")),
        "no 1/sqrt(head_dim) scale": ref.edit(ATTEND, (" / math.sqrt(query.shape[-1])", "")),
        "scaled by sqrt(num_tokens) instead of sqrt(head_dim)": ref.edit(
            ATTEND, ("math.sqrt(query.shape[-1])", "math.sqrt(keys.shape[-2])")),
        "the keep mask inverted": ref.edit(
            ATTEND, ("scores.masked_fill(~keep.unsqueeze(-2)", "scores.masked_fill(keep.unsqueeze(-2)")),
        "softmax over the queries": ref.edit(
            ATTEND, ("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")),
        "exp without the maximum subtracted (overflows)": ref.edit(
            ATTEND, ("probabilities = torch.softmax(scores, dim=-1)",
                     "weights = torch.exp(scores)\n    probabilities = weights / weights.sum(dim=-1, keepdim=True)")),
        "a row that keeps nothing gives NaN instead of ValueError": ref.edit(
            ATTEND, ("if not bool(keep.any(dim=-1).all()):", "if False:")),
        "an int64 keep mask accepted": ref.edit(
            ATTEND, ("keep.dtype != torch.bool", "keep.dtype not in (torch.bool, torch.int64)")),
        "the keep mask's shape not checked": ref.edit(ATTEND, (" or keys.shape[:-1] != keep.shape", "")),
    },
    STREAM: {
        "the sinks counted on top of the budget": ref.edit(STREAM, ("window = budget - sinks", "window = budget")),
        "keep[-window:] with a window of 0 keeps everything": ref.solve(STREAM, todo={"7.2.2": """
            if budget >= num_tokens:
                return torch.ones(num_tokens, dtype=torch.bool, device=device)
            sinks = min(num_sinks, budget)
            keep = torch.zeros(num_tokens, dtype=torch.bool, device=device)
            keep[:sinks] = True
            keep[-(budget - sinks):] = True
            return keep
        """}),
        "the window one position too long": ref.edit(
            STREAM, ("positions >= num_tokens - window", "positions >= num_tokens - window - 1")),
        "the window one position too short": ref.edit(
            STREAM, ("positions >= num_tokens - window", "positions > num_tokens - window")),
        "num_sinks sinks even when the budget is smaller": ref.edit(
            STREAM, ("    sinks = min(num_sinks, budget)\n    window", "    sinks = num_sinks\n    window")),
        "a bool budget accepted": ref.edit(STREAM, ("if type(value) is not int:", "if not isinstance(value, int):")),
        "a negative budget accepted": ref.edit(STREAM, ("if value < 0:", 'if value < 0 and name != "budget":')),
    },
    H2O: {
        "ties to the later position": ref.edit(H2O, (
            _H2O_SORT, "order = older - 1 - torch.sort(scores[..., :older].flip(-1), dim=-1, descending=True,"
                       " stable=True).indices")),
        "the recent positions compete for the heavy-hitter slots too": ref.solve(H2O, todo={"7.3.1": """
            scores = attention.sum(dim=-2)
            num_tokens = scores.shape[-1]
            if budget >= num_tokens:
                return torch.ones_like(scores, dtype=torch.bool)
            order = torch.sort(scores, dim=-1, descending=True, stable=True).indices
            keep = torch.zeros_like(scores, dtype=torch.bool)
            keep.scatter_(-1, order[..., :budget - recent], True)
            keep[..., num_tokens - recent:] = True
            return keep
        """, "7.3.2": "pass"}),
        "scores of the last query only": ref.edit(
            H2O, ("scores = attention.sum(dim=-2)", "scores = attention[..., -1, :]")),
        "the lowest scores kept": ref.edit(H2O, (_H2O_SORT, _H2O_SORT.replace("descending=True", "descending=False"))),
        "budget heavy hitters plus the window": ref.edit(H2O, ("order[..., :budget - recent]", "order[..., :budget]")),
        "NaN accepted": ref.edit(H2O, ("if attention.dim() < 2 or bool(torch.isnan(attention).any()):",
                                       "if attention.dim() < 2:")),
        "recent > budget accepted": ref.edit(H2O, ("if not 0 <= recent <= budget:", "if recent < 0 or budget < 0:")),
        "no shortcut when the budget covers every position": ref.edit(
            H2O, ("    if budget >= num_tokens:\n        return torch.ones_like(scores, dtype=torch.bool)\n", "")),
    },
    SNAP: {
        "no pooling": ref.solve(SNAP, todo={"7.4.2": "pooled = votes"}),
        "the zero padding counted in the mean": ref.edit(SNAP, ("count_include_pad=False", "count_include_pad=True")),
        "max pooling": ref.solve(SNAP, todo={"7.4.2": """
            pooled = F.max_pool1d(votes.reshape(-1, 1, prefix), kernel_size, stride=1,
                                  padding=kernel_size // 2).reshape(votes.shape)
        """}),
        "the votes of the first window rows": ref.edit(
            SNAP, ("votes = attention[..., prefix:, :prefix]", "votes = attention[..., :window, :prefix]")),
        "the window's own columns compete for the slots": ref.solve(SNAP, todo={"7.4.3": """
            votes_all = attention[..., prefix:, :].sum(dim=-2)
            order = torch.sort(votes_all, dim=-1, descending=True, stable=True).indices
            keep = torch.zeros_like(votes_all, dtype=torch.bool)
            keep.scatter_(-1, order[..., :budget - window], True)
            keep[..., prefix:] = True
            return keep
        """}),
        "ties to the later position": ref.edit(SNAP, (
            _SNAP_SORT,
            "order = prefix - 1 - torch.sort(pooled.flip(-1), dim=-1, descending=True, stable=True).indices")),
        "the window not kept": ref.edit(SNAP, ("keep_window = torch.ones(", "keep_window = torch.zeros(")),
        "budget positions plus the window": ref.edit(SNAP, ("order[..., :budget - window]", "order[..., :budget]")),
        "an even kernel accepted": ref.edit(
            SNAP, ("if kernel_size < 1 or kernel_size % 2 == 0:", "if kernel_size < 1:")),
        "window > budget accepted": ref.edit(
            SNAP, ("if not 1 <= window <= min(budget, num_tokens):", "if not 1 <= window <= num_tokens:")),
    },
    PYRAMID: {
        "the formula in floating point": ref.solve(PYRAMID, todo={"7.5.1": """
            import math

            average = total / num_layers
            top = average / beta
            bottom = 2 * average - top
            budgets = [math.floor(bottom - layer * (bottom - top) / (num_layers - 1)) for layer in range(num_layers)]
        """}),
        "the left-over units to the top layers": ref.edit(
            PYRAMID, ("(layer < left_over)", "(layer >= num_layers - left_over)")),
        "no left-over step (the sum falls short)": ref.solve(PYRAMID, todo={"7.5.2": "return budgets"}),
        "budgets that grow with depth": ref.edit(
            PYRAMID, ("- 2 * layer * (beta - 1)", "- 2 * (num_layers - 1 - layer) * (beta - 1)")),
        "one layer divides by zero": ref.edit(PYRAMID, ("    if num_layers == 1:\n        return [total]\n", "")),
        "rounded to the nearest instead of floored": ref.edit(
            PYRAMID, ("budgets = [total * ((2 * beta - 1) * (num_layers - 1) - 2 * layer * (beta - 1)) // denominator",
                      "budgets = [round(total * ((2 * beta - 1) * (num_layers - 1) - 2 * layer * (beta - 1))"
                      " / denominator)")),
        "beta 0 accepted": ref.edit(PYRAMID, ('("beta", beta, 1)', '("beta", beta, 0)')),
    },
    DECODE: {
        "the position taken from the cache's length": ref.edit(DECODE, (_STEP, _STEP.replace("position=step, ", ""))),
        "evicts the step's own token (keep_fn over the older slots only)": ref.edit(DECODE, (
            "keep = keep_fn(layer_scores, budget)",
            "keep = torch.cat((keep_fn(layer_scores[..., :-1], budget),\n"
            "                                  torch.zeros_like(layer_scores[..., -1:], dtype=torch.bool)), dim=-1)")),
        "the scores not pruned with their slots": ref.edit(
            DECODE, (_PRUNE_SCORES, "scores = [layer_scores[..., :budget]")),
        "the scores reset after each eviction": ref.edit(
            DECODE, (_PRUNE_SCORES, "scores = [torch.zeros_like(layer_scores[..., :budget])")),
        "only the latest attention row, not accumulated": ref.edit(DECODE, (_ACCUMULATE, "scores = rows")),
        "the new slot starts at 0 (its attention to itself not counted)": ref.edit(DECODE, (
            "+ row for old, row",
            "+ torch.cat((row[..., :-1], torch.zeros_like(row[..., -1:])), dim=-1) for old, row")),
        "keeps budget - 1 slots to make room for the next token": ref.edit(
            DECODE, ("keep = keep_fn(layer_scores, budget)", "keep = keep_fn(layer_scores, budget - 1)"),
            ("(keep.sum(dim=-1) == budget)", "(keep.sum(dim=-1) == budget - 1)"),
            ("layer_scores.shape[:-1], budget)", "layer_scores.shape[:-1], budget - 1)")),
        "keep_fn's mask not checked": ref.edit(
            DECODE, ("if (not isinstance(keep, torch.Tensor)", "if False and (not isinstance(keep, torch.Tensor)")),
    },
}

ALTERNATIVES = {
    ATTEND: {
        "finfo.min instead of -inf": ref.edit(
            ATTEND, ('scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))',
                     "scores.masked_fill(~keep.unsqueeze(-2), torch.finfo(scores.dtype).min)")),
        "einsum, torch.where and an explicit max-subtracted exp": ref.solve(ATTEND, todo={"7.1.2": """
            scores = torch.einsum("...qd,...td->...qt", query, keys) / query.shape[-1] ** 0.5
            minus_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
            scores = torch.where(keep.unsqueeze(-2), scores, minus_inf)
            weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            probabilities = weights / weights.sum(dim=-1, keepdim=True)
            return torch.einsum("...qt,...td->...qd", probabilities, values), probabilities
        """}),
        "scaled_dot_product_attention for the output": ref.solve(ATTEND, todo={"7.1.2": """
            import torch.nn.functional as F

            mask = keep.unsqueeze(-2).expand(*query.shape[:-1], keep.shape[-1])
            scores = (query @ keys.transpose(-1, -2)) * query.shape[-1] ** -0.5
            probabilities = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
            return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask), probabilities
        """}),
        "checks with torch.is_tensor and one device set": ref.solve(ATTEND, todo={"7.1.1": """
            if not all(torch.is_tensor(t) and torch.is_floating_point(t) for t in (query, keys, values)):
                raise TypeError("query, keys and values must be float tensors")
            if not torch.is_tensor(keep) or keep.dtype is not torch.bool:
                raise TypeError("keep must be a bool tensor")
            shapes_agree = (query.dim() >= 2 and keys.shape == values.shape
                            and tuple(keep.shape) == tuple(keys.shape[:-1])
                            and tuple(query.shape[:-2]) == tuple(keys.shape[:-2]) and query.shape[-1] == keys.shape[-1])
            if not shapes_agree:
                raise ValueError("shapes disagree")
            if len({str(t.device) for t in (query, keys, values, keep)}) != 1:
                raise ValueError("tensors on different devices")
            if keep.numel() == 0 or bool((keep.sum(dim=-1) == 0).any()):
                raise ValueError("a row keeps nothing")
        """}),
    },
    STREAM: {
        "slices with an explicit window start": ref.solve(STREAM, todo={"7.2.2": """
            keep = torch.zeros(num_tokens, dtype=torch.bool, device=device)
            if budget >= num_tokens:
                keep[:] = True
                return keep
            sinks = min(num_sinks, budget)
            keep[:sinks] = True
            keep[num_tokens - (budget - sinks):] = True
            return keep
        """}),
        "torch.cat of three pieces": ref.solve(STREAM, todo={"7.2.2": """
            if budget >= num_tokens:
                return torch.ones(num_tokens, dtype=torch.bool, device=device)
            sinks = min(num_sinks, budget)
            return torch.cat((torch.ones(sinks, dtype=torch.bool, device=device),
                              torch.zeros(num_tokens - budget, dtype=torch.bool, device=device),
                              torch.ones(budget - sinks, dtype=torch.bool, device=device)))
        """}),
    },
    H2O: {
        "the mean over the queries (the same ranking)": ref.edit(
            H2O, ("scores = attention.sum(dim=-2)", "scores = attention.mean(dim=-2)")),
        "argsort of the negated scores": ref.edit(
            H2O, (_H2O_SORT, "order = torch.argsort(-scores[..., :older], dim=-1, stable=True)")),
        "ranks by pairwise comparison": ref.solve(H2O, todo={"7.3.1": """
            scores = attention.sum(dim=-2)
            num_tokens = scores.shape[-1]
            if budget >= num_tokens:
                return torch.ones_like(scores, dtype=torch.bool)
            older = num_tokens - recent
            candidates = scores[..., :older]
            index = torch.arange(older, device=scores.device)
            beats = (candidates.unsqueeze(-1) > candidates.unsqueeze(-2)) | (
                (candidates.unsqueeze(-1) == candidates.unsqueeze(-2)) & (index[:, None] < index[None, :]))
            keep_older = beats.sum(dim=-2) < budget - recent
        """}),
    },
    SNAP: {
        "the mean over the window (the same ranking)": ref.edit(
            SNAP, ("votes = attention[..., prefix:, :prefix].sum(dim=-2)",
                   "votes = attention[..., prefix:, :prefix].mean(dim=-2)")),
        "pooling with a cumulative sum": ref.solve(SNAP, todo={"7.4.2": """
            half = kernel_size // 2
            cumulative = F.pad(votes, (1, 0)).cumsum(dim=-1)
            index = torch.arange(prefix, device=votes.device)
            low = (index - half).clamp(min=0)
            high = (index + half + 1).clamp(max=prefix)
            pooled = (cumulative[..., high] - cumulative[..., low]) / (high - low).to(votes.dtype)
        """}),
        "pooling with conv1d, divided by the counts": ref.solve(SNAP, todo={"7.4.2": """
            ones = torch.ones(1, 1, kernel_size, dtype=votes.dtype, device=votes.device)
            sums = F.conv1d(votes.reshape(-1, 1, prefix), ones, padding=kernel_size // 2).reshape(votes.shape)
            counts = F.conv1d(torch.ones(1, 1, prefix, dtype=votes.dtype, device=votes.device), ones,
                              padding=kernel_size // 2).reshape(prefix)
            pooled = sums / counts
        """}),
    },
    PYRAMID: {
        "exact fractions": ref.solve(PYRAMID, todo={"7.5.1": """
            import math
            from fractions import Fraction

            average = Fraction(total, num_layers)
            top = average / beta
            bottom = 2 * average - top
            budgets = [math.floor(bottom - (bottom - top) * layer / (num_layers - 1)) for layer in range(num_layers)]
        """}),
        "a loop for the left-over units": ref.solve(PYRAMID, todo={"7.5.2": """
            for layer in range(total - sum(budgets)):
                budgets[layer] += 1
            return budgets
        """}),
    },
    DECODE: {
        "the new slot's score concatenated after the old ones": ref.solve(DECODE, todo={"7.6.2": """
            rows = [layer_attention[:, :, 0, :] for layer_attention in attention]
            scores = rows if scores is None else [torch.cat((old + row[..., :-1], row[..., -1:]), dim=-1)
                                                  for old, row in zip(scores, rows)]
        """}),
        "gather instead of prune_cache": ref.solve(DECODE, todo={"7.6.3": """
            if kv[0][0].shape[1] > budget:
                new_kv, new_scores = [], []
                for (k_cache, v_cache), layer_scores in zip(kv, scores):
                    keep = keep_fn(layer_scores, budget)
                    good = type(keep) is torch.Tensor and keep.dtype == torch.bool and keep.shape == layer_scores.shape
                    if not good or bool((keep.sum(dim=-1) != budget).any()):
                        raise ValueError("keep_fn returned a bad mask")
                    slots = torch.arange(keep.shape[-1], device=keep.device)
                    index = torch.sort(torch.where(keep, slots, keep.shape[-1]), dim=-1).values[..., :budget]
                    gather = index.transpose(1, 2).unsqueeze(-1).expand(-1, -1, k_cache.shape[2], k_cache.shape[3])
                    new_kv.append((k_cache.gather(1, gather), v_cache.gather(1, gather)))
                    new_scores.append(layer_scores.gather(-1, index))
                kv, scores = new_kv, new_scores
        """}),
        "F.pad for the new slot": ref.solve(DECODE, todo={"7.6.2": """
            import torch.nn.functional as F

            rows = [layer_attention[:, :, 0, :] for layer_attention in attention]
            scores = rows if scores is None else [F.pad(old, (0, 1)) + row for old, row in zip(scores, rows)]
        """}),
    },
}

HIDDEN_ONLY: dict[str, dict[str, str]] = {}
