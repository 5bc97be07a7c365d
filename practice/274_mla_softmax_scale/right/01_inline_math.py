# Correct: inlines the correction as (0.1 * a * ln f + 1) ** 2 with an early return for the plain case, and reads the two head widths with dict unpacking.
from __future__ import annotations

import math
from typing import Any


def mla_qk_head_dim(config: dict) -> int:
    nope, rope = config["qk_nope_head_dim"], config["qk_rope_head_dim"]
    return nope + rope


def mla_softmax_scale(qk_head_dim: int, rope_scaling: dict[str, Any] | None) -> float:
    if type(qk_head_dim) is not int or qk_head_dim <= 0:
        raise ValueError(f"bad qk_head_dim {qk_head_dim!r}")
    plain = 1.0 / math.sqrt(qk_head_dim)
    if not rope_scaling or rope_scaling.get("rope_type", "default") == "default":
        return plain
    all_dim = rope_scaling.get("mscale_all_dim") or 0
    factor = rope_scaling.get("factor", 1)
    if all_dim == 0 or factor <= 1:
        return plain
    return plain * (0.1 * all_dim * math.log(factor) + 1.0) ** 2
