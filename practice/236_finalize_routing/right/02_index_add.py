# Correct: scatters every pair's weighted row into its token with index_add_ (token = pair's position decoded per mode), dropped pairs filtered out first; the dropped pair's bias is left out.
from __future__ import annotations

import torch


def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1: torch.Tensor | None,
                             skip2: torch.Tensor | None, bias: torch.Tensor | None, scales: torch.Tensor | None,
                             expanded_src_to_dst_row: torch.Tensor, export_for_source_row: torch.Tensor | None,
                             drop_pad_mode: int = 0, k: int = 1) -> torch.Tensor:
    if skip1 is None and skip2 is not None:
        raise ValueError("skip2 given without skip1")
    if drop_pad_mode not in range(4):
        raise ValueError(f"drop_pad_mode={drop_pad_mode} not in 0..3")
    if bias is not None and export_for_source_row is None:
        raise ValueError("bias requires export_for_source_row")
    kk = k if scales is None else int(scales.shape[1])
    if expanded_src_to_dst_row.numel() % kk:
        raise ValueError("expanded_src_to_dst_row length must be a multiple of K")
    n = expanded_src_to_dst_row.numel() // kk
    pos = torch.arange(n * kk)
    token, choice = (pos % n, pos // n) if drop_pad_mode in (0, 1) else (pos // kk, pos % kk)
    dst = expanded_src_to_dst_row.long()
    keep = dst >= 0
    token, choice, dst = token[keep], choice[keep], dst[keep]
    terms = expanded_permuted_rows.float().index_select(0, dst)
    if bias is not None:
        terms = terms + bias.float()[export_for_source_row.long()[token, choice]]
    if scales is not None:
        terms = terms * scales.float()[token, choice].unsqueeze(1)
    out = torch.zeros(n, expanded_permuted_rows.shape[-1], dtype=torch.float32)
    out.index_add_(0, token, terms)
    for skip in (s for s in (skip1, skip2) if s is not None):
        out += skip.float()
    return out.to(expanded_permuted_rows.dtype)
