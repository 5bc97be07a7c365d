# Correct: the RMS from torch.linalg.vector_norm (sqrt(sum x^2) / sqrt(H)) in fp32 with eps added to the mean square, the weight check written with tuple(); fused_add sums via torch.add with dtype handled by .to().
from __future__ import annotations

import math

import torch


def rms_norm(x, weight, eps):
    h = x.shape[-1]
    if tuple(weight.shape) != (h,):
        raise ValueError(f"expected weight of shape ({h},), not {tuple(weight.shape)}")
    xf = x.to(torch.float32)
    mean_sq = torch.linalg.vector_norm(xf, dim=-1, keepdim=True).square() / h
    y = xf / torch.sqrt(mean_sq + eps)
    return (y * weight.to(torch.float32)).to(dtype=x.dtype)


def fused_add_rms_norm(x, residual, weight, eps):
    if x.shape != residual.shape:
        raise ValueError("x and residual must have the same shape")
    new_residual = torch.add(x.to(torch.float32), residual.to(torch.float32)).to(x.dtype)
    return rms_norm(new_residual, weight, eps), new_residual
