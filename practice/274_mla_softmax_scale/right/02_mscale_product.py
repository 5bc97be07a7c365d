# Correct: multiplies the two mscale factors one at a time (one for q, one for k), using math.log(factor, math.e).
from __future__ import annotations

import math
from typing import Any


def mla_qk_head_dim(config: dict) -> int:
    return sum(config[key] for key in ("qk_nope_head_dim", "qk_rope_head_dim"))


def _m(factor: float, all_dim: float) -> float:
    if factor <= 1:
        return 1.0
    return 1.0 + 0.1 * all_dim * math.log(factor, math.e)


def mla_softmax_scale(qk_head_dim: int, rope_scaling: dict[str, Any] | None) -> float:
    if isinstance(qk_head_dim, bool) or not isinstance(qk_head_dim, int) or not qk_head_dim > 0:
        raise ValueError("qk_head_dim: a positive int is required")
    scale = float(qk_head_dim) ** -0.5
    settings = {} if rope_scaling is None else rope_scaling
    kind = settings.get("rope_type", "default")
    all_dim = settings.get("mscale_all_dim")
    if kind != "default" and all_dim:
        m = _m(settings["factor"], all_dim)
        scale = scale * m   # the query's share
        scale = scale * m   # the key's share
    return scale
