# Correct: builds the TCPStore itself from init_method's host and port (rank 0 hosts it) and hands it to init_process_group; sums a copy made with clone().
from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlparse

import torch
import torch.distributed as dist


def run_rank(rank: int, world_size: int, init_method: str, inputs, results) -> None:
    where = urlparse(init_method)
    store = dist.TCPStore(where.hostname, where.port, world_size, is_master=(rank == 0),
                          timeout=timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    try:
        x = torch.as_tensor(inputs[rank], dtype=torch.float32)
        gathered = [torch.empty_like(x) for _ in range(world_size)]
        dist.all_gather(gathered, x)
        y = x.clone()
        dist.all_reduce(y)
        results.put((rank, y.tolist(), [t.tolist() for t in gathered]))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
