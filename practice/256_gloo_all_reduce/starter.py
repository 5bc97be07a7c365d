"""Exercise 256: one rank of a two-process gloo all-reduce and all-gather. Keep the names."""
from __future__ import annotations

import torch
import torch.distributed as dist


def run_rank(rank: int, world_size: int, init_method: str, inputs: list[list[float]], results) -> None:
    """Runs in its own process: join the gloo group, all-reduce and all-gather inputs[rank], report, leave."""
    # TODO: dist.init_process_group("gloo", init_method=..., rank=..., world_size=...)
    # TODO: an fp32 tensor of inputs[rank]; its all-reduced sum; every rank's tensor via all_gather
    # TODO: results.put((rank, summed_list, gathered_lists)); finally dist.destroy_process_group()
    raise NotImplementedError("run_rank")
