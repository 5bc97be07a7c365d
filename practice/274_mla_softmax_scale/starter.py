"""Exercise 274: the MLA softmax scale (qk_head_dim and YaRN's mscale). Keep the names and signatures."""
from __future__ import annotations

import math
from typing import Any


def mla_qk_head_dim(config: dict) -> int:
    """The width of MLA's query-key dot product: the no-rope piece plus the rotary piece."""
    # TODO: which two fields of config?
    raise NotImplementedError("mla_qk_head_dim")


def mla_softmax_scale(qk_head_dim: int, rope_scaling: dict[str, Any] | None) -> float:
    """qk_head_dim ** -0.5, times yarn_mscale(factor, mscale_all_dim) ** 2 for a non-default RoPE scaling with a
    non-zero mscale_all_dim; ValueError for a qk_head_dim that is not a positive integer."""
    # TODO: validate qk_head_dim (an int, not a bool, >= 1)
    # TODO: the plain scale; then the YaRN correction when rope_type is not "default" and mscale_all_dim is set
    # TODO: yarn_mscale(factor, m) = 0.1 * m * ln(factor) + 1, and 1 when factor <= 1
    raise NotImplementedError("mla_softmax_scale")
