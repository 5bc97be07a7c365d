"""Mixture of experts on Ascend, through torch_npu as vllm-ascend calls it. Two call sequences, chosen by
``MINI_PLATFORM_NPU_MOE_ROUTING`` (see :mod:`mini_platform.envs`):

- ``v2`` (default; vllm-ascend v0.11.0 ``TokenDispatcherWithAllGather`` and HEAD 182b75ea ``ops/fused_moe``):
  ``npu_moe_init_routing_v2`` (token-major pairs ``t*K + j``, per-expert COUNTS) -> ``npu_grouped_matmul``
  (``group_list_type=1``) -> ``npu_swiglu`` -> ``npu_grouped_matmul`` -> ``npu_moe_token_unpermute`` (weighted sum).
- ``v1`` (vllm-ascend v0.9.1 ``ops/fused_moe.py fused_experts``): ``npu_moe_init_routing`` with a column-major
  ``row_idx`` (``j*N + t``) -> ``npu_moe_compute_expert_tokens`` (CUMSUM) -> grouped matmuls (``group_list_type=0``)
  -> ``npu_moe_finalize_routing`` (weighted sum, ``export_for_source_row=topk_ids``).

Expert maps: v0.9.1 with a map skips the routing ops and sorts in torch (reproduced in :func:`_sort_owned`).
vllm-ascend's v2 path passes GLOBAL ids with ``active_expert_range=[ep_rank*E_local, (ep_rank+1)*E_local)``,
which only fits a contiguous (linear) placement; here the ids go through ``expert_map`` first (experts owned
elsewhere become ``E_local``, outside the range ``[0, E_local)``), so any placement works. The dropped pairs come
back as -1 in ``expanded_row_idx``: vllm-ascend passes ``abs()`` of it to the combine with their weights zeroed,
which reads row 1 (absent when T*K = 1); here they are clamped to row 0, with the weights zeroed likewise.

The router is ``npu_moe_gating_top_k_softmax`` (v0.9.1 and v0.11.0 ``select_experts``), fed fp32 logits so the
weights come back in fp32 as the kernel contract says. Grouped routing (DeepSeek) is ``npu_moe_gating_top_k``
(v0.11.0 ``ops/moe/experts_selector.py``). torch_npu is imported at call time.
"""
from __future__ import annotations

import importlib

import torch

from ... import envs
from ...ops.cpu.moe import check_experts_args, check_grouped_topk_args, check_topk_args


def _torch_npu():
    return importlib.import_module("torch_npu")


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``npu_moe_gating_top_k_softmax(x, None, k)``, then ``w / w.sum(-1)`` when renormalising (v0.9.1's order)."""
    check_topk_args(router_logits, top_k)
    weights, ids, _row_idx = _torch_npu().npu_moe_gating_top_k_softmax(router_logits.float(), None, k=top_k)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Grouped top-k routing with ``npu_moe_gating_top_k``, called as vllm-ascend v0.11.0's ``experts_selector.py``
    does for DeepSeek-V3 (``k``, ``bias``, ``k_group``, ``group_count``, ``group_select_mode``, ``renorm=0``,
    ``norm_type``, ``routed_scaling_factor``, ``eps=1e-20``), on fp32 logits and bias so the weights come back fp32.

    The op divides the chosen sigmoid scores by ``sum + eps`` (and never the softmax ones), so: sigmoid with
    ``renormalize`` and softmax without are the op's own results; softmax with ``renormalize`` is divided by the sum
    here after the op (vllm-ascend's order for ``npu_moe_gating_top_k_softmax``); sigmoid without it takes the
    op's ``norm_out`` (the unnormalised sigmoid, ``out_flag=True``) at the chosen experts. The group score is the
    top-2 sum with a bias (V3, ``group_select_mode=1``) and the maximum without (V2, 0), as the contract says.
    """
    check_grouped_topk_args(router_logits, top_k, num_expert_group, topk_group, scoring_func, e_score_correction_bias)
    sigmoid = scoring_func == "sigmoid"
    op_scales = sigmoid == renormalize        # the op's y is the contract's weight, scaling included
    weights, ids, norm = _torch_npu().npu_moe_gating_top_k(
        router_logits.float(), k=top_k,
        bias=None if e_score_correction_bias is None else e_score_correction_bias.float(), k_group=topk_group,
        group_count=num_expert_group, group_select_mode=0 if e_score_correction_bias is None else 1, renorm=0,
        norm_type=1 if sigmoid else 0, out_flag=sigmoid and not renormalize,
        routed_scaling_factor=routed_scaling_factor if op_scales else 1.0, eps=1e-20)
    if not op_scales:
        weights = norm.gather(1, ids.long()) if sigmoid else weights / weights.sum(dim=-1, keepdim=True)
        weights = weights * routed_scaling_factor
    return weights, ids.to(torch.int32)


def _expert_mlp(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, group_list: torch.Tensor,
                group_list_type: int) -> torch.Tensor:
    """Grouped GEMM with ``w13`` -> SwiGLU -> grouped GEMM with ``w2`` over expert-sorted rows
    (vllm-ascend v0.9.1's ``apply_mlp``, v0.11.0's ``unquant_apply_mlp``: weights transposed to ``[E, K, N]``)."""
    torch_npu = _torch_npu()
    gate_up = torch_npu.npu_grouped_matmul(x=[x], weight=[w13.transpose(1, 2)], split_item=2,
                                           group_list_type=group_list_type, group_type=0, group_list=group_list)[0]
    act = torch_npu.npu_swiglu(gate_up)
    return torch_npu.npu_grouped_matmul(x=[act], weight=[w2.transpose(1, 2)], split_item=2,
                                        group_list_type=group_list_type, group_type=0, group_list=group_list)[0]


def _local_ids(topk_ids: torch.Tensor, expert_map: torch.Tensor, num_local: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(local ids with num_local for experts owned elsewhere, owned mask)``."""
    local = expert_map.long()[topk_ids.long()]
    owned = local >= 0
    return torch.where(owned, local, num_local).to(torch.int32), owned


def _sort_owned(hidden: torch.Tensor, local: torch.Tensor, num_local: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """v0.9.1's expert-map path in torch: ``(sorted rows, their flat pair index, cumsum of rows per local expert)``;
    pairs owned elsewhere (id ``num_local``) sort last and fall outside every group."""
    order = torch.argsort(local.reshape(-1), stable=True)
    counts = torch.zeros(num_local + 1, dtype=torch.int64, device=hidden.device)
    counts.scatter_add_(0, local.reshape(-1).long(), torch.ones_like(order))
    return hidden[order // local.shape[1]], order, torch.cumsum(counts[:num_local], 0)


def fused_experts_v1(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                     topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    """vllm-ascend v0.9.1: init_routing -> compute_expert_tokens -> grouped MLP -> finalize_routing."""
    torch_npu = _torch_npu()
    t, top_k = topk_ids.shape
    num_local = w13.shape[0]
    if expert_map is None:
        row_idx = torch.arange(t * top_k, dtype=torch.int32, device=hidden.device).view(top_k, -1).permute(1, 0).contiguous()
        ids = topk_ids.to(torch.int32)
        sorted_x, expanded_row_idx, expanded_expert_idx = torch_npu.npu_moe_init_routing(
            hidden, row_idx=row_idx, expert_idx=ids, active_num=t)
        group_list = torch_npu.npu_moe_compute_expert_tokens(expanded_expert_idx, num_local).to(torch.int64)
        out = _expert_mlp(sorted_x, w13, w2, group_list, group_list_type=0)
        return torch_npu.npu_moe_finalize_routing(out, skip1=None, skip2=None, bias=None,
                                                  scales=topk_weights.to(out.dtype),
                                                  expanded_src_to_dst_row=expanded_row_idx,
                                                  export_for_source_row=ids)
    local, owned = _local_ids(topk_ids, expert_map, num_local)
    sorted_x, order, group_list = _sort_owned(hidden, local, num_local)
    out = _expert_mlp(sorted_x, w13, w2, group_list, group_list_type=0).float()
    # Rows past the owned ones are undefined after the grouped matmul: keep them out of the sum.
    valid = torch.arange(order.numel(), device=hidden.device) < owned.sum()
    weights = torch.where(valid, topk_weights.reshape(-1)[order].float(), 0.0)
    out = torch.where(valid.unsqueeze(1), out * weights.unsqueeze(1), 0.0)
    combined = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    return combined.index_add_(0, order // top_k, out).to(hidden.dtype)


def fused_experts_v2(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                     topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    """vllm-ascend v0.11.0's all-gather token dispatcher: init_routing_v2 (counts) -> grouped MLP -> token_unpermute."""
    torch_npu = _torch_npu()
    t, top_k = topk_ids.shape
    num_local = w13.shape[0]
    if expert_map is None:
        ids, weights, num_ids = topk_ids.to(torch.int32), topk_weights, num_local
    else:
        ids, owned = _local_ids(topk_ids, expert_map, num_local)
        weights, num_ids = topk_weights * owned, num_local + 1
    sorted_x, expanded_row_idx, counts, _scale = torch_npu.npu_moe_init_routing_v2(
        hidden, ids, active_num=t * top_k, expert_num=num_ids, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_local], quant_mode=-1)
    out = _expert_mlp(sorted_x, w13, w2, counts.to(torch.int64), group_list_type=1)
    return torch_npu.npu_moe_token_unpermute(permuted_tokens=out, sorted_indices=expanded_row_idx.clamp(min=0),
                                             probs=weights.to(out.dtype))


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    """The routed experts on Ascend, by the call sequence ``MINI_PLATFORM_NPU_MOE_ROUTING`` names (default v2)."""
    check_experts_args(hidden, w13, w2, topk_weights, topk_ids, expert_map)
    if topk_ids.shape[0] == 0:
        return torch.zeros_like(hidden)
    impl = fused_experts_v1 if envs.npu_moe_routing() == "v1" else fused_experts_v2
    return impl(hidden, w13, w2, topk_weights, topk_ids, expert_map)
