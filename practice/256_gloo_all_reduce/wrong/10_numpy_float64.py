# Mistake: Builds the tensor with numpy (float64 by default) instead of fp32.
from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist


def run_rank(rank: int, world_size: int, init_method: str, inputs: list[list[float]], results) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    try:
        mine = torch.from_numpy(np.array(inputs[rank]))
        summed = mine.clone()
        dist.all_reduce(summed)                          # in place, SUM by default
        gathered = [torch.empty_like(mine) for _ in range(world_size)]
        dist.all_gather(gathered, mine)                  # rank order
        results.put((rank, summed.tolist(), [g.tolist() for g in gathered]))
    finally:
        dist.destroy_process_group()
