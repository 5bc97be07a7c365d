"""Exercise 275: split kv_b_proj into each head's W_UK and W_UV. Keep the name and signature."""
from __future__ import annotations

import torch


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[nh * (dn + dv), L] (per head: dn rows of W_UK, then dv rows of W_UV) -> (w_uk [nh, dn, L], w_uv [nh, dv, L]),
    contiguous, in weight's dtype; ValueError for a weight of the wrong shape."""
    # TODO: check the shape
    # TODO: view per head, then split each head's rows into dn and dv
    raise NotImplementedError("split_kv_b_proj")
