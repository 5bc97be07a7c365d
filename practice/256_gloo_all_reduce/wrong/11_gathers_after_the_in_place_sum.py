# Mistake: All-reduces its own tensor in place and then all-gathers it, so every gathered tensor is already the sum.
from __future__ import annotations

import torch
import torch.distributed as dist


def run_rank(rank: int, world_size: int, init_method: str, inputs: list[list[float]], results) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    try:
        mine = torch.tensor(inputs[rank], dtype=torch.float32)
        dist.all_reduce(mine)                            # in place, SUM by default
        summed = mine
        gathered = [torch.empty_like(mine) for _ in range(world_size)]
        dist.all_gather(gathered, mine)                  # rank order
        results.put((rank, summed.tolist(), [g.tolist() for g in gathered]))
    finally:
        dist.destroy_process_group()
