"""Mixture-of-experts kernels in plain torch: the specification of ``moe_topk_softmax`` and ``fused_experts``.

The expert loop is the clearest form of the layer: for each local expert, gather the (token, slot)
pairs routed to it, run its SwiGLU MLP on those rows and add the weighted result back with
``index_add_``. It syncs with the host (``nonzero``) and runs one small GEMM pair per expert; the
other backends do the same work as grouped GEMMs over expert-sorted rows.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def check_topk_args(router_logits: torch.Tensor, top_k: int) -> None:
    """Shapes every backend relies on (no host sync)."""
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= router_logits.shape[1]:
        raise ValueError(f"top_k must be an integer in [1, {router_logits.shape[1]}] (the number of experts), "
                         f"got {top_k!r}")


def num_global_experts(w13: torch.Tensor, expert_map: torch.Tensor | None) -> int:
    """E: the length of the expert map, or the number of local experts when there is none."""
    return w13.shape[0] if expert_map is None else expert_map.shape[0]


def check_experts_args(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                       topk_ids: torch.Tensor, expert_map: torch.Tensor | None) -> None:
    """Shapes and dtypes every backend relies on (no host sync)."""
    if hidden.dim() != 2:
        raise ValueError(f"hidden must be [tokens, hidden_size], got shape {tuple(hidden.shape)}")
    t, h = hidden.shape
    if w13.dim() != 3 or w13.shape[2] != h or w13.shape[1] % 2:
        raise ValueError(f"w13 must be [local_experts, 2 * intermediate, hidden={h}] (gate rows then up rows), "
                         f"got shape {tuple(w13.shape)}")
    if not hidden.dtype == w13.dtype == w2.dtype:
        raise ValueError(f"hidden, w13 and w2 must share a dtype, got {hidden.dtype}, {w13.dtype}, {w2.dtype}")
    e_local, inter = w13.shape[0], w13.shape[1] // 2
    if tuple(w2.shape) != (e_local, h, inter):
        raise ValueError(f"w2 must be [local_experts={e_local}, hidden={h}, intermediate={inter}] to match w13, "
                         f"got shape {tuple(w2.shape)}")
    if topk_ids.dim() != 2 or topk_ids.shape[0] != t or topk_weights.shape != topk_ids.shape:
        raise ValueError(f"topk_weights and topk_ids must both be [tokens={t}, top_k], got "
                         f"{tuple(topk_weights.shape)} and {tuple(topk_ids.shape)}")
    if topk_ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"topk_ids must be int32 or int64 expert ids, got {topk_ids.dtype}")
    if expert_map is not None:
        if expert_map.dim() != 1 or expert_map.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"expert_map must be a 1-D int32 tensor [num_experts] (global id -> local index, "
                             f"-1 = elsewhere), got {expert_map.dtype} of shape {tuple(expert_map.shape)}")


def select_topk(probs: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``top_k`` largest fp32 probabilities of each row in descending order, equal ones lower expert id
    first (the rule of vLLM's CUDA ``topkGatingSoftmax`` at commit 0112cf23; ``torch.topk`` promises no order
    among ties), divided by their sum when ``renormalize``; fp32 weights and int32 ids, both ``[T, K]``."""
    weights, ids = probs.sort(dim=-1, descending=True, stable=True)
    weights, ids = weights[:, :top_k].contiguous(), ids[:, :top_k].to(torch.int32)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax of each row in fp32, then :func:`select_topk`; returns fp32 weights and int32 ids, both ``[T, K]``."""
    check_topk_args(router_logits, top_k)
    return select_topk(torch.softmax(router_logits.float(), dim=-1), top_k, renormalize)


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    """Loop over the local experts; each adds ``weight * expert(x)`` to the rows of its tokens (fp32)."""
    check_experts_args(hidden, w13, w2, topk_weights, topk_ids, expert_map)
    num_experts = num_global_experts(w13, expert_map)
    ids = topk_ids.long()
    if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < num_experts):
        raise ValueError(f"topk_ids must be global expert ids in [0, {num_experts}), got values in "
                         f"[{int(ids.min())}, {int(ids.max())}]")
    local = ids if expert_map is None else expert_map.long()[ids]   # -1: the expert lives elsewhere
    x = hidden.float()
    out = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
    for e in range(w13.shape[0]):
        tokens, slots = torch.nonzero(local == e, as_tuple=True)
        if tokens.numel() == 0:
            continue   # an expert that no token chose costs nothing
        gate, up = F.linear(x[tokens], w13[e].float()).chunk(2, dim=-1)
        y = F.linear(F.silu(gate) * up, w2[e].float())
        out.index_add_(0, tokens, y * topk_weights[tokens, slots].float().unsqueeze(-1))
    return out.to(hidden.dtype)


def check_grouped_topk_args(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                            scoring_func: str, e_score_correction_bias: torch.Tensor | None) -> None:
    """Shapes and settings every backend relies on (no host sync)."""
    check_topk_args(router_logits, top_k)
    num_experts = router_logits.shape[1]
    for name, value in (("num_expert_group", num_expert_group), ("topk_group", topk_group)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if num_experts % num_expert_group:
        raise ValueError(f"num_expert_group={num_expert_group} must divide the number of experts {num_experts}")
    if topk_group > num_expert_group:
        raise ValueError(f"topk_group={topk_group} exceeds num_expert_group={num_expert_group}")
    if top_k > topk_group * (num_experts // num_expert_group):
        raise ValueError(f"top_k={top_k} exceeds the {topk_group} chosen groups of "
                         f"{num_experts // num_expert_group} experts")
    if scoring_func not in ("softmax", "sigmoid"):
        raise ValueError(f"scoring_func must be 'softmax' or 'sigmoid', got {scoring_func!r}")
    if e_score_correction_bias is not None and e_score_correction_bias.shape != (num_experts,):
        raise ValueError(f"e_score_correction_bias must be [{num_experts}], got {tuple(e_score_correction_bias.shape)}")


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Grouped top-k routing (DeepSeek-V2/V3); see ``mini_platform.ops.moe_grouped_topk`` for the rules."""
    check_grouped_topk_args(router_logits, top_k, num_expert_group, topk_group, scoring_func,
                            e_score_correction_bias)
    logits = router_logits.float()
    scores = torch.sigmoid(logits) if scoring_func == "sigmoid" else torch.softmax(logits, dim=-1)
    choice = scores if e_score_correction_bias is None else scores + e_score_correction_bias.float()
    grouped = choice.unflatten(-1, (num_expert_group, -1))                       # [T, G, E/G]
    if e_score_correction_bias is None:
        group_scores = grouped.amax(dim=-1)                                      # V2: the best expert of a group
    else:
        group_scores = grouped.sort(dim=-1, descending=True)[0][..., :2].sum(dim=-1)   # V3: its best two
    groups = group_scores.sort(dim=-1, descending=True, stable=True)[1][:, :topk_group]
    kept = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, groups, True)
    masked = choice.masked_fill(~kept.repeat_interleave(grouped.shape[-1], dim=1), float("-inf"))
    ids = masked.sort(dim=-1, descending=True, stable=True)[1][:, :top_k]
    weights = scores.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return (weights * routed_scaling_factor).contiguous(), ids.to(torch.int32)
