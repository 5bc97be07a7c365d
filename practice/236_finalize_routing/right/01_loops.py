# Correct: a plain double loop over tokens and choices with an explicit position formula per mode, validating in another order with other messages.
from __future__ import annotations

import torch


def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1: torch.Tensor | None,
                             skip2: torch.Tensor | None, bias: torch.Tensor | None, scales: torch.Tensor | None,
                             expanded_src_to_dst_row: torch.Tensor, export_for_source_row: torch.Tensor | None,
                             drop_pad_mode: int = 0, k: int = 1) -> torch.Tensor:
    if drop_pad_mode < 0 or drop_pad_mode > 3:
        raise ValueError("unsupported drop_pad_mode")
    if skip2 is not None and skip1 is None:
        raise ValueError("give skip1 before skip2")
    K = k if scales is None else scales.size(1)
    total = len(expanded_src_to_dst_row)
    if total % K != 0:
        raise ValueError("length is not N*K")
    if bias is not None and export_for_source_row is None:
        raise ValueError("bias without export_for_source_row")
    N = total // K
    rows = expanded_permuted_rows.float()
    dst = expanded_src_to_dst_row.tolist()
    out = torch.zeros(N, rows.shape[1], dtype=torch.float32)
    for i in range(N):
        for j in range(K):
            pos = j * N + i if drop_pad_mode <= 1 else i * K + j
            r = dst[pos]
            term = rows[r] if r >= 0 else torch.zeros(rows.shape[1])
            if bias is not None:
                term = term + bias[int(export_for_source_row[i, j])].float()
            w = 1.0 if scales is None else scales[i, j].float()
            out[i] += w * term
    if skip1 is not None:
        out += skip1.float()
    if skip2 is not None:
        out += skip2.float()
    return out.to(expanded_permuted_rows.dtype)
