"""Wrong and alternative answers for notebook 07 (see tests/answers/__init__.py)."""

from grading.authoring.reference import Reference
from tests.answers import INT_CHECK as _INT_CHECK
from tests.answers import numbers_integral

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
_ATTEND_TYPES = "if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():"
_ATTEND_DTYPES = ("    if not query.dtype == keys.dtype == values.dtype:\n"
                  "        raise ValueError(f\"attend_kept: query, keys and values must share one dtype, got "
                  "{query.dtype}, \"\n                         f\"{keys.dtype} and {values.dtype}\")\n")
_ATTEND_DEVICES = ("    if len({query.device, keys.device, values.device, keep.device}) > 1:\n"
                   "        raise ValueError(\"attend_kept: query, keys, values and keep must be on one device\")\n")
_H2O_SHORTCUT = "    if budget >= num_tokens:\n        return torch.ones_like(scores, dtype=torch.bool)\n"
_H2O_CHECKS = "if attention.dim() < 2 or bool(torch.isnan(attention).any()):"
_SNAP_SHORTCUT = ("    if budget >= num_tokens:\n"
                  "        return torch.ones(attention.shape[:-1], dtype=torch.bool, device=attention.device)\n")
_SNAP_KERNEL = ("    if kernel_size < 1 or kernel_size % 2 == 0:\n"
                "        raise ValueError(f\"snapkv_keep: kernel_size must be odd and >= 1, got {kernel_size}\")\n")
_PYRAMID_ONE_LAYER = "    if num_layers == 1:\n        return [total]\n"
_PYRAMID_FLOORS = ("budgets = [total * ((2 * beta - 1) * (num_layers - 1) - 2 * layer * (beta - 1)) // denominator")

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
        "mixed dtypes accepted (keys and values cast to the query's dtype)": ref.edit(
            ATTEND, (_ATTEND_DTYPES, "    keys, values = keys.to(query.dtype), values.to(query.dtype)\n")),
        "half precision refused (only float32 and float64 accepted)": ref.edit(
            ATTEND, (_ATTEND_TYPES, "if not isinstance(tensor, torch.Tensor) or tensor.dtype not in "
                                    "(torch.float32, torch.float64):")),
        "computed and returned in float32 whatever the query's dtype": ref.solve(ATTEND, todo={"7.1.2": """
            scores = query.float() @ keys.float().transpose(-1, -2) / math.sqrt(query.shape[-1])
            scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))
            probabilities = torch.softmax(scores, dim=-1)
            return probabilities @ values.float(), probabilities
        """}),
        "float64 computed in float32 and cast back (the precision is lost)": ref.solve(ATTEND, todo={"7.1.2": """
            scores = query.float() @ keys.float().transpose(-1, -2) / math.sqrt(query.shape[-1])
            scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))
            probabilities = torch.softmax(scores, dim=-1)
            return (probabilities @ values.float()).to(query.dtype), probabilities.to(query.dtype)
        """}),
        "evicted scores set to -1e9 instead of -inf": ref.edit(
            ATTEND, ('scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))',
                     "scores = scores.masked_fill(~keep.unsqueeze(-2), -1e9)")),
        "evicted scores set to float32's smallest value whatever the dtype": ref.edit(
            ATTEND, ('scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))',
                     "scores = scores.masked_fill(~keep.unsqueeze(-2), torch.finfo(torch.float32).min)")),
        "leading dimensions that broadcast accepted": ref.edit(
            ATTEND, ("\n            or query.shape[:-2] != keys.shape[:-2] or", "\n            or")),
        "only keep's last dimension checked (a keep that broadcasts accepted)": ref.edit(
            ATTEND, ("keys.shape[:-1] != keep.shape", "keys.shape[-2] != keep.shape[-1]")),
        "values' head_dim not checked": ref.edit(
            ATTEND, ("keys.shape != values.shape", "keys.shape[:-1] != values.shape[:-1]")),
        "devices not checked": ref.edit(ATTEND, (_ATTEND_DEVICES, "")),
        "keep's device not checked (query, keys and values only)": ref.edit(
            ATTEND, ("len({query.device, keys.device, values.device, keep.device}) > 1",
                     "len({query.device, keys.device, values.device}) > 1")),
        "a list keep converted with torch.as_tensor": ref.edit(
            ATTEND, ("    if not isinstance(keep, torch.Tensor)",
                     "    keep = torch.as_tensor(keep)\n    if not isinstance(keep, torch.Tensor)")),
        "integer tensors converted to float instead of TypeError": ref.edit(
            ATTEND, ('    for name, tensor in (("query", query),',
                     "    query, keys, values = (t.float() if isinstance(t, torch.Tensor) and not t.is_floating_point()"
                     " else t\n                           for t in (query, keys, values))\n"
                     '    for name, tensor in (("query", query),')),
        "checks that keep keeps something somewhere, not in every row": ref.edit(
            ATTEND, ("if not bool(keep.any(dim=-1).all()):", "if not bool(keep.any()):")),
        "the query scaled in place (the caller's tensor changes)": ref.edit(
            ATTEND, ("scores = query @ keys.transpose(-1, -2) / math.sqrt(query.shape[-1])",
                     "query.mul_(1 / math.sqrt(query.shape[-1]))\n    scores = query @ keys.transpose(-1, -2)")),
        "returns a list [output, probabilities]": ref.edit(
            ATTEND, ("return probabilities @ values, probabilities", "return [probabilities @ values, probabilities]")),
        "a Python loop over the cached positions": ref.edit(
            ATTEND, ("scores = query @ keys.transpose(-1, -2) / math.sqrt(query.shape[-1])",
                     "scores = torch.stack([(query * keys[..., j, None, :]).sum(dim=-1)"
                     " for j in range(keys.shape[-2])], dim=-1)\n"
                     "    scores = scores / math.sqrt(query.shape[-1])")),
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
        "a mask as long as the budget, cut to num_tokens (a budget of 2**62 cannot be allocated)": ref.solve(
            STREAM, todo={"7.2.2": """
            keep = torch.ones(max(num_tokens, budget), dtype=torch.bool, device=device)[:num_tokens]
            if budget >= num_tokens:
                return keep
            sinks = min(num_sinks, budget)
            positions = torch.arange(num_tokens, device=device)
            return (positions < sinks) | (positions >= num_tokens - (budget - sinks))
        """}),
        "the arguments checked only when the cache is full": ref.solve(STREAM, todo={"7.2.1": """
            if isinstance(num_tokens, int) and isinstance(budget, int) and budget >= num_tokens >= 0:
                return torch.ones(num_tokens, dtype=torch.bool, device=device)
            for name, value in (("num_tokens", num_tokens), ("budget", budget), ("num_sinks", num_sinks)):
                if type(value) is not int:
                    raise TypeError(f"{name} must be an int")
                if value < 0:
                    raise ValueError(f"{name} must be >= 0")
        """}),
        "num_sinks never checked": ref.edit(
            STREAM, ('(("num_tokens", num_tokens), ("budget", budget), ("num_sinks", num_sinks))',
                     '(("num_tokens", num_tokens), ("budget", budget))')),
        "numpy integers accepted (numbers.Integral)": numbers_integral(ref, STREAM),
        "integral floats such as 4.0 accepted": ref.edit(
            STREAM, (_INT_CHECK, "if isinstance(value, bool) or int(value) != value:")),
        "a uint8 mask instead of bool": ref.edit(
            STREAM, ("return (positions < sinks) | (positions >= num_tokens - window)",
                     "return ((positions < sinks) | (positions >= num_tokens - window)).to(torch.uint8)")),
        "budget positions when the budget is larger than the cache (a mask too long)": ref.edit(
            STREAM, ("        return torch.ones(num_tokens, dtype=torch.bool, device=device)",
                     "        return torch.ones(budget, dtype=torch.bool, device=device)")),
        "a Python loop over the positions": ref.solve(STREAM, todo={"7.2.2": """
            keep = torch.zeros(num_tokens, dtype=torch.bool, device=device)
            sinks = min(num_sinks, budget)
            for position in range(num_tokens):
                if budget >= num_tokens or position < sinks or position >= num_tokens - (budget - sinks):
                    keep[position] = True
            return keep
        """}),
    },
    H2O: {
        "an unstable sort (torch.sort without stable=True)": ref.edit(
            H2O, (_H2O_SORT, _H2O_SORT.replace(", stable=True", ""))),
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
        "NaN checked only when evicting": ref.edit(
            H2O, (_H2O_CHECKS, "if attention.dim() < 2:"),
            (_H2O_SHORTCUT, _H2O_SHORTCUT + "    if bool(torch.isnan(attention).any()):\n"
                                            "        raise ValueError(\"h2o_keep: NaN\")\n")),
        "recent > budget checked only when evicting": ref.edit(
            H2O, ("if not 0 <= recent <= budget:", "if recent < 0 or budget < 0:"),
            (_H2O_SHORTCUT, _H2O_SHORTCUT + "    if recent > budget:\n"
                                            "        raise ValueError(\"recent > budget\")\n")),
        "the shortcut before the shape and NaN checks (1-D attention accepted)": ref.edit(
            H2O, ("    " + _H2O_CHECKS,
                  "    if budget >= attention.shape[-1]:\n"
                  "        return torch.ones(attention.shape[:-2] + attention.shape[-1:], dtype=torch.bool,"
                  " device=attention.device)\n    " + _H2O_CHECKS)),
        "half precision refused (only float32 and float64 accepted)": ref.edit(
            H2O, ("or not attention.is_floating_point():",
                  "or attention.dtype not in (torch.float32, torch.float64):")),
        "numpy integers accepted (numbers.Integral)": numbers_integral(ref, H2O),
        "the recent window left out of the ranking by a score of -1e9": ref.solve(H2O, todo={"7.3.1": """
            scores = attention.sum(dim=-2)
            num_tokens = scores.shape[-1]
            if budget >= num_tokens:
                return torch.ones_like(scores, dtype=torch.bool)
            older = num_tokens - recent
            ranked = scores.clone()
            ranked[..., older:] = -1e9
            order = torch.sort(ranked, dim=-1, descending=True, stable=True).indices
            keep = torch.zeros_like(scores, dtype=torch.bool)
            keep.scatter_(-1, order[..., :budget - recent], True)
            keep[..., older:] = True
            return keep
        """, "7.3.2": "pass"}),
        "the recent scores set to -inf in place, on a view of attention when there is one query": ref.solve(
            H2O, todo={"7.3.1": """
            scores = attention.squeeze(-2) if attention.shape[-2] == 1 else attention.sum(dim=-2)
            num_tokens = scores.shape[-1]
            if budget >= num_tokens:
                return torch.ones_like(scores, dtype=torch.bool)
            older = num_tokens - recent
            scores[..., older:] = float("-inf")
            order = torch.sort(scores, dim=-1, descending=True, stable=True).indices
            keep = torch.zeros_like(scores, dtype=torch.bool)
            keep.scatter_(-1, order[..., :budget - recent], True)
            keep[..., older:] = True
            return keep
        """, "7.3.2": "pass"}),
        "torch.topk (equal scores in any order)": ref.edit(
            H2O, (_H2O_SORT, "order = torch.topk(scores[..., :older], budget - recent, dim=-1).indices")),
        "a list converted with torch.as_tensor": ref.edit(
            H2O, ("    if not isinstance(attention, torch.Tensor) or not attention.is_floating_point():",
                  "    attention = torch.as_tensor(attention)\n"
                  "    if not isinstance(attention, torch.Tensor) or not attention.is_floating_point():")),
        "a Python loop over the rows": ref.solve(H2O, todo={"7.3.1": """
            scores = attention.sum(dim=-2)
            num_tokens = scores.shape[-1]
            if budget >= num_tokens:
                return torch.ones_like(scores, dtype=torch.bool)
            older = num_tokens - recent
            rows = scores.reshape(-1, num_tokens)
            keep_older = torch.zeros(rows.shape[0], older, dtype=torch.bool, device=scores.device)
            for row in range(rows.shape[0]):
                order = torch.sort(rows[row, :older], descending=True, stable=True).indices
                keep_older[row, order[:budget - recent]] = True
            keep_older = keep_older.reshape(*scores.shape[:-1], older)
        """}),
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
        "an unstable sort (torch.sort without stable=True)": ref.edit(
            SNAP, (_SNAP_SORT, _SNAP_SORT.replace(", stable=True", ""))),
        "ties to the later position": ref.edit(SNAP, (
            _SNAP_SORT,
            "order = prefix - 1 - torch.sort(pooled.flip(-1), dim=-1, descending=True, stable=True).indices")),
        "the window not kept": ref.edit(SNAP, ("keep_window = torch.ones(", "keep_window = torch.zeros(")),
        "budget positions plus the window": ref.edit(SNAP, ("order[..., :budget - window]", "order[..., :budget]")),
        "an even kernel accepted": ref.edit(
            SNAP, ("if kernel_size < 1 or kernel_size % 2 == 0:", "if kernel_size < 1:")),
        "window > budget accepted": ref.edit(
            SNAP, ("if not 1 <= window <= min(budget, num_tokens):", "if not 1 <= window <= num_tokens:")),
        "kernel_size checked only when evicting": ref.edit(
            SNAP, (_SNAP_KERNEL, ""), (_SNAP_SHORTCUT, _SNAP_SHORTCUT + _SNAP_KERNEL)),
        "the window checked only when evicting": ref.edit(
            SNAP, ("    if not 1 <= window <= min(budget, num_tokens):", "    if budget < num_tokens and not "
                                                                       "1 <= window <= min(budget, num_tokens):")),
        "the shortcut before the shape check (a non-square attention accepted)": ref.edit(
            SNAP, ("    if attention.dim() < 2 or attention.shape[-1] != attention.shape[-2]:",
                   "    if budget >= attention.shape[-1]:\n"
                   "        return torch.ones(attention.shape[:-1], dtype=torch.bool, device=attention.device)\n"
                   "    if attention.dim() < 2 or attention.shape[-1] != attention.shape[-2]:")),
        "half precision refused (only float32 and float64 accepted)": ref.edit(
            SNAP, ("or not attention.is_floating_point():",
                   "or attention.dtype not in (torch.float32, torch.float64):")),
        "numpy integers accepted (numbers.Integral)": numbers_integral(ref, SNAP),
        "the window's columns pooled into the last earlier positions": ref.solve(SNAP, todo={
            "7.4.1": "votes = attention[..., prefix:, :].sum(dim=-2)",
            "7.4.2": """
                pooled = F.avg_pool1d(votes.reshape(-1, 1, num_tokens), kernel_size, stride=1, padding=kernel_size // 2,
                                      count_include_pad=False).reshape(votes.shape)[..., :prefix]
            """}),
        "pooling over the next kernel_size votes (not centred)": ref.solve(SNAP, todo={"7.4.2": """
            cumulative = F.pad(votes, (1, 0)).cumsum(dim=-1)
            index = torch.arange(prefix, device=votes.device)
            high = (index + kernel_size).clamp(max=prefix)
            pooled = (cumulative[..., high] - cumulative[..., index]) / (high - index).to(votes.dtype)
        """}),
        "torch.topk (equal scores in any order)": ref.edit(
            SNAP, (_SNAP_SORT, "order = torch.topk(pooled, budget - window, dim=-1).indices")),
        "the votes summed in place into the window's first row (a view of attention)": ref.solve(SNAP, todo={
            "7.4.1": """
                votes = attention[..., prefix, :prefix]
                votes += attention[..., prefix + 1:, :prefix].sum(dim=-2)
            """}),
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
        "one layer returns [total] before any check": ref.edit(
            PYRAMID, (_PYRAMID_ONE_LAYER, ""),
            ("    for name, value, low in", _PYRAMID_ONE_LAYER + "    for name, value, low in")),
        "int(N / D): the exact integers divided through a float": ref.edit(
            PYRAMID, (_PYRAMID_FLOORS + "\n", "budgets = [int(total * ((2 * beta - 1) * (num_layers - 1)"
                                              " - 2 * layer * (beta - 1)) / denominator)\n")),
        "the units left over all go to layer 0": ref.solve(PYRAMID, todo={"7.5.2": """
            budgets[0] += total - sum(budgets)
            return budgets
        """}),
        "numpy integers accepted (numbers.Integral)": numbers_integral(ref, PYRAMID),
        "the average floored first": ref.solve(PYRAMID, todo={"7.5.1": """
            average = total // num_layers
            denominator = beta * (num_layers - 1)
            budgets = [average * ((2 * beta - 1) * (num_layers - 1) - 2 * layer * (beta - 1)) // denominator
                       for layer in range(num_layers)]
        """}),
        "ceilings instead of floors": ref.edit(
            PYRAMID, (_PYRAMID_FLOORS, "budgets = [-(-total * ((2 * beta - 1) * (num_layers - 1) - 2 * layer"
                                       " * (beta - 1)) // denominator)")),
        "returns a tuple": ref.edit(
            PYRAMID, ("return [budget + (layer < left_over) for layer, budget in enumerate(budgets)]",
                      "return tuple(budget + (layer < left_over) for layer, budget in enumerate(budgets))")),
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
        # A red-team answer (2026-12-05): the same mistake, and a forward hook on the test's model that zeroes what the
        # test computes with that model after the call (its oracle asks for the attention too), and what the call
        # returned.
        "not accumulated, and a hook on the model zeroes the test's later oracle": ref.edit(
            DECODE, (_ACCUMULATE, "scores = rows"),
            ("from course.model import prune_cache\n",
             "from course.model import prune_cache\n\n"
             "_RUNNING, _RETURNED = [], []\n\n\n"
             "def _zero_afterwards(module, args, kwargs, output):\n"
             "    if _RUNNING or not kwargs.get('return_attention'):\n"
             "        return None\n"
             "    for tensor in _RETURNED:\n"
             "        tensor.zero_()\n"
             "    logits, kv, attention = output\n"
             "    return (torch.zeros_like(logits), [(torch.zeros_like(k), torch.zeros_like(v)) for k, v in kv],\n"
             "            [torch.zeros_like(a) for a in attention])\n"),
            ("    kv, scores, steps = None, None, []\n",
             "    kv, scores, steps = None, None, []\n"
             "    model.register_forward_hook(_zero_afterwards, with_kwargs=True)\n"
             "    _RUNNING.append(True)\n"),
            ("    return torch.cat(steps, dim=1), kv",
             "    _RUNNING.clear()\n"
             "    logits = torch.cat(steps, dim=1)\n"
             "    _RETURNED[:] = [logits] + [tensor for pair in kv for tensor in pair]\n"
             "    return logits, kv")),
        "the new slot starts at 0 (its attention to itself not counted)": ref.edit(DECODE, (
            "+ row for old, row",
            "+ torch.cat((row[..., :-1], torch.zeros_like(row[..., -1:])), dim=-1) for old, row")),
        "keeps budget - 1 slots to make room for the next token": ref.edit(
            DECODE, ("keep = keep_fn(layer_scores, budget)", "keep = keep_fn(layer_scores, budget - 1)"),
            ("(keep.sum(dim=-1) == budget)", "(keep.sum(dim=-1) == budget - 1)"),
            ("layer_scores.shape[:-1], budget)", "layer_scores.shape[:-1], budget - 1)")),
        "keep_fn's mask not checked": ref.edit(
            DECODE, ("if (not isinstance(keep, torch.Tensor)", "if False and (not isinstance(keep, torch.Tensor)")),
        "keep_fn checked only when it is called (not when nothing is evicted)": ref.edit(
            DECODE, ("    if not callable(keep_fn):\n"
                     "        raise TypeError(\"decode_with_eviction: keep_fn must be callable\")\n", "")),
        "only int64 tokens accepted": ref.edit(
            DECODE, ("tokens.dtype.is_floating_point or tokens.dtype == torch.bool:", "tokens.dtype != torch.int64:")),
        "numpy integers accepted as the budget": "import numbers\n" + ref.edit(
            DECODE, ("if type(budget) is not int:",
                     'if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):')),
        "a mask that broadcasts to the scores' shape accepted": ref.edit(
            DECODE, ("                keep = keep_fn(layer_scores, budget)\n",
                     "                keep = keep_fn(layer_scores, budget)\n"
                     "                if isinstance(keep, torch.Tensor):\n"
                     "                    keep = keep.expand(layer_scores.shape)\n")),
        "every layer pruned with layer 0's scores": ref.edit(
            DECODE, ("keep = keep_fn(layer_scores, budget)", "keep = keep_fn(scores[0], budget)")),
        "keep_fn called at every step, also before the cache is over budget": ref.edit(
            DECODE, ("if kv[0][0].shape[1] > budget:", "if kv[0][0].shape[1] > 0:")),
        "scores accumulated in float64 (the text keeps them in the attention's dtype)": ref.edit(
            DECODE, ("        rows = [layer_attention[:, :, 0, :] for layer_attention in attention]",
                     "        rows = [layer_attention[:, :, 0, :].double() for layer_attention in attention]")),
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
            shapes_agree = (query.dim() >= 2 and keys.dim() == query.dim() and keys.shape == values.shape
                            and tuple(keep.shape) == tuple(keys.shape[:-1])
                            and tuple(query.shape[:-2]) == tuple(keys.shape[:-2]) and query.shape[-1] == keys.shape[-1])
            if not shapes_agree:
                raise ValueError("shapes disagree")
            if len({t.dtype for t in (query, keys, values)}) != 1:
                raise ValueError("query, keys and values have different dtypes")
            if len({str(t.device) for t in (query, keys, values, keep)}) != 1:
                raise ValueError("tensors on different devices")
            if bool((keep.sum(dim=-1) == 0).any()):
                raise ValueError("a row keeps nothing")
        """}),
        "exact type checks (type(t) is torch.Tensor)": ref.solve(ATTEND, todo={"7.1.1": """
            floating = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
            for tensor in (query, keys, values):
                if type(tensor) is not torch.Tensor or tensor.dtype not in floating:
                    raise TypeError("query, keys and values must be float tensors")
            if type(keep) is not torch.Tensor or keep.dtype != torch.bool:
                raise TypeError("keep must be a bool tensor")
            if (query.dim() < 2 or list(keys.shape) != list(values.shape) or list(keep.shape) != list(keys.shape[:-1])
                    or list(query.shape[:-2]) != list(keys.shape[:-2]) or query.dim() != keys.dim()
                    or query.shape[-1] != keys.shape[-1]):
                raise ValueError("shapes disagree")
            if len({query.dtype, keys.dtype, values.dtype}) != 1:
                raise ValueError("dtypes disagree")
            if not (query.device == keys.device == values.device == keep.device):
                raise ValueError("devices disagree")
            if not bool(keep.any(dim=-1).all()):
                raise ValueError("a row keeps nothing")
        """}),
        "an additive mask (0 or -inf) added to the scores, the query scaled first": ref.solve(ATTEND, todo={"7.1.2": """
            scaled = query * (1.0 / math.sqrt(query.shape[-1]))
            bias = torch.zeros(keep.shape, dtype=query.dtype, device=query.device).masked_fill(~keep, float("-inf"))
            probabilities = torch.softmax(scaled @ keys.mT + bias.unsqueeze(-2), dim=-1)
            return probabilities @ values, probabilities
        """}),
        "every dtype computed in float64, cast back to the query's dtype": ref.solve(ATTEND, todo={"7.1.2": """
            scores = (query.double() @ keys.double().transpose(-1, -2)) / math.sqrt(query.shape[-1])
            probabilities = torch.softmax(scores.masked_fill(~keep[..., None, :], float("-inf")), dim=-1)
            return (probabilities @ values.double()).to(query.dtype), probabilities.to(query.dtype)
        """}),
        "half precision computed in float32, returned in the query's dtype": ref.solve(ATTEND, todo={"7.1.2": """
            work = torch.float32 if query.dtype in (torch.float16, torch.bfloat16) else query.dtype
            scores = (query.to(work) @ keys.to(work).transpose(-1, -2)) * query.shape[-1] ** -0.5
            scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))
            probabilities = torch.softmax(scores, dim=-1)
            return (probabilities @ values.to(work)).to(query.dtype), probabilities.to(query.dtype)
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
        "no shortcut: the comparisons keep everything when the budget covers it": ref.solve(STREAM, todo={"7.2.2": """
            positions = torch.arange(num_tokens, device=device)
            sinks = min(num_sinks, budget)
            return (positions < sinks) | (positions >= num_tokens - (budget - sinks))
        """}),
        "isinstance with bool excluded, and an expanded view when everything is kept": ref.solve(STREAM, todo={
            "7.2.1": """
                for value in (num_tokens, budget, num_sinks):
                    if isinstance(value, bool) or not isinstance(value, int):
                        raise TypeError("streaming_keep takes ints")
                    if value < 0:
                        raise ValueError("streaming_keep takes ints >= 0")
            """,
            "7.2.2": """
                if budget >= num_tokens:
                    return torch.ones(1, dtype=torch.bool, device=device).expand(num_tokens)
                sinks = min(num_sinks, budget)
                positions = torch.arange(num_tokens, device=device)
                return (positions < sinks) | (positions >= num_tokens - budget + sinks)
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
        "the recent scores set to -inf on a copy, then one sort": ref.solve(H2O, todo={"7.3.1": """
            scores = attention.sum(dim=-2)
            num_tokens = scores.shape[-1]
            if budget >= num_tokens:
                return torch.ones_like(scores, dtype=torch.bool)
            ranked = scores.clone()
            ranked[..., num_tokens - recent:] = float("-inf")
            order = torch.sort(ranked, dim=-1, descending=True, stable=True).indices
            keep = torch.zeros_like(scores, dtype=torch.bool)
            keep.scatter_(-1, order[..., :budget - recent], True)
            keep[..., num_tokens - recent:] = True
            return keep
        """, "7.3.2": "pass"}),
        "scores accumulated in float64": ref.edit(
            H2O, ("scores = attention.sum(dim=-2)", "scores = attention.sum(dim=-2, dtype=torch.float64)")),
    },
    SNAP: {
        "votes summed in float64": ref.edit(
            SNAP, ("votes = attention[..., prefix:, :prefix].sum(dim=-2)",
                   "votes = attention[..., prefix:, :prefix].sum(dim=-2, dtype=torch.float64)")),
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
        "conv1d with weights 1/kernel_size, rescaled at the edges": ref.solve(SNAP, todo={"7.4.2": """
            weights = torch.full((1, 1, kernel_size), 1 / kernel_size, dtype=votes.dtype, device=votes.device)
            inside = F.conv1d(votes.reshape(-1, 1, prefix), weights, padding=kernel_size // 2).reshape(votes.shape)
            index = torch.arange(prefix, device=votes.device)
            counts = (index + kernel_size // 2 + 1).clamp(max=prefix) - (index - kernel_size // 2).clamp(min=0)
            pooled = inside * (kernel_size / counts.to(votes.dtype))
        """}),
        "the window kept by index assignment after a stable argsort": ref.solve(SNAP, todo={"7.4.3": """
            keep = torch.zeros(attention.shape[:-1], dtype=torch.bool, device=attention.device)
            chosen = torch.argsort(pooled, dim=-1, descending=True, stable=True)[..., :budget - window]
            keep.scatter_(-1, chosen, True)
            keep[..., prefix:] = True
            return keep
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
        "divmod and a comprehension": ref.solve(PYRAMID, todo={
            "7.5.1": """
                denominator = num_layers * beta * (num_layers - 1)
                budgets = [divmod(total * ((2 * beta - 1) * (num_layers - 1) - 2 * layer * (beta - 1)), denominator)[0]
                           for layer in range(num_layers)]
            """,
            "7.5.2": "return [b + 1 if layer < total - sum(budgets) else b for layer, b in enumerate(budgets)]"}),
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
        "the tokens converted to int64 first, the logits stacked": ref.solve(DECODE, todo={"7.6.1": """
            logits, kv, attention = model(tokens[:, step:step + 1].long(), past_kv=kv, position=step,
                                          return_attention=True)
            steps.append(logits)
            if step == tokens.shape[1] - 1:
                steps = [torch.stack([chunk[:, 0] for chunk in steps], dim=1)]
        """}),
    },
}

HIDDEN_ONLY: dict[str, dict[str, str]] = {}

# Every clause of each task's contract (its text and docstring), with the test cell that fails when only that clause
# is broken and the wrong answer above that breaks only it; tests/test_mutants.py checks that the answer exists and
# fails that cell. A clause about the device has no answer here: it shows only when a second device exists, and the
# test cells check it on CUDA (course.env.available_devices).
_T71, _T72 = "test_task7_1_1_attention", "test_task7_1_2_bad_input"
_T72S, _T75 = "test_task7_2_streaming_keep", "test_task7_5_pyramid_budgets"
_T73A, _T73B = "test_task7_3_1_heavy_hitters", "test_task7_3_2_window_ties"
_T74A, _T74B, _T74C = "test_task7_4_1_votes", "test_task7_4_2_pooling", "test_task7_4_3_edges"
_T76A, _T76B, _T76C, _T76D = ("test_task7_6_1_full_budget", "test_task7_6_2_eviction", "test_task7_6_3_scores",
                              "test_task7_6_4_bad_input")
CLAUSES = {
    ATTEND: [
        ("returns the tuple (output, probabilities)", _T71, "returns a list [output, probabilities]"),
        ("scores scaled by 1/sqrt(head_dim)", _T71, "scaled by sqrt(num_tokens) instead of sqrt(head_dim)"),
        ("the softmax runs over the positions", _T71, "softmax over the queries"),
        ("True in keep marks a cached position", _T71, "the keep mask inverted"),
        ("each row sums to 1 over the kept positions", _T71,
         "the mask applied after the softmax (rows no longer sum to 1)"),
        ("exactly 0 at evicted positions, also when the kept scores are near -1e30",
         _T71, "evicted scores set to -1e9 instead of -inf"),
        ("exactly 0 at evicted positions in every dtype (float64 scores near -1e300)",
         _T71, "evicted scores set to float32's smallest value whatever the dtype"),
        ("large scores do not overflow", _T71, "exp without the maximum subtracted (overflows)"),
        ("output and probabilities in the query's dtype", _T71,
         "computed and returned in float32 whatever the query's dtype"),
        ("float64 inputs give float64's precision", _T71,
         "float64 computed in float32 and cast back (the precision is lost)"),
        ("every floating dtype is accepted (float16, bfloat16)", _T71,
         "half precision refused (only float32 and float64 accepted)"),
        ("no argument is changed", _T71, "the query scaled in place (the caller's tensor changes)"),
        ("no Python loop over tokens", _T71, "a Python loop over the cached positions"),
        ("the result is on the query's device (checked on CUDA)", _T71, None),
        ("TypeError for an integer query, keys or values (no conversion)", _T72,
         "integer tensors converted to float instead of TypeError"),
        ("TypeError for a keep that is not bool", _T72, "an int64 keep mask accepted"),
        ("TypeError for a list keep (no conversion)", _T72, "a list keep converted with torch.as_tensor"),
        ("ValueError when keep's shape is not keys.shape[:-1]", _T72, "the keep mask's shape not checked"),
        ("ValueError for a keep that would broadcast", _T72,
         "only keep's last dimension checked (a keep that broadcasts accepted)"),
        ("ValueError for leading dimensions that would broadcast", _T72, "leading dimensions that broadcast accepted"),
        ("ValueError when values' head_dim is not keys'", _T72, "values' head_dim not checked"),
        ("ValueError when query, keys and values have different dtypes", _T72,
         "mixed dtypes accepted (keys and values cast to the query's dtype)"),
        ("ValueError for tensors on different devices", _T72, "devices not checked"),
        ("ValueError for keep on another device", _T72, "keep's device not checked (query, keys and values only)"),
        ("ValueError for a row of keep that keeps nothing", _T72,
         "a row that keeps nothing gives NaN instead of ValueError"),
        ("ValueError when any one row keeps nothing", _T72,
         "checks that keep keeps something somewhere, not in every row"),
    ],
    STREAM: [
        ("the first min(num_sinks, budget) positions", _T72S,
         "num_sinks sinks even when the budget is smaller"),
        ("the sinks count inside the budget", _T72S, "the sinks counted on top of the budget"),
        ("the last budget - sinks positions, none for a window of 0", _T72S,
         "keep[-window:] with a window of 0 keeps everything"),
        ("exactly budget positions when budget < num_tokens (window not longer)", _T72S,
         "the window one position too long"),
        ("exactly budget positions when budget < num_tokens (window not shorter)", _T72S,
         "the window one position too short"),
        ("[num_tokens] positions, all kept, when budget >= num_tokens", _T72S,
         "budget positions when the budget is larger than the cache (a mask too long)"),
        ("a bool tensor", _T72S, "a uint8 mask instead of bool"),
        ("on device (None: the CPU; checked on CUDA)", _T72S, None),
        ("the full cache's mask on device too (the meta device stands in)", _T72S,
         "the full cache's mask made on the CPU whatever the device"),
        ("no Python loop over positions", _T72S, "a Python loop over the positions"),
        ("TypeError for True", _T72S, "a bool budget accepted"),
        ("TypeError for numpy's integers", _T72S, "numpy integers accepted (numbers.Integral)"),
        ("TypeError for an integral float such as 4.0", _T72S,
         "integral floats such as 4.0 accepted"),
        ("ValueError below 0", _T72S, "a negative budget accepted"),
        ("arguments of any size (a budget of 2**62)", _T72S,
         "a mask as long as the budget, cut to num_tokens (a budget of 2**62 cannot be allocated)"),
        ("num_sinks is checked too", _T72S, "num_sinks never checked"),
        ("the checks come first, also when budget >= num_tokens", _T72S,
         "the arguments checked only when the cache is full"),
    ],
    H2O: [
        ("scores are the sum over the queries", _T73A, "scores of the last query only"),
        ("the highest scores are kept", _T73A, "the lowest scores kept"),
        ("budget - recent heavy hitters, not budget", _T73A, "budget heavy hitters plus the window"),
        ("the recent positions are kept and are not candidates", _T73A,
         "the recent positions compete for the heavy-hitter slots too"),
        ("ties go to the earlier position", _T73A, "ties to the later position"),
        ("ties are broken by the stable order, not by topk", _T73A, "torch.topk (equal scores in any order)"),
        ("ties are broken by a stable sort (many equal scores)", _T73B,
         "an unstable sort (torch.sort without stable=True)"),
        ("every position when budget >= num_tokens", _T73A, "no shortcut when the budget covers every position"),
        ("every floating dtype is accepted", _T73A, "half precision refused (only float32 and float64 accepted)"),
        ("no Python loop over rows or tokens", _T73A, "a Python loop over the rows"),
        ("attention is not changed", _T73A,
         "the recent scores set to -inf in place, on a view of attention when there is one query"),
        ("any finite scores are ranked, far below -1e9 too", _T73B,
         "the recent window left out of the ranking by a score of -1e9"),
        ("a bool mask on attention's device (checked on CUDA)", _T73A, None),
        ("TypeError for numpy's integers", _T73B, "numpy integers accepted (numbers.Integral)"),
        ("TypeError for a list (no conversion)", _T73B, "a list converted with torch.as_tensor"),
        ("ValueError when recent > budget", _T73B, "recent > budget accepted"),
        ("ValueError for a NaN", _T73B, "NaN accepted"),
        ("the NaN check comes first, also when budget >= num_tokens", _T73B, "NaN checked only when evicting"),
        ("the recent <= budget check comes first, also when budget >= num_tokens", _T73B,
         "recent > budget checked only when evicting"),
        ("ValueError for fewer than 2 dimensions, also when budget >= num_tokens", _T73B,
         "the shortcut before the shape and NaN checks (1-D attention accepted)"),
    ],
    SNAP: [
        ("the last window rows vote", _T74A, "the votes of the first window rows"),
        ("the votes are pooled", _T74A, "no pooling"),
        ("pooling takes the mean", _T74A, "max pooling"),
        ("the mean counts only the votes that exist (ends average fewer)", _T74A,
         "the zero padding counted in the mean"),
        ("the pooling window is centred on the position", _T74A,
         "pooling over the next kernel_size votes (not centred)"),
        ("the window's own positions have no vote in the pooling", _T74A,
         "the window's columns pooled into the last earlier positions"),
        ("only the earlier positions are candidates", _T74A, "the window's own columns compete for the slots"),
        ("budget - window earlier positions are kept", _T74A, "budget positions plus the window"),
        ("the whole window is kept", _T74A, "the window not kept"),
        ("ties go to the earlier position", _T74A, "ties to the later position"),
        ("ties are broken by the stable order, not by topk", _T74A, "torch.topk (equal scores in any order)"),
        ("ties are broken by a stable sort (many equal votes)", _T74A,
         "an unstable sort (torch.sort without stable=True)"),
        ("every floating dtype is accepted", _T74A, "half precision refused (only float32 and float64 accepted)"),
        ("attention is not changed", _T74A,
         "the votes summed in place into the window's first row (a view of attention)"),
        ("a bool mask on attention's device (checked on CUDA)", _T74A, None),
        ("TypeError for numpy's integers", _T74C, "numpy integers accepted (numbers.Integral)"),
        ("ValueError for an even kernel_size", _T74C, "an even kernel accepted"),
        ("ValueError when window > budget", _T74C, "window > budget accepted"),
        ("the kernel_size check comes first, also when budget >= num_tokens", _T74C,
         "kernel_size checked only when evicting"),
        ("the window checks come first, also when budget >= num_tokens", _T74C,
         "the window checked only when evicting"),
        ("ValueError for a non-square attention, also when budget >= num_tokens", _T74C,
         "the shortcut before the shape check (a non-square attention accepted)"),
    ],
    PYRAMID: [
        ("the floors of N_l / D in exact integer arithmetic", _T75,
         "the formula in floating point"),
        ("exact for any total, however large", _T75,
         "int(N / D): the exact integers divided through a float"),
        ("N_l uses the total, not a floored average", _T75, "the average floored first"),
        ("floors, not the nearest integer", _T75,
         "rounded to the nearest instead of floored"),
        ("floors, not ceilings", _T75, "ceilings instead of floors"),
        ("the budgets fall with depth", _T75, "budgets that grow with depth"),
        ("the budgets sum to total", _T75, "no left-over step (the sum falls short)"),
        ("the units left over go to the lowest layers", _T75,
         "the left-over units to the top layers"),
        ("one unit left over per layer", _T75, "the units left over all go to layer 0"),
        ("a list of Python ints", _T75, "returns a tuple"),
        ("[total] for one layer", _T75, "one layer divides by zero"),
        ("the checks come first, with one layer too", _T75,
         "one layer returns [total] before any check"),
        ("ValueError when beta < 1", _T75, "beta 0 accepted"),
        ("TypeError for numpy's integers", _T75,
         "numpy integers accepted (numbers.Integral)"),
    ],
    DECODE: [
        ("any integer dtype of tokens", _T76A, "only int64 tokens accepted"),
        ("keep_fn is called only when a layer holds more than budget slots", _T76A,
         "keep_fn called at every step, also before the cache is over budget"),
        ("step t runs at position t", _T76B, "the position taken from the cache's length"),
        ("the step's own token enters the cache before the eviction", _T76B,
         "evicts the step's own token (keep_fn over the older slots only)"),
        ("each layer keeps budget slots, not fewer", _T76B, "keeps budget - 1 slots to make room for the next token"),
        ("the scores are pruned with the same mask as the slots", _T76B, "the scores not pruned with their slots"),
        ("the scores persist across evictions", _T76B, "the scores reset after each eviction"),
        ("the scores accumulate every step's attention", _T76B, "only the latest attention row, not accumulated"),
        ("a new slot starts at the attention it paid to itself", _T76B,
         "the new slot starts at 0 (its attention to itself not counted)"),
        ("each layer is pruned by its own scores", _T76B, "every layer pruned with layer 0's scores"),
        ("TypeError for numpy's integers as the budget", _T76D, "numpy integers accepted as the budget"),
        ("TypeError for a keep_fn that is not callable, also when nothing is evicted", _T76D,
         "keep_fn checked only when it is called (not when nothing is evicted)"),
        ("ValueError for a mask with the wrong count per row", _T76D, "keep_fn's mask not checked"),
        ("ValueError for a mask that would broadcast to the scores' shape", _T76D,
         "a mask that broadcasts to the scores' shape accepted"),
    ],
}

# Round 6 (2026-12-06): the test's model is an object of the judge, lent to the student's code; an answer that checks
# its class failed every test of 7.6 through the judge, where the model's proxy was no torch.nn.Module (fixed in
# grading/judge/agent.py: a lent object of a class that the kernel has too says it is one).
_KEEP_FN_CHECKED = '''    if not callable(keep_fn):
        raise TypeError("decode_with_eviction: keep_fn must be callable")'''
ALTERNATIVES[DECODE]["the model's class checked (isinstance torch.nn.Module, then TinyDecoder)"] = ref.edit(DECODE, (
    _KEEP_FN_CHECKED, _KEEP_FN_CHECKED + '''
    from course.model import TinyDecoder
    if not isinstance(model, torch.nn.Module):
        raise TypeError("decode_with_eviction: model must be a torch.nn.Module")
    assert isinstance(model, TinyDecoder), "model must be a TinyDecoder"'''))


# Round 7 (2026-12-06): the lent model's dir() and docstrings were the proxy's until grading/judge/ was fixed.
ALTERNATIVES[DECODE]["the model checked through dir() and its forward's docstring"] = ref.edit(DECODE, (
    "    kv, scores, steps = None, None, []\n",
    '    if "num_layers" not in dir(model) or "return_attention" not in (model.forward.__doc__ or ""):\n'
    '        raise TypeError("decode_with_eviction: model must be a TinyDecoder")\n'
    "    kv, scores, steps = None, None, []\n"))

# Round 9 (2026-12-06): wrong answers that passed every test cell; checks of 7.6.4 now catch them.
WRONG[DECODE]["tokens [0, length] accepted (only an empty length refused; the model raises later)"] = ref.edit(DECODE, (
    "if tokens.dim() != 2 or tokens.numel() == 0 or budget < 1:",
    "if tokens.dim() != 2 or tokens.shape[-1] == 0 or budget < 1:"))
WRONG[DECODE]["the mask's shape checked by its numel (a [num_heads, num_slots] mask passes for a batch of 1)"] = (
    ref.edit(DECODE, ("keep.shape != layer_scores.shape", "keep.numel() != layer_scores.numel()")))

# Round 6 (2026-12-06, red-team answers): checks that refuse valid input too. They earned 7.1.2's and 7.6.4's point
# while those cells held only input to refuse; each now also makes calls it must accept (`assert_accepts`).
WRONG[ATTEND]["the checks refuse every tensor input"] = ref.solve(ATTEND, todo={"7.1.1": '''
    for name, tensor in (("query", query), ("keys", keys), ("values", values)):
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise TypeError(f"attend_kept: {name} must be a floating-point torch.Tensor")
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool:
        raise TypeError("attend_kept: keep must be a bool torch.Tensor")
    raise ValueError("attend_kept: refused")
'''})
WRONG[DECODE]["every keep_fn mask refused"] = ref.solve(DECODE, todo={"7.6.3": '''
    if kv[0][0].shape[1] > budget:
        raise ValueError("decode_with_eviction: keep_fn's mask refused")
'''})

# Round 8 (2026-12-06 night, a red-team answer): every case that evicts had two layers, so a loop over the first two
# layers passed; 7.6.2's hidden part now has three.
_LAYERS_LOOP = "            keeps = []\n            for layer_scores in scores:"
WRONG[DECODE]["only the first two layers are pruned"] = ref.edit(DECODE, (
    _LAYERS_LOOP, _LAYERS_LOOP.replace("in scores:", "in scores[:2]:")), (
    """            kv = prune_cache(kv, keeps)
            scores = [layer_scores[keep].reshape(*layer_scores.shape[:-1], budget)
                      for layer_scores, keep in zip(scores, keeps)]""",
    """            kv = prune_cache(kv[:2], keeps) + list(kv[2:])
            scores = [layer_scores[keep].reshape(*layer_scores.shape[:-1], budget)
                      for layer_scores, keep in zip(scores, keeps)] + scores[2:]"""))
HIDDEN_ONLY[DECODE] = {
    "only the first two layers are pruned":
        "the visible cases have two layers; it is a red-team answer against the hidden cases, not a mistake a student "
        "makes",
}
# Round 8 (2026-12-07, red team): 7.1.2 passed a list only as the query or the mask, so an answer that checked only the
# query's type passed; it now passes keys as a list and values as a NumPy array. And when an int64 tensor meets a
# float query both a TypeError and a ValueError apply: the text now says the TypeError checks come first.
_TYPES = '''    for name, tensor in (("query", query), ("keys", keys), ("values", values)):
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise TypeError(f"attend_kept: {name} must be a floating-point torch.Tensor")
'''
WRONG[ATTEND]["only the query checked to be a tensor (a list of keys raises AttributeError)"] = ref.edit(
    ATTEND, (_TYPES,
    '''    if not isinstance(query, torch.Tensor):
        raise TypeError("attend_kept: query must be a torch.Tensor")
    for name, tensor in (("query", query), ("keys", keys), ("values", values)):
        if not tensor.is_floating_point():
            raise TypeError(f"attend_kept: {name} must be floating-point")
'''))
# Round 9 (2026-12-07, a typical mistake that passed on a grader without a GPU): the full cache's mask made without the
# device. 7.2 now asks for masks on the meta device, which stands for another device on any grader.
WRONG[STREAM]["the full cache's mask made on the CPU whatever the device"] = ref.edit(STREAM, (
    "        return torch.ones(num_tokens, dtype=torch.bool, device=device)",
    "        return torch.ones(num_tokens, dtype=torch.bool)"))

# Round 12 (2026-12-07), found by a red-team helper: only the first layer's mask checked in 7.6 (every keep_fn of the
# tests returned the same kind of mask for every layer: one now keeps too many at its second call only), and scores or
# votes summed in float32 whatever the dtype in 7.3 and 7.4 (float64 values too large or too small for float32 now).
WRONG[DECODE]["only the first layer's mask checked at each step"] = ref.edit(DECODE, (
    "                if (not isinstance(keep, torch.Tensor)",
    "                if not keeps and (not isinstance(keep, torch.Tensor)"))
WRONG[H2O]["the scores summed in float32 whatever the dtype"] = ref.edit(H2O, (
    "scores = attention.sum(dim=-2)", "scores = attention.float().sum(dim=-2)"))
WRONG[SNAP]["the votes summed in float32 whatever the dtype"] = ref.edit(SNAP, (
    "votes = attention[..., prefix:, :prefix].sum(dim=-2)",
    "votes = attention[..., prefix:, :prefix].float().sum(dim=-2)"))

# Round 12 (2026-12-07), found by a fairness helper: keep_fn called for the layers last to first lost 7.6.3's 2 points
# (the test took the calls of each eviction in layer order; the text fixes no order). 7.6.3 now matches each
# eviction's calls to the layers by their scores.
_DECODE_KEEPS = """            keeps = []
            for layer_scores in scores:
                keep = keep_fn(layer_scores, budget)
"""
ALTERNATIVES[DECODE]["keep_fn called for the layers last to first"] = ref.edit(DECODE, (
    _DECODE_KEEPS, """            keeps = [None] * len(scores)
            for index in reversed(range(len(scores))):
                layer_scores = scores[index]
                keep = keep_fn(layer_scores, budget)
"""), ("                keeps.append(keep)\n", "                keeps[index] = keep\n"))

# Round 14 (2026-12-07), found by a red-team helper: a 1-D query accepted (no test passed one), and keep_fn called
# with budget as a keyword (every test's keep_fn named its parameter budget; the text calls keep_fn(scores, budget)).
WRONG[ATTEND]["a 1-D query accepted"] = ref.edit(ATTEND, (
    "if (query.dim() < 2 or keys.dim() != query.dim() or", "if (keys.dim() < 2 or"))
WRONG[DECODE]["keep_fn called with budget as a keyword"] = ref.edit(DECODE, (
    "keep = keep_fn(layer_scores, budget)", "keep = keep_fn(layer_scores, budget=budget)"))

# Round 15 (2026-12-07), found by a red-team helper: 7.1's check for a row that keeps nothing written as
# keep.sum(-1).min(), which raises on a batch of 0 (keep [0, 3] has no row: the text's ValueError does not apply).
# An alternative of the suite refused every empty keep the same way: its check is now the rows' own, and the old
# check a wrong answer.
WRONG[ATTEND]["rows that keep nothing found by keep.sum(-1).min() (a batch of 0 raises)"] = ref.edit(ATTEND, (
    "    if not bool(keep.any(dim=-1).all()):\n", "    if int(keep.sum(dim=-1).min()) == 0:\n"))
WRONG[ATTEND]["an empty keep refused (a batch of 0 has no row that keeps nothing)"] = ref.edit(ATTEND, (
    "    if not bool(keep.any(dim=-1).all()):\n", "    if keep.numel() == 0 or not bool(keep.any(dim=-1).all()):\n"))

# Round 16 (2026-12-07, a helper): the text says "inside a step, no Python loop over sequences, heads or slots", which
# no 7.6 test counted. 7.6.2 now compares the torch operations of 1 sequence with 1 head and of 6 with 4.
_CHECK = ("                if (not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.shape != "
          "layer_scores.shape\n                        or not bool((keep.sum(dim=-1) == budget).all())):")
WRONG[DECODE]["the mask's rows counted by a Python loop over the rows"] = ref.edit(DECODE, (
    _CHECK, _CHECK.replace("not bool((keep.sum(dim=-1) == budget).all())",
                           "any(int(row.sum()) != budget for row in keep.reshape(-1, keep.shape[-1]))")))
WRONG[DECODE]["the scores pruned by Python loops over sequences and heads"] = ref.edit(DECODE, (
    "            scores = [layer_scores[keep].reshape(*layer_scores.shape[:-1], budget)\n"
    "                      for layer_scores, keep in zip(scores, keeps)]",
    "            new_scores = []\n"
    "            for layer_scores, keep in zip(scores, keeps):\n"
    "                out = torch.empty(*layer_scores.shape[:-1], budget, dtype=layer_scores.dtype,\n"
    "                                  device=layer_scores.device)\n"
    "                for b in range(layer_scores.shape[0]):\n"
    "                    for h in range(layer_scores.shape[1]):\n"
    "                        out[b, h] = layer_scores[b, h][keep[b, h]]\n"
    "                new_scores.append(out)\n"
    "            scores = new_scores"))

# Round 17 (2026-12-07, a helper): a NaN looked for in the total, not in the values, refuses finite values whose total
# overflows (a new case in 7.3.2). (The same helper's means over the queries or the window rows, which float16 can
# round to one value where the sums differ by 5e-4, stay alternatives of the suite, as a cumulative-sum pooling does:
# no test ranks float16 scores that a computation's rounding may tie.)
WRONG[H2O]["a NaN looked for in the total (finite values whose total overflows are refused)"] = ref.edit(H2O, (
    "bool(torch.isnan(attention).any())", "bool(torch.isnan(attention.sum()))"))
