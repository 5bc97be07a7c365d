# Mistake: Checks only drop_pad_mode > 3, so a negative mode is accepted (and read row-major).
from __future__ import annotations

import torch


def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1: torch.Tensor | None,
                             skip2: torch.Tensor | None, bias: torch.Tensor | None, scales: torch.Tensor | None,
                             expanded_src_to_dst_row: torch.Tensor, export_for_source_row: torch.Tensor | None,
                             drop_pad_mode: int = 0, k: int = 1) -> torch.Tensor:
    if skip1 is None and skip2 is not None:
        raise ValueError("skip2 needs skip1: pass the single skip tensor as skip1")
    if drop_pad_mode > 3:
        raise ValueError(f"drop_pad_mode must be 0, 1 (column-major) or 2, 3 (row-major), got {drop_pad_mode}")
    if bias is not None and export_for_source_row is None:
        raise ValueError("a bias needs export_for_source_row, the expert of each (token, choice)")
    top_k = scales.shape[1] if scales is not None else k
    if expanded_src_to_dst_row.numel() % top_k:
        raise ValueError(f"expanded_src_to_dst_row has {expanded_src_to_dst_row.numel()} entries, not a multiple of K={top_k}")
    n = expanded_src_to_dst_row.numel() // top_k
    index = expanded_src_to_dst_row.long()
    # [N, K] positions: column-major k*N+i, or row-major i*K+k
    index = index.view(top_k, n).T if drop_pad_mode in (0, 1) else index.view(n, top_k)
    picked = expanded_permuted_rows.float()[index.clamp(min=0)]           # [N, K, H]
    picked = torch.where((index >= 0)[..., None], picked, 0.0)            # -1: a dropped pair adds nothing
    if bias is not None:
        picked = picked + bias.float()[export_for_source_row.long()]
    weights = scales.float() if scales is not None else torch.ones(n, top_k)
    out = (picked * weights[..., None]).sum(dim=1)
    for skip in (skip1, skip2):
        if skip is not None:
            out = out + skip.float()
    return out.to(expanded_permuted_rows.dtype)
