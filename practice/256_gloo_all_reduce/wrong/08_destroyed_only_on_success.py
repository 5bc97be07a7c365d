# Mistake: Destroys the process group at the end of the happy path only, so after an error the process cannot start another group.
from __future__ import annotations

import torch
import torch.distributed as dist


def run_rank(rank: int, world_size: int, init_method: str, inputs: list[list[float]], results) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    mine = torch.tensor(inputs[rank], dtype=torch.float32)
    summed = mine.clone()
    dist.all_reduce(summed)                          # in place, SUM by default
    gathered = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(gathered, mine)                  # rank order
    results.put((rank, summed.tolist(), [g.tolist() for g in gathered]))
    dist.destroy_process_group()
