"""Exercise 255: column- then row-parallel gated MLP on split weights. Keep the names."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def shard_gated_mlp(gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                    tp_rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(gate_up [2s, H]: this rank's gate rows then its up rows, down_shard [H, s]: its down columns)."""
    # TODO: validate; s = I // tp_size; slice rows of gate and up, columns of down
    raise NotImplementedError("shard_gated_mlp")


def rank_partial(x: torch.Tensor, gate_up: torch.Tensor, down_shard: torch.Tensor) -> torch.Tensor:
    """This rank's partial sum [T, H], computed and returned in fp32 whatever the input dtype (bf16, fp64)."""
    # TODO: g, u from x @ gate_up^T; silu(g) * u; times down_shard^T
    raise NotImplementedError("rank_partial")


def tensor_parallel_mlp(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                        down_bias: torch.Tensor | None = None) -> torch.Tensor:
    """Sum of every rank's partial (the all-reduce), the bias added once; fp32 (also for an fp64 bias)."""
    # TODO
    raise NotImplementedError("tensor_parallel_mlp")
