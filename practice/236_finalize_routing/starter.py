"""Exercise 236: torch_npu.npu_moe_finalize_routing's semantics in plain torch. Keep the names."""
from __future__ import annotations

import torch


def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1: torch.Tensor | None,
                             skip2: torch.Tensor | None, bias: torch.Tensor | None, scales: torch.Tensor | None,
                             expanded_src_to_dst_row: torch.Tensor, export_for_source_row: torch.Tensor | None,
                             drop_pad_mode: int = 0, k: int = 1) -> torch.Tensor:
    """out[i] = skip1 + skip2 + sum_k scales[i,k] * (rows[src_to_dst[...]] + bias[expert[i,k]]); see problem.md."""
    # TODO: validate; K and N; the index of (i, k) for drop_pad_mode 0, 1 (k*N+i) and 2, 3 (i*K+k); -1 = dropped (a zero row)
    # TODO: gather rows [N, K, H] in fp32, add bias, weight, sum over K, add the skips, cast back
    raise NotImplementedError("npu_moe_finalize_routing")
