# Mistake: Returns empty results for N = 0 before checking the range, so a bad active_expert_range passes without tokens.
from __future__ import annotations

from typing import Sequence

import torch


def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor,
                         active_num: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    for name, t in (("row_idx", row_idx), ("expert_idx", expert_idx)):
        if t.dtype != torch.int32:
            raise TypeError(f"{name} must be int32, got {t.dtype}")
    if x.dim() != 2 or expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0] or row_idx.shape != expert_idx.shape:
        raise ValueError(f"x must be [N, H] and row_idx, expert_idx [N, K]; got {tuple(x.shape)}, "
                         f"{tuple(row_idx.shape)}, {tuple(expert_idx.shape)}")
    n, k = expert_idx.shape
    experts = expert_idx.reshape(-1)
    order = torch.argsort(experts, stable=True)                  # sorted row d holds pair order[d] (t*K + j)
    src = row_idx.reshape(-1)[order].long()                      # ... whose row_idx number is src[d]
    expanded_row_idx = torch.empty(n * k, dtype=torch.int32, device=x.device)
    expanded_row_idx[src] = torch.arange(n * k, dtype=torch.int32, device=x.device)
    expanded_x = x[src[:min(active_num, n) * k] % n]
    return expanded_x, expanded_row_idx, experts[order]


def npu_moe_init_routing_v2(x: torch.Tensor, expert_idx: torch.Tensor, *, scale: torch.Tensor | None = None,
                            offset: torch.Tensor | None = None, active_num: int = -1, expert_capacity: int = -1,
                            expert_num: int = -1, drop_pad_mode: int = 0, expert_tokens_num_type: int = 0,
                            expert_tokens_num_flag: bool = False, quant_mode: int = -1,
                            active_expert_range: Sequence[int] = (), row_idx_type: int = 0,
                            x_dtype: int | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    if expert_idx.dtype != torch.int32:
        raise TypeError(f"expert_idx must be int32, got {expert_idx.dtype}")
    if scale is not None or offset is not None or quant_mode != -1 or drop_pad_mode != 0 or row_idx_type != 0 \
            or expert_tokens_num_type not in (0, 1):
        raise NotImplementedError("only the dropless, unquantised call with a gather index and cumsum/count tokens")
    if x.dim() != 2 or expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0]:
        raise ValueError(f"x must be [N, H] and expert_idx [N, K], got {tuple(x.shape)} and {tuple(expert_idx.shape)}")
    start, end = list(active_expert_range) or [0, expert_num]
    if x.shape[0] == 0:
        counts = torch.zeros(max(end - start, 0), dtype=torch.int64)
        return (x.new_zeros(0, x.shape[1]), torch.zeros(0, dtype=torch.int32),
                counts if expert_tokens_num_flag else counts[:0], torch.zeros(0))
    if expert_num < 0 or not 0 <= start <= end <= expert_num:
        raise ValueError(f"need 0 <= start <= end <= expert_num, got range {list(active_expert_range)} "
                         f"and expert_num={expert_num}")
    n, k = expert_idx.shape
    experts = expert_idx.reshape(-1).long()
    if experts.numel() and (int(experts.min()) < 0 or int(experts.max()) >= expert_num):
        raise ValueError(f"expert ids must lie in [0, expert_num={expert_num})")
    device = x.device
    valid = (experts >= start) & (experts < end)
    pairs = torch.nonzero(valid).flatten()                         # t*K + j of the pairs in range, ascending
    pairs = pairs[torch.argsort(experts[pairs], stable=True)]     # by expert, then by pair
    expanded_row_idx = torch.full((n * k,), -1, dtype=torch.int32, device=device)
    expanded_row_idx[pairs] = torch.arange(pairs.numel(), dtype=torch.int32, device=device)
    counts = torch.bincount(experts[pairs] - start, minlength=end - start)
    tokens = torch.cumsum(counts, 0) if expert_tokens_num_type == 0 else counts
    if not expert_tokens_num_flag:
        tokens = torch.zeros(0, dtype=torch.int64, device=device)
    rows = n * k if active_num in (-1, 0) else min(active_num, n * k)
    filled = min(rows, pairs.numel())
    expanded_x = torch.zeros((rows, x.shape[1]), dtype=x.dtype, device=device)
    expanded_x[:filled] = x[pairs[:filled] // k]
    return expanded_x, expanded_row_idx, tokens.to(torch.int64), torch.zeros(n, dtype=torch.float32, device=device)
