# Mistake: takes the query-key width from v_head_dim plus the rotary piece, as if the value width counted.
"""Exercise 274: the MLA softmax scale (qk_head_dim and YaRN's mscale)."""
from __future__ import annotations

import math
from typing import Any


def mla_qk_head_dim(config: dict) -> int:
    return config["v_head_dim"] + config["qk_rope_head_dim"]


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude correction 0.1 * mscale * ln(scale) + 1 (1 when scale <= 1)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def mla_softmax_scale(qk_head_dim: int, rope_scaling: dict[str, Any] | None) -> float:
    if not isinstance(qk_head_dim, int) or isinstance(qk_head_dim, bool) or qk_head_dim < 1:
        raise ValueError(f"qk_head_dim must be a positive integer, got {qk_head_dim!r}")
    scale = qk_head_dim ** -0.5
    scaling = rope_scaling or {}
    if scaling.get("rope_type", "default") != "default" and scaling.get("mscale_all_dim"):
        scale *= yarn_mscale(scaling["factor"], scaling["mscale_all_dim"]) ** 2
    return scale
