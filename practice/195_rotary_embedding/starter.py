"""Exercise 195: rotary position embedding from a [max_pos, rot_dim] cos/sin cache.

Fill in the TODOs. Keep the names: the tests import them.
"""
from __future__ import annotations

import torch


def build_cos_sin_cache(max_pos: int, rot_dim: int, base: float) -> torch.Tensor:
    """[max_pos, rot_dim] fp32: cos(p * theta_i) for i < rot_dim/2, then sin(p * theta_i)."""
    # TODO
    raise NotImplementedError("build_cos_sin_cache")


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotated copies of query [T, nh*hd] and key [T, nkv*hd]; only the first rot_dim dims of each head rotate.

    Computed in fp32; each output has its own input's dtype (query and key may differ).
    """
    # TODO
    raise NotImplementedError("rotary_embedding")
