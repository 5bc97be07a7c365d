"""MC2 on Ascend: one fused kernel each way for the expert-parallel exchange (``moe_comm="mc2"``).

vllm-ascend v0.11.0 (``vllm_ascend/ops/moe/token_dispatcher.py`` ``TokenDispatcherWithMC2`` and
``ops/moe/fused_moe_prepare_and_finalize.py`` ``FusedMoEPrepareAndFinalizeWithMC2``), in our words:

1. prepare: pad the step's tokens to a multiple of the TP size and take this rank's equal slice; ``mc2_mask`` marks
   the real tokens;
2. route the slice (global expert ids);
3. ``npu_moe_distribute_dispatch_v2`` (``_v2`` when torch_npu has it, as 2.13.0 does; else v1): every (token, expert)
   pair goes to the expert's rank; it returns the received rows grouped by local expert and their cumulative counts;
4. the local experts on those rows: grouped matmul -> SwiGLU -> grouped matmul (``group_list_type=0``, cumulative);
5. ``npu_moe_distribute_combine_v2``: the rows go home and are summed per token with the routing weights;
6. finalize: all-gather the slices and drop the padding.

On A3 the calls also name the TP domain (``group_tp`` = the same communicator, ``tp_world_size=1``) and pass
``x_active_mask`` (v2 only), as vllm-ascend does. The ops take the communicator by name, which vllm-ascend gets from the
MC2 group's HCCL backend: ``device_group._get_backend(torch.device("npu")).get_hccl_comm_name(local_rank)``.
Under the CPU emulation the group is a gloo group and there is no ``npu`` device type to ask, so the emulation's
stand-in for that backend answers (:func:`hccl_comm_name`). The experts are placed as the ops place them:
``num_experts / ep_size`` consecutive experts per rank (the engine's linear placement when it divides evenly).
"""
from __future__ import annotations

import importlib

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..distributed.parallel_state import GroupCoordinator
from ..distributed.moe_dispatch import RouteFn
from . import emulation
from .moe_comm import soc_version
from .ops.moe import _expert_mlp


def _torch_npu():
    return importlib.import_module("torch_npu")


def hccl_comm_name(device_group: dist.ProcessGroup) -> str:
    """The HCCL communicator name of ``device_group`` for this process, which the MC2 ops take as ``group_ep``."""
    local_rank = dist.get_rank(group=device_group)
    if emulation.is_installed():        # gloo underneath: the emulation's stand-in for ProcessGroupHCCL
        from .emulation.moe_distribute import hccl_backend
        backend = hccl_backend(device_group)
    else:
        backend = device_group._get_backend(torch.device("npu"))
    return backend.get_hccl_comm_name(local_rank)


class MC2Dispatcher:
    """The routed experts of one MoE layer through ``npu_moe_distribute_dispatch`` / ``_combine`` (see the module)."""

    def __init__(self, group: GroupCoordinator, num_experts: int) -> None:
        if num_experts % group.world_size:
            raise ValueError(f"moe_comm='mc2' places num_experts / ep_size experts on each rank: {num_experts} experts "
                             f"do not divide among {group.world_size} ranks; use moe_comm='alltoall'")
        self.group = group
        self.group_name = hccl_comm_name(group.communicator.group)
        self.moe_expert_num = num_experts
        self.a3 = soc_version() == "A3"     # vllm-ascend's need_extra_args / a3_need_extra_args
        self.enable_dispatch_v2 = hasattr(_torch_npu(), "npu_moe_distribute_dispatch_v2")

    def __call__(self, x: torch.Tensor, route: RouteFn, w13: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        """``x`` ``[T, H]`` (the same on every rank) -> the routed experts' output ``[T, H]`` on every rank."""
        torch_npu = _torch_npu()
        world, rank = self.group.world_size, self.group.rank_in_group
        num_tokens = x.shape[0]
        padded = -(-num_tokens // world) * world
        mine = torch.tensor_split(F.pad(x, (0, 0, 0, padded - num_tokens)), world)[rank]
        mask = torch.tensor_split(torch.arange(padded, device=x.device) < num_tokens, world)[rank]
        weights, ids = route(mine)
        # A3 names the TP domain (the same communicator, one rank) and, with v2, masks the padding tokens; on A2 these
        # stay at their defaults (vllm-ascend leaves them out).
        group_tp, tp_world_size = (self.group_name, 1) if self.a3 else ("", 0)
        active = mask if self.a3 and self.enable_dispatch_v2 else None
        if self.enable_dispatch_v2:
            out = torch_npu.npu_moe_distribute_dispatch_v2(
                mine, ids, self.group_name, world, rank, self.moe_expert_num, scales=None, x_active_mask=active,
                group_tp=group_tp, tp_world_size=tp_world_size, tp_rank_id=0, expert_shard_type=0,
                shared_expert_rank_num=0, quant_mode=0, global_bs=0, expert_token_nums_type=0)
        else:
            out = torch_npu.npu_moe_distribute_dispatch(
                mine, ids, self.group_name, world, rank, self.moe_expert_num, scales=None, group_tp=group_tp,
                tp_world_size=tp_world_size, tp_rank_id=0, expert_shard_type=0, shared_expert_rank_num=0,
                quant_mode=0, global_bs=0, expert_token_nums_type=0)
        expand_x, _, assist, expert_token_nums, ep_recv_counts, tp_recv_counts, expand_scales = out[0:7]
        rows = _expert_mlp(expand_x, w13, w2, expert_token_nums, group_list_type=0)
        tp_send_counts = tp_recv_counts if self.a3 else None
        combine = (torch_npu.npu_moe_distribute_combine_v2 if self.enable_dispatch_v2
                   else torch_npu.npu_moe_distribute_combine)    # arg 3: assist_info_for_combine (v2) / expand_idx
        combined = combine(rows, ids, assist, ep_recv_counts, weights.to(torch.float32), self.group_name, world, rank,
                           self.moe_expert_num, tp_send_counts=tp_send_counts, x_active_mask=active,
                           expand_scales=expand_scales, group_tp=group_tp, tp_world_size=tp_world_size, tp_rank_id=0,
                           expert_shard_type=0, shared_expert_rank_num=0, global_bs=0)
        return self.group.all_gather(combined, dim=0)[:num_tokens]
