# Correct: rendezvous through env:// with MASTER_ADDR / MASTER_PORT taken from init_method, destroy in an except-and-reraise plus the happy path.
from __future__ import annotations

import os
from urllib.parse import urlparse

import torch
import torch.distributed as dist


def run_rank(rank, world_size, init_method, inputs, results):
    address = urlparse(init_method)
    os.environ["MASTER_ADDR"] = address.hostname
    os.environ["MASTER_PORT"] = str(address.port)
    dist.init_process_group(backend="gloo", init_method="env://", rank=rank, world_size=world_size)
    try:
        original = torch.tensor(inputs[rank]).to(torch.float32)
        total = torch.tensor(inputs[rank], dtype=torch.float32)
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        everyone = [torch.zeros_like(original) for _ in range(world_size)]
        dist.all_gather(everyone, original)
        results.put((rank, total.tolist(), torch.stack(everyone).tolist()))
    except BaseException:
        dist.destroy_process_group()
        raise
    dist.destroy_process_group()
