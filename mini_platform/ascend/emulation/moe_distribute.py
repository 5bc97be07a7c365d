"""Emulated MC2 ops: ``npu_moe_distribute_dispatch`` / ``_combine`` and their ``_v2`` forms, over ``torch.distributed``.

Sources: the signatures, output shapes and dtypes are the torch-npu 2.13.0 wheel's (the yaml schemas and the meta
functions of ``torch_npu/op_plugin/meta/_meta_registrations.py``; tests/test_torch_npu_wheel.py compares them). That
release's ``_op_plugin_docs.py`` has no text for these ops; the semantics follow the torch_npu API reference 7.0.0
(hiascend ``ptaoplist_002364`` dispatch, ``ptaoplist_002363`` combine) and ``aclnnMoeDistributeDispatch`` (CANN
8.2.RC1): the dispatch quantises the tokens (optionally), then runs an all-to-allv over the EP domain, then
(optionally) an all-gatherv over the TP domain; the combine is the reverse exchange followed by the weighted sum of
each token's ``K`` expert outputs.

What the documentation fixes, and the emulation does:

- experts are placed by the op, ``moe_expert_num / ep_world_size`` consecutive ones per rank (no shared-expert ranks);
- dispatch sends every (token, choice) pair of an active token (``x_active_mask``, all when None) to its expert's rank;
  ``expand_x`` holds the rows a rank received grouped by its local expert (ascending), ``A`` rows long
  (``A = BS * ep_world_size * min(local_experts, K)`` with ``global_bs=0``, which needs the same ``BS`` on every rank);
  rows past the received ones are undefined on the device (zeros here);
- ``expert_token_nums`` (int64 ``[local_experts]``): rows per local expert, as a cumulative sum
  (``expert_token_nums_type=0``, what vllm-ascend passes with ``group_list_type=0``) or as counts (1);
- combine returns ``[BS, H]``: ``sum_k expert_scales[t, k] * (expert output of pair (t, k))`` (fp32 sums), zero rows for
  inactive tokens.

What only the pair of ops reads, so the encoding is the emulation's own (the documentation names the tensors and their
shapes, not their layout): inside ``expand_x`` each expert's rows come by source rank, then token order;
``ep_recv_counts`` int32 holds the rows received per (local expert, source rank), expert-major, and goes back to the
combine as ``ep_send_counts``; v1's ``expand_idx`` holds, per pair of the sender, its position among the pairs it sent
to the same expert; v2's ``assist_info_for_combine`` holds ``(source rank, token, choice)`` per received row;
``tp_recv_counts`` is ``[rows received]`` for ``tp_world_size=1``.

Communication: the ops take an HCCL communicator *name* (``group_ep``, ``group_tp``). On Ascend a process group's
``ProcessGroupHCCL`` backend gives it (``get_hccl_comm_name(rank)``); here :func:`hccl_backend` stands in for that
backend on a gloo group and registers the name, and the ops look the group up by it and exchange with
``all_to_all_single`` (gloo has no list-form all-to-all). Not emulated (raises ``NotImplementedError``): quantisation,
a TP domain of 2, shared-expert ranks, ``expert_scales`` on dispatch, ``global_bs`` other than 0, the v2 extras
(``elastic_info``, ``comm_alg``, zero/copy/const experts). fp32 inputs are accepted (the devices take fp16/bf16).
Emulation note: verified against an emulation of torch_npu semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from . import npu

__all__ = ["npu_moe_distribute_dispatch", "npu_moe_distribute_dispatch_v2", "npu_moe_distribute_combine",
           "npu_moe_distribute_combine_v2"]

_GROUPS: dict[str, dist.ProcessGroup] = {}


class ProcessGroupHCCL:
    """Stands in for torch_npu's ``ProcessGroupHCCL`` backend of a (gloo) process group: only the name lookup."""

    def __init__(self, group: dist.ProcessGroup) -> None:
        self.group = group

    def get_hccl_comm_name(self, rank_id: int, init_comm: bool = True) -> str:
        """The communicator's name, which the MC2 ops take as ``group_ep`` / ``group_tp``."""
        if rank_id != dist.get_rank(group=self.group):
            raise ValueError(f"get_hccl_comm_name: rank_id {rank_id} is not this process's rank "
                             f"{dist.get_rank(group=self.group)} in the group")
        name = f"emulated_hccl_{self.group.group_name}"
        _GROUPS[name] = self.group
        return name


def hccl_backend(group: dist.ProcessGroup) -> ProcessGroupHCCL:
    """What ``group._get_backend(torch.device("npu"))`` returns on Ascend, for the emulation's gloo group."""
    return ProcessGroupHCCL(group)


def reset_process_state() -> None:
    """A fresh process knows no communicator names."""
    _GROUPS.clear()


def _group(op: str, name: str, world_size: int, rank: int) -> dist.ProcessGroup:
    group = _GROUPS.get(name)
    if group is None:
        raise ValueError(f"{op}: no HCCL communicator named {name!r} in this process; get the name with "
                         "get_hccl_comm_name(rank) of the group's backend")
    if dist.get_world_size(group) != world_size or dist.get_rank(group) != rank:
        raise ValueError(f"{op}: ep_world_size={world_size}, ep_rank_id={rank}, but the communicator {name!r} has "
                         f"{dist.get_world_size(group)} ranks and this one is rank {dist.get_rank(group)}")
    return group


def _not_emulated(op: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"{op}: {what} is not emulated (mini_platform never uses it)")


def _check_common(op: str, expert_ids: torch.Tensor, bs: int, ep_world_size: int, moe_expert_num: int,
                  tp_world_size: int, expert_shard_type: int, shared_expert_rank_num: int, global_bs: int) -> None:
    if tp_world_size not in (0, 1):
        raise _not_emulated(op, f"a TP domain of {tp_world_size} ranks")
    if expert_shard_type != 0 or shared_expert_rank_num != 0:
        raise _not_emulated(op, "shared-expert ranks")
    if global_bs != 0:
        raise _not_emulated(op, f"global_bs={global_bs}")
    if expert_ids.dtype != torch.int32 or expert_ids.dim() != 2 or expert_ids.shape[0] != bs:
        raise TypeError(f"{op}: expert_ids must be int32 [BS={bs}, K], got {expert_ids.dtype} "
                        f"{tuple(expert_ids.shape)}")
    k = expert_ids.shape[1]
    if not 0 < k <= min(8, moe_expert_num):
        raise ValueError(f"{op}: K must satisfy 0 < K <= 8 and K <= moe_expert_num, got K={k}")
    if moe_expert_num % ep_world_size:
        raise ValueError(f"{op}: moe_expert_num={moe_expert_num} must be a multiple of ep_world_size={ep_world_size}")
    if expert_ids.numel() and not (0 <= int(expert_ids.min()) and int(expert_ids.max()) < moe_expert_num):
        raise ValueError(f"{op}: expert ids must be in [0, {moe_expert_num})")


def _send_plan(expert_ids: torch.Tensor, x_active_mask: torch.Tensor | None, moe_expert_num: int,
               ep_world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(pairs, counts)``: the flat pairs ``t*K + k`` of active tokens in sending order (by expert, then pair) and
    int64 ``[ep_world_size, local_experts]``, the pairs for each rank's local experts."""
    flat = expert_ids.reshape(-1).long()
    pairs = torch.arange(flat.numel())
    if x_active_mask is not None:
        if x_active_mask.dtype != torch.bool or x_active_mask.shape != expert_ids.shape[:1]:
            raise TypeError(f"x_active_mask must be bool [BS], got {x_active_mask.dtype} {tuple(x_active_mask.shape)}")
        pairs = pairs[x_active_mask.repeat_interleave(expert_ids.shape[1])]
    pairs = pairs[torch.argsort(flat[pairs], stable=True)]
    counts = torch.bincount(flat[pairs], minlength=moe_expert_num).view(ep_world_size, -1)
    return pairs, counts


def _dispatch(op: str, x: torch.Tensor, expert_ids: torch.Tensor, group_ep: str, ep_world_size: int, ep_rank_id: int,
              moe_expert_num: int, scales, x_active_mask, expert_scales, group_tp: str, tp_world_size: int,
              expert_shard_type: int, shared_expert_rank_num: int, quant_mode: int, global_bs: int,
              expert_token_nums_type: int, v2: bool) -> tuple[torch.Tensor, ...]:
    if scales is not None or quant_mode != 0:
        raise _not_emulated(op, "quantisation (scales, quant_mode != 0)")
    if expert_scales is not None:
        raise _not_emulated(op, "expert_scales on dispatch (hierarchical communication)")
    if expert_token_nums_type not in (0, 1):
        raise ValueError(f"{op}: expert_token_nums_type must be 0 (cumulative sum) or 1 (counts), "
                         f"got {expert_token_nums_type}")
    if x.dim() != 2:
        raise ValueError(f"{op}: x must be [BS, H], got {tuple(x.shape)}")
    bs, hidden = x.shape
    limit = 256 if 220 <= npu.EMULATED_SOC_VERSION <= 225 else 512   # A2: 0 < BS <= 256, A3: 0 < BS <= 512
    if not 0 < bs <= limit:
        raise ValueError(f"{op}: BS must satisfy 0 < BS <= {limit} on this chip, got {bs}")
    _check_common(op, expert_ids, bs, ep_world_size, moe_expert_num, tp_world_size, expert_shard_type,
                  shared_expert_rank_num, global_bs)
    if tp_world_size == 1 and group_tp not in _GROUPS:
        raise ValueError(f"{op}: no HCCL communicator named group_tp={group_tp!r}")
    group = _group(op, group_ep, ep_world_size, ep_rank_id)
    k, local = expert_ids.shape[1], moe_expert_num // ep_world_size
    pairs, counts = _send_plan(expert_ids, x_active_mask, moe_expert_num, ep_world_size)
    every_bs = [torch.zeros(1, dtype=torch.int64) for _ in range(ep_world_size)]
    dist.all_gather(every_bs, torch.tensor([bs]), group=group)
    if any(int(b) != bs for b in every_bs):
        raise ValueError(f"{op}: global_bs=0 needs the same BS on every rank, got {[int(b) for b in every_bs]}")
    recv = torch.empty_like(counts)                                   # [source rank, local expert]
    dist.all_to_all_single(recv, counts.contiguous(), group=group)
    send_rows, recv_rows = counts.sum(1).tolist(), recv.sum(1).tolist()
    rows = torch.empty(sum(recv_rows), hidden, dtype=x.dtype)
    dist.all_to_all_single(rows, x[pairs // k].contiguous(), recv_rows, send_rows, group=group)
    info = torch.stack([torch.full_like(pairs, ep_rank_id), pairs // k, pairs % k], dim=1)
    recv_info = torch.empty(sum(recv_rows), 3, dtype=torch.int64)
    dist.all_to_all_single(recv_info, info.contiguous(), recv_rows, send_rows, group=group)
    order = _source_to_expert_major(recv)                             # received (source-major) -> expert-major
    a = bs * ep_world_size * min(local, k)
    expand_x = torch.zeros(a, hidden, dtype=x.dtype)
    expand_x[:order.numel()] = rows[order]
    per_expert = recv.sum(0)
    expert_token_nums = torch.cumsum(per_expert, 0) if expert_token_nums_type == 0 else per_expert.clone()
    ep_recv_counts = recv.t().reshape(-1).to(torch.int32)             # [local expert, source rank]
    tp_recv_counts = torch.tensor([order.numel()] * tp_world_size, dtype=torch.int32)
    dynamic_scales = torch.zeros(a, dtype=torch.float32)           # no quantisation: nothing to scale
    if v2:
        assist = torch.zeros(max(bs * k, a * 128), dtype=torch.int32)
        assist[:3 * order.numel()] = recv_info[order].reshape(-1).to(torch.int32)
    else:
        assist = torch.zeros(bs * k, dtype=torch.int32)
        sent_expert = expert_ids.reshape(-1).long()[pairs]
        first = torch.searchsorted(sent_expert, sent_expert)          # where each expert's run starts
        assist[pairs] = (torch.arange(pairs.numel()) - first).to(torch.int32)
    return (expand_x, dynamic_scales, assist, expert_token_nums, ep_recv_counts, tp_recv_counts,
            torch.zeros(0, dtype=torch.float32))


def _source_to_expert_major(recv: torch.Tensor) -> torch.Tensor:
    """Row order that turns blocks ``[source][expert]`` (as received) into ``[expert][source]``."""
    sizes = recv.reshape(-1)
    starts = torch.cumsum(sizes, 0) - sizes
    sources, experts = recv.shape
    blocks = [torch.arange(int(starts[s * experts + e]), int(starts[s * experts + e] + sizes[s * experts + e]))
              for e in range(experts) for s in range(sources)]
    return torch.cat(blocks) if blocks else torch.zeros(0, dtype=torch.int64)


def _combine(op: str, expand_x: torch.Tensor, expert_ids: torch.Tensor, ep_send_counts: torch.Tensor,
             expert_scales: torch.Tensor, group_ep: str, ep_world_size: int, ep_rank_id: int, moe_expert_num: int,
             x_active_mask, tp_world_size: int, expert_shard_type: int, shared_expert_rank_num: int,
             global_bs: int) -> torch.Tensor:
    bs, k = expert_ids.shape
    _check_common(op, expert_ids, bs, ep_world_size, moe_expert_num, tp_world_size, expert_shard_type,
                  shared_expert_rank_num, global_bs)
    local = moe_expert_num // ep_world_size
    if ep_send_counts.dtype != torch.int32 or ep_send_counts.numel() != ep_world_size * local:
        raise TypeError(f"{op}: ep_send_counts must be the dispatch's ep_recv_counts (int32 [{ep_world_size * local}]),"
                        f" got {ep_send_counts.dtype} {tuple(ep_send_counts.shape)}")
    if expert_scales.dtype != torch.float32 or expert_scales.shape != expert_ids.shape:
        raise TypeError(f"{op}: expert_scales must be float32 {tuple(expert_ids.shape)}, got {expert_scales.dtype} "
                        f"{tuple(expert_scales.shape)}")
    group = _group(op, group_ep, ep_world_size, ep_rank_id)
    recv = ep_send_counts.long().view(local, ep_world_size).t()       # [source rank, local expert]
    order = _source_to_expert_major(recv)
    back = torch.empty(order.numel(), expand_x.shape[1], dtype=expand_x.dtype)
    back[order] = expand_x[:order.numel()]                            # expert-major -> source-major
    pairs, counts = _send_plan(expert_ids, x_active_mask, moe_expert_num, ep_world_size)
    mine = torch.empty(pairs.numel(), expand_x.shape[1], dtype=expand_x.dtype)
    dist.all_to_all_single(mine, back.contiguous(), counts.sum(1).tolist(), recv.sum(1).tolist(), group=group)
    weighted = mine.float() * expert_scales.reshape(-1)[pairs].unsqueeze(1)
    out = torch.zeros(bs, expand_x.shape[1], dtype=torch.float32)
    return out.index_add_(0, pairs // k, weighted).to(expand_x.dtype)


def npu_moe_distribute_dispatch(x: torch.Tensor, expert_ids: torch.Tensor, group_ep: str, ep_world_size: int,
                                ep_rank_id: int, moe_expert_num: int, *, scales: torch.Tensor | None = None,
                                x_active_mask: torch.Tensor | None = None, expert_scales: torch.Tensor | None = None,
                                group_tp: str = "", tp_world_size: int = 0, tp_rank_id: int = 0,
                                expert_shard_type: int = 0, shared_expert_num: int = 1, shared_expert_rank_num: int = 0,
                                quant_mode: int = 0, global_bs: int = 0, expert_token_nums_type: int = 1
                                ) -> tuple[torch.Tensor, ...]:
    """EP all-to-all of the (token, expert) pairs: ``(expand_x, dynamic_scales, expand_idx, expert_token_nums,
    ep_recv_counts, tp_recv_counts, expand_scales)``."""
    return _dispatch("npu_moe_distribute_dispatch", x, expert_ids, group_ep, ep_world_size, ep_rank_id, moe_expert_num,
                     scales, x_active_mask, expert_scales, group_tp, tp_world_size, expert_shard_type,
                     shared_expert_rank_num, quant_mode, global_bs, expert_token_nums_type, v2=False)


def npu_moe_distribute_dispatch_v2(x: torch.Tensor, expert_ids: torch.Tensor, group_ep: str, ep_world_size: int,
                                   ep_rank_id: int, moe_expert_num: int, *, scales: torch.Tensor | None = None,
                                   x_active_mask: torch.Tensor | None = None,
                                   expert_scales: torch.Tensor | None = None, elastic_info: torch.Tensor | None = None,
                                   performance_info: torch.Tensor | None = None, group_tp: str = "",
                                   tp_world_size: int = 0, tp_rank_id: int = 0, expert_shard_type: int = 0,
                                   shared_expert_num: int = 1, shared_expert_rank_num: int = 0, quant_mode: int = 0,
                                   global_bs: int = 0, expert_token_nums_type: int = 1, comm_alg: str = "",
                                   zero_expert_num: int = 0, copy_expert_num: int = 0, const_expert_num: int = 0,
                                   y_dtype: int | None = None, x_dtype: int | None = None,
                                   scales_dtype: int | None = None) -> tuple[torch.Tensor, ...]:
    """As :func:`npu_moe_distribute_dispatch`, with ``assist_info_for_combine`` in place of ``expand_idx``."""
    op = "npu_moe_distribute_dispatch_v2"
    if elastic_info is not None or performance_info is not None or comm_alg or zero_expert_num or copy_expert_num \
            or const_expert_num or y_dtype is not None or x_dtype is not None or scales_dtype is not None:
        raise _not_emulated(op, "elastic_info, performance_info, comm_alg, zero/copy/const experts and dtype overrides")
    return _dispatch(op, x, expert_ids, group_ep, ep_world_size, ep_rank_id, moe_expert_num, scales, x_active_mask,
                     expert_scales, group_tp, tp_world_size, expert_shard_type, shared_expert_rank_num, quant_mode,
                     global_bs, expert_token_nums_type, v2=True)


def npu_moe_distribute_combine(expand_x: torch.Tensor, expert_ids: torch.Tensor, expand_idx: torch.Tensor,
                               ep_send_counts: torch.Tensor, expert_scales: torch.Tensor, group_ep: str,
                               ep_world_size: int, ep_rank_id: int, moe_expert_num: int, *,
                               tp_send_counts: torch.Tensor | None = None, x_active_mask: torch.Tensor | None = None,
                               activation_scale: torch.Tensor | None = None, weight_scale: torch.Tensor | None = None,
                               group_list: torch.Tensor | None = None, expand_scales: torch.Tensor | None = None,
                               shared_expert_x: torch.Tensor | None = None, group_tp: str = "", tp_world_size: int = 0,
                               tp_rank_id: int = 0, expert_shard_type: int = 0, shared_expert_num: int = 1,
                               shared_expert_rank_num: int = 0, global_bs: int = 0, out_dtype: int = 0,
                               comm_quant_mode: int = 0, group_list_type: int = 0) -> torch.Tensor:
    """The reverse EP all-to-all and the weighted sum per token: ``[BS, H]``."""
    op = "npu_moe_distribute_combine"
    if activation_scale is not None or weight_scale is not None or group_list is not None or comm_quant_mode \
            or shared_expert_x is not None:
        raise _not_emulated(op, "quantised combine and shared_expert_x")
    return _combine(op, expand_x, expert_ids, ep_send_counts, expert_scales, group_ep, ep_world_size, ep_rank_id,
                    moe_expert_num, x_active_mask, tp_world_size, expert_shard_type, shared_expert_rank_num, global_bs)


def npu_moe_distribute_combine_v2(expand_x: torch.Tensor, expert_ids: torch.Tensor,
                                  assist_info_for_combine: torch.Tensor, ep_send_counts: torch.Tensor,
                                  expert_scales: torch.Tensor, group_ep: str, ep_world_size: int, ep_rank_id: int,
                                  moe_expert_num: int, *, tp_send_counts: torch.Tensor | None = None,
                                  x_active_mask: torch.Tensor | None = None, expand_scales: torch.Tensor | None = None,
                                  shared_expert_x: torch.Tensor | None = None, elastic_info: torch.Tensor | None = None,
                                  ori_x: torch.Tensor | None = None, const_expert_alpha_1: torch.Tensor | None = None,
                                  const_expert_alpha_2: torch.Tensor | None = None,
                                  const_expert_v: torch.Tensor | None = None,
                                  performance_info: torch.Tensor | None = None, group_tp: str = "",
                                  tp_world_size: int = 0, tp_rank_id: int = 0, expert_shard_type: int = 0,
                                  shared_expert_num: int = 1, shared_expert_rank_num: int = 0, global_bs: int = 0,
                                  comm_quant_mode: int = 0, comm_alg: str = "", zero_expert_num: int = 0,
                                  copy_expert_num: int = 0, const_expert_num: int = 0) -> torch.Tensor:
    """As :func:`npu_moe_distribute_combine`, taking the v2 dispatch's ``assist_info_for_combine``."""
    op = "npu_moe_distribute_combine_v2"
    if any(t is not None for t in (shared_expert_x, elastic_info, ori_x, const_expert_alpha_1, const_expert_alpha_2,
                                   const_expert_v, performance_info)) or comm_quant_mode or comm_alg \
            or zero_expert_num or copy_expert_num or const_expert_num:
        raise _not_emulated(op, "shared_expert_x, elastic/const experts, comm_alg and quantised communication")
    return _combine(op, expand_x, expert_ids, ep_send_counts, expert_scales, group_ep, ep_world_size, ep_rank_id,
                    moe_expert_num, x_active_mask, tp_world_size, expert_shard_type, shared_expert_rank_num, global_bs)
