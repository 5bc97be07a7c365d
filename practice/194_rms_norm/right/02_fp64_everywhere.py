# Correct: computes in fp64 (more precise than the fp32 the statement suggests), validates both shapes before any arithmetic in fused_add, and clones nothing because no operation is in place.
from __future__ import annotations

import torch


def _check_weight(x, weight):
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError("weight must be 1-D with x.shape[-1] elements, got shape %s" % (list(weight.shape),))


def rms_norm(x, weight, eps):
    _check_weight(x, weight)
    xd = x.double()
    inv = (xd * xd).mean(dim=-1, keepdim=True).add(eps).rsqrt()
    return (xd * inv * weight.double()).to(x.dtype)


def fused_add_rms_norm(x, residual, weight, eps):
    if residual.shape != x.shape:
        raise ValueError(f"residual {list(residual.shape)} vs x {list(x.shape)}")
    _check_weight(x, weight)
    s = (x.double() + residual.double()).to(x.dtype)
    return rms_norm(s, weight, eps), s
