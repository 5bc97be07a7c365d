# Mistake: Copies a fixed rendezvous port from a tutorial instead of using init_method, so two groups at once meet on the same port.
from __future__ import annotations

import torch
import torch.distributed as dist


def run_rank(rank: int, world_size: int, init_method: str, inputs: list[list[float]], results) -> None:
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29517", rank=rank, world_size=world_size)
    try:
        mine = torch.tensor(inputs[rank], dtype=torch.float32)
        summed = mine.clone()
        dist.all_reduce(summed)                          # in place, SUM by default
        gathered = [torch.empty_like(mine) for _ in range(world_size)]
        dist.all_gather(gathered, mine)                  # rank order
        results.put((rank, summed.tolist(), [g.tolist() for g in gathered]))
    finally:
        dist.destroy_process_group()
