"""Emulated torch_npu MoE ops: gating, routing (v1 and v2), expert token counts, grouped matmul, combine.

Sources: signatures, output shapes and dtypes as the schemas and meta functions of the torch-npu 2.13.0 wheel
(tests/test_torch_npu_wheel.py compares them); semantics from that release's ``torch_npu/_op_plugin_docs.py``
(init_routing "expanded_row_idx[sorted_row_idx[i]]=i, expanded_x[i]=x[sorted_row_idx[i]%num_rows]";
compute_expert_tokens "BinarySearch(sortedExpertForSourceRow,i)", "查找每个专家处理的最后一行的位置"; finalize_routing
"expandPermutedRows_{expandedSrcToDstRow_{i+k*num_rows},j}", column-major; token_unpermute "根据sorted_indices存储的
下标，获取permuted_tokens中存储的输入数据；如果存在probs数据，permuted_tokens会与probs相乘；最后进行累加求和"), and,
where that text is brief, Ascend/op-plugin at 517f2e7d: ``docs/zh/custom_APIs/torch_npu/torch_npu-<op>.md``
(formulas and numpy references) and,
for ``npu_moe_token_unpermute``, the reference in ``test/test_custom_ops/test_npu_moe_token_permute_and_unpermute.py``
(the op takes the gather index, the inverse of ``argsort``: "the fusion operator will perform two
torch.argsort operations internally").

Two row numberings meet here and must not be mixed up:

- v1 (``npu_moe_init_routing`` + ``npu_moe_finalize_routing`` with ``drop_pad_mode=0``): column-major,
  the pair (token ``t``, slot ``j``) of ``N`` tokens is row ``j*N + t`` (``row_idx`` from
  ``npu_moe_gating_top_k_softmax`` is ``arange(N*K).reshape(K, N).T``).
- v2 (``npu_moe_init_routing_v2`` + ``npu_moe_token_unpermute``): token-major, row ``t*K + j``.

Where the documentation leaves device memory undefined (output rows past the valid ones), the emulation
writes zeros; the real ops leave whatever was there. Options the engine never uses (quantisation, drop/pad
capacity, ``finished`` rows) raise ``NotImplementedError`` rather than guess.
Emulation note: verified against an emulation of torch_npu semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

from typing import Sequence

import torch

__all__ = ["npu_moe_gating_top_k_softmax", "npu_moe_gating_top_k", "npu_moe_init_routing", "npu_moe_init_routing_v2",
           "npu_moe_compute_expert_tokens", "npu_grouped_matmul", "npu_moe_finalize_routing",
           "npu_moe_token_unpermute"]

_INT32_MAX = torch.iinfo(torch.int32).max


def _not_emulated(op: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"{op}: {what} is not emulated (mini_platform never uses it)")


def _expect_int32(op: str, name: str, t: torch.Tensor) -> None:
    if t.dtype != torch.int32:
        raise TypeError(f"{op}: {name} must be int32, got {t.dtype}")


def npu_moe_gating_top_k_softmax(x: torch.Tensor, finished: torch.Tensor | None = None,
                                 k: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``y, expert_idx = topK(softmax(x), k)``; ``row_idx = arange(N*k).reshape(k, N).T`` (``row_idx[t, j] = j*N + t``).

    ``y`` in x's dtype (softmax computed in fp32), ``expert_idx`` and ``row_idx`` int32, all ``[N, k]``.
    """
    op = "npu_moe_gating_top_k_softmax"
    if finished is not None:
        raise _not_emulated(op, "finished")
    if x.dim() != 2:
        raise _not_emulated(op, f"a {x.dim()}-D x (only 2-D [N, E])")
    if not 0 < k <= min(x.shape[-1], 1024):
        raise ValueError(f"{op}: k must satisfy 0 < k <= min(x.shape[-1], 1024), got k={k} for x {tuple(x.shape)}")
    y, expert_idx = torch.topk(torch.softmax(x.float(), dim=-1), k, dim=-1)
    n = x.shape[0]
    row_idx = torch.arange(n * k, dtype=torch.int32, device=x.device).reshape(k, n).transpose(0, 1).contiguous()
    return y.to(x.dtype), expert_idx.to(torch.int32), row_idx


def npu_moe_gating_top_k(x: torch.Tensor, k: int, *, bias: torch.Tensor | None = None,
                         input_ids: torch.Tensor | None = None, tid2eid: torch.Tensor | None = None, k_group: int = 1,
                         group_count: int = 1, group_select_mode: int = 0, renorm: int = 0, norm_type: int = 0,
                         out_flag: bool = False, routed_scaling_factor: float = 1.0,
                         eps: float = 1e-20) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Grouped top-k gating, after the numpy reference of op-plugin 517f2e7d
    ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_gating_top_k.md`` (in fp32):

    ``norm = softmax(x)`` (``norm_type=0``) or ``sigmoid(x)`` (1); ``choice = norm + bias``; with ``group_count > 1``
    a group scores its maximum (``group_select_mode=0``) or the sum of its top two (1), and all but the
    ``k_group`` best groups (stable order: lower group first among equals) are set to -inf; the ``k`` best experts
    by ``choice`` (stable: lower id first); ``y = norm`` at those experts, divided by ``sum(y) + eps`` only for
    sigmoid, then times ``routed_scaling_factor``.

    Returns ``(y [N, k] in x's dtype, expert_idx int32 [N, k], norm_out fp32 [N, E])``; the document defines
    ``norm_out`` when ``out_flag`` (the emulation always fills it, with the shape of the wheel's meta function).
    The hash mode (``input_ids``/``tid2eid``) is not emulated; ``renorm`` other than 0 is refused ("表示先进行norm再进行topk计算。当前仅支持`0`").
    """
    op = "npu_moe_gating_top_k"
    if input_ids is not None or tid2eid is not None:
        raise _not_emulated(op, "the hash mode (input_ids, tid2eid)")
    if renorm != 0 or norm_type not in (0, 1) or group_select_mode not in (0, 1):
        raise ValueError(f"{op}: renorm must be 0, norm_type and group_select_mode 0 or 1; got {renorm}, {norm_type}, "
                         f"{group_select_mode}")
    if x.dim() != 2 or x.dtype not in (torch.float16, torch.bfloat16, torch.float32) or x.shape[1] > 2048:
        raise ValueError(f"{op}: x must be a 2-D float16/bfloat16/float32 tensor with at most 2048 experts, got "
                         f"{x.dtype} {tuple(x.shape)}")
    num_experts = x.shape[1]
    if bias is not None and (bias.shape != (num_experts,) or bias.dtype != x.dtype):
        raise ValueError(f"{op}: bias must be [{num_experts}] of x's dtype {x.dtype}, got {bias.dtype} "
                         f"{tuple(bias.shape)}")
    per_group = num_experts // group_count if group_count > 0 and num_experts % group_count == 0 else 0
    if per_group <= 2 or -(-per_group // 32) * 32 * group_count > 2048:
        raise ValueError(f"{op}: group_count={group_count} must divide the {num_experts} experts into groups of more "
                         "than 2, with ceil32(group size) * group_count <= 2048")
    if not 1 <= k_group <= group_count or not 1 <= k <= per_group * k_group:
        raise ValueError(f"{op}: need 1 <= k_group <= group_count and 1 <= k <= experts / group_count * k_group, "
                         f"got k={k}, k_group={k_group}, group_count={group_count}")
    norm = torch.softmax(x.float(), dim=-1) if norm_type == 0 else torch.sigmoid(x.float())
    choice = norm if bias is None else norm + bias.float()
    if group_count > 1:
        grouped = choice.unflatten(-1, (group_count, -1))
        group_scores = grouped.amax(dim=-1) if group_select_mode == 0 else grouped.topk(2, dim=-1)[0].sum(dim=-1)
        kept = torch.argsort(-group_scores, dim=-1, stable=True)[:, :k_group]
        dropped = torch.ones_like(group_scores, dtype=torch.bool).scatter_(1, kept, False)
        choice = grouped.masked_fill(dropped[..., None], float("-inf")).flatten(1)
    expert_idx = torch.argsort(-choice, dim=-1, stable=True)[:, :k]
    y = norm.gather(1, expert_idx)
    if norm_type == 1:
        y = y / (y.sum(dim=-1, keepdim=True) + eps)
    y = y * routed_scaling_factor
    return y.to(x.dtype), expert_idx.to(torch.int32), norm


def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor,
                         active_num: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """v1 routing, the documented numpy reference:

    ``order = argsort(expert_idx.flatten(), stable)``; ``expanded_expert_idx = expert_idx.flatten()[order]``;
    ``dst2src = row_idx.flatten()[order]``; ``expanded_row_idx[dst2src] = arange(N*K)``;
    ``expanded_x = x[dst2src[:min(active_num, N)*K] % N]``.
    With ``row_idx[t, j] = j*N + t``, ``expanded_row_idx[j*N + t]`` is the row of ``expanded_x`` holding pair (t, j).
    """
    op = "npu_moe_init_routing"
    _expect_int32(op, "row_idx", row_idx)
    _expect_int32(op, "expert_idx", expert_idx)
    if x.dim() != 2 or expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0] or row_idx.shape != expert_idx.shape:
        raise ValueError(f"{op}: x must be [N, H] and row_idx, expert_idx [N, K]; got {tuple(x.shape)}, "
                         f"{tuple(row_idx.shape)}, {tuple(expert_idx.shape)}")
    n, k = expert_idx.shape
    flat = expert_idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    dst_to_src = row_idx.reshape(-1)[order].long()
    expanded_row_idx = torch.empty(n * k, dtype=torch.int32, device=x.device)
    expanded_row_idx[dst_to_src] = torch.arange(n * k, dtype=torch.int32, device=x.device)
    expanded_x = x[dst_to_src[:min(active_num, n) * k] % n]
    return expanded_x, expanded_row_idx, flat[order]


def npu_moe_compute_expert_tokens(sorted_expert_for_source_row: torch.Tensor, num_expert: int) -> torch.Tensor:
    """For each expert ``i < num_expert``, the end (exclusive) of its rows in the sorted list, found by binary
    search: ``[0,0,0,1,1,2]`` -> ``[3,5,6]`` (a cumulative count; pairs with ``group_list_type=0``)."""
    op = "npu_moe_compute_expert_tokens"
    _expect_int32(op, "sorted_expert_for_source_row", sorted_expert_for_source_row)
    s = sorted_expert_for_source_row
    if s.dim() != 1 or not 0 < num_expert <= 2048:
        raise ValueError(f"{op}: needs a 1-D sorted tensor and 0 < num_expert <= 2048, got shape "
                         f"{tuple(s.shape)} and num_expert={num_expert}")
    if s.numel() and (bool((s[1:] < s[:-1]).any()) or int(s.min()) < 0 or int(s.max()) >= num_expert):
        raise ValueError(f"{op}: sorted_expert_for_source_row must be non-decreasing values in [0, {num_expert})")
    experts = torch.arange(num_expert, dtype=s.dtype, device=s.device)
    return torch.searchsorted(s, experts, right=True).to(s.dtype)


def npu_moe_init_routing_v2(x: torch.Tensor, expert_idx: torch.Tensor, *, scale: torch.Tensor | None = None,
                            offset: torch.Tensor | None = None, active_num: int = -1, expert_capacity: int = -1,
                            expert_num: int = -1, drop_pad_mode: int = 0, expert_tokens_num_type: int = 0,
                            expert_tokens_num_flag: bool = False, quant_mode: int = -1,
                            active_expert_range: Sequence[int] = (), row_idx_type: int = 0,
                            x_dtype: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """v2 routing (dropless, unquantised), after the documented numpy reference. Pairs are token-major, ``i = t*K + j``.

    Ids below ``expert_start`` sort last (as ``INT32_MAX``); the valid pairs are those with
    ``expert_start <= id < expert_end`` (``available``). Returns:

    - ``expanded_x`` ``[N*K (or min(active_num, N*K)), H]``: ``x[order[r] // K]`` for the first ``available`` rows.
    - ``expanded_row_idx`` int32 ``[N*K]``: ``row_idx_type=0`` (gather) ``expanded_row_idx[order[r]] = r`` for valid
      pairs, -1 elsewhere; ``row_idx_type=1`` (scatter) ``order`` itself.
    - ``expert_tokens`` int64: per expert of the range, cumsum (type 0) or count (type 1); type 2 ``[expert_num, 2]``
      (expert id, count) for the experts with tokens, at the head.
    - ``expanded_scale`` fp32, one entry per row of ``expanded_x`` (the shape of torch-npu 2.13.0's meta function):
      ``scale`` gathered like ``expanded_x`` when given, else undefined ("如果不输入表示计算时不使用scale，且输出
      expanded_scale中的值未定义", ``torch_npu/_op_plugin_docs.py`` of 2.13.0); zeros here.
    """
    op = "npu_moe_init_routing_v2"
    _expect_int32(op, "expert_idx", expert_idx)
    if quant_mode != -1 or offset is not None or x_dtype is not None:
        raise _not_emulated(op, f"quant_mode={quant_mode}, x_dtype={x_dtype}")
    if drop_pad_mode != 0:
        raise _not_emulated(op, f"drop_pad_mode={drop_pad_mode} (capacity {expert_capacity})")
    if x.dim() != 2 or expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0]:
        raise ValueError(f"{op}: x must be [N, H] and expert_idx [N, K], got {tuple(x.shape)} and {tuple(expert_idx.shape)}")
    start, end = (list(active_expert_range) or [0, expert_num])
    if expert_num < 0 or not 0 <= start <= end <= expert_num:
        raise ValueError(f"{op}: need expert_num >= 0 and 0 <= expert_start <= expert_end <= expert_num, got "
                         f"expert_num={expert_num}, active_expert_range={list(active_expert_range)}")
    n, k = expert_idx.shape
    flat = expert_idx.reshape(-1)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= expert_num):
        raise ValueError(f"{op}: expert ids must lie in [0, expert_num={expert_num})")
    device = x.device
    keys = torch.where(flat < start, torch.full_like(flat, _INT32_MAX), flat)
    order = torch.argsort(keys, stable=True)
    valid = (flat >= start) & (flat < end)
    available = int(valid.sum())
    if row_idx_type == 1:
        expanded_row_idx = order.to(torch.int32)
    elif row_idx_type == 0:
        expanded_row_idx = torch.full((n * k,), -1, dtype=torch.int32, device=device)
        expanded_row_idx[order[:available]] = torch.arange(available, dtype=torch.int32, device=device)
    else:
        raise ValueError(f"{op}: row_idx_type must be 0 (gather) or 1 (scatter), got {row_idx_type}")
    counts = torch.bincount(keys[order[:available]].long() - start, minlength=end - start)
    if expert_tokens_num_type == 0:
        expert_tokens = torch.cumsum(counts, 0)
    elif expert_tokens_num_type == 1:
        expert_tokens = counts
    elif expert_tokens_num_type == 2:
        used = torch.nonzero(counts).squeeze(1)
        expert_tokens = torch.zeros((expert_num, 2), dtype=torch.int64, device=device)
        expert_tokens[:used.numel()] = torch.stack((used + start, counts[used]), dim=1)
    else:
        raise ValueError(f"{op}: expert_tokens_num_type must be 0, 1 or 2, got {expert_tokens_num_type}")
    if not expert_tokens_num_flag:
        expert_tokens = torch.zeros(0, dtype=torch.int64, device=device)
    rows = n * k if active_num in (-1, 0) else min(active_num, n * k)
    filled = min(rows, available)
    expanded_x = torch.zeros((rows, x.shape[1]), dtype=x.dtype, device=device)   # rows past `filled`: undefined
    expanded_x[:filled] = x[order[:filled] // k]
    expanded_scale = torch.zeros(rows, dtype=torch.float32, device=device)
    if scale is not None:
        expanded_scale[:filled] = scale.float()[order[:filled] // k]
    return expanded_x, expanded_row_idx, expert_tokens.to(torch.int64), expanded_scale


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor, group_list_type: int) -> torch.Tensor:
    """The M-axis grouping of ``npu_grouped_matmul`` (``group_type=0``): group ``e`` is rows ``[start_e, end_e)`` of
    ``x`` ``[M, K]``, multiplied by ``weight[e]`` (``[E, K, N]``); ``group_list`` holds the groups' ends (type 0,
    a cumsum) or sizes (type 1, counts). fp32 accumulation, x's dtype out, ``[M, N]``; rows past the last group
    are undefined on the device, zeros here."""
    if group_list_type not in (0, 1):
        raise ValueError(f"group_list_type must be 0 (cumsum) or 1 (counts), got {group_list_type}")
    if group_list.numel() != weight.shape[0]:
        raise ValueError(f"group_list has {group_list.numel()} entries for {weight.shape[0]} weights (one per group)")
    values = [int(v) for v in group_list.tolist()]
    if group_list_type == 0:
        ends = values
        if any(b < a for a, b in zip([0] + ends, ends)):
            raise ValueError(f"with group_list_type=0, group_list is a cumsum and must be non-decreasing, got {values}")
    else:
        if any(v < 0 for v in values):
            raise ValueError(f"with group_list_type=1, group_list holds group sizes (>= 0), got {values}")
        ends = torch.tensor(values).cumsum(0).tolist() if values else []
    if ends and ends[-1] > x.shape[0]:
        raise ValueError(f"the groups cover {ends[-1]} rows but x has {x.shape[0]}")
    y = torch.zeros((x.shape[0], weight.shape[2]), dtype=torch.float32, device=x.device)
    for g, (lo, hi) in enumerate(zip([0] + ends, ends)):
        if hi > lo:
            y[lo:hi] = x[lo:hi].float() @ weight[g].float()
    return y.to(x.dtype)


def npu_grouped_matmul(x: Sequence[torch.Tensor], weight: Sequence[torch.Tensor], *, bias=None, scale=None,
                       offset=None, antiquant_scale=None, antiquant_offset=None, per_token_scale=None,
                       group_list: torch.Tensor | None = None, activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item: int = 0, group_type: int | None = None,
                       group_list_type: int = 0, act_type: int = 0, tuning_config=None, output_dtype=None,
                       x_dtype=None, weight_dtype=None, scale_dtype=None,
                       per_token_scale_dtype=None) -> list[torch.Tensor]:
    """M-axis grouped matmul (``group_type=0``) as vllm-ascend calls it: one ``x`` ``[M, K]``, one weight
    ``[G, K, N]``, ``group_list`` int64 (type 0 cumsum, type 1 counts), computed by :func:`grouped_matmul`.
    ``split_item`` 2/3 return one tensor (in a list), as do 0/1 here (one weight)."""
    op = "npu_grouped_matmul"
    unused = {"bias": bias, "scale": scale, "offset": offset, "antiquant_scale": antiquant_scale,
              "antiquant_offset": antiquant_offset, "per_token_scale": per_token_scale,
              "activation_input": activation_input, "activation_quant_scale": activation_quant_scale,
              "activation_quant_offset": activation_quant_offset, "output_dtype": output_dtype}
    given = [name for name, value in unused.items() if value is not None]
    if given or act_type != 0:
        raise _not_emulated(op, f"{', '.join(given) or f'act_type={act_type}'}")
    if group_type != 0 or group_list is None:
        raise _not_emulated(op, f"group_type={group_type} without an m-axis group_list tensor")
    if len(x) != 1 or len(weight) != 1:
        raise _not_emulated(op, f"{len(x)} x tensors and {len(weight)} weights (only one of each)")
    if split_item not in (0, 1, 2, 3):
        raise ValueError(f"{op}: split_item must be 0, 1, 2 or 3, got {split_item}")
    a, w = x[0], weight[0]
    if a.dim() != 2 or w.dim() != 3 or w.shape[1] != a.shape[1] or group_list.numel() != w.shape[0]:
        raise ValueError(f"{op}: x must be [M, K], weight [G, K, N] and group_list [G]; got {tuple(a.shape)}, "
                         f"{tuple(w.shape)}, {tuple(group_list.shape)}")
    if group_list.dtype != torch.int64:
        raise TypeError(f"{op}: group_list must be int64, got {group_list.dtype}")
    if group_list_type not in (0, 1):
        raise _not_emulated(op, f"group_list_type={group_list_type}")
    return [grouped_matmul(a, w, group_list, group_list_type)]


def npu_moe_finalize_routing(expanded_permuted_rows: torch.Tensor, skip1: torch.Tensor | None,
                             skip2: torch.Tensor | None, bias: torch.Tensor | None, scales: torch.Tensor | None,
                             expanded_src_to_dst_row: torch.Tensor, export_for_source_row: torch.Tensor | None,
                             drop_pad_mode: int = 0, k: int = 1) -> torch.Tensor:
    """``out[i] = skip1[i] + skip2[i] + sum_k scales[i,k] * (rows[src2dst[idx(i,k)]] + bias[expert[i,k]])``.

    ``idx(i, k) = k*N + i`` (column-major) for ``drop_pad_mode`` 0/1 and ``i*K + k`` (row-major) for 2/3; an index
    of -1 (a dropped pair) reads a zero row. ``K`` is ``scales.shape[1]`` (``k`` without scales). The keyword is
    really ``export_for_source_row`` (the schema's spelling); it holds the expert of each pair, for ``bias``.
    Summed in fp32; returned in the rows' dtype.
    """
    op = "npu_moe_finalize_routing"
    _expect_int32(op, "expanded_src_to_dst_row", expanded_src_to_dst_row)
    if drop_pad_mode not in (0, 1, 2, 3):
        raise ValueError(f"{op}: drop_pad_mode must be 0, 1, 2 or 3, got {drop_pad_mode}")
    if skip1 is None and skip2 is not None:
        raise ValueError(f"{op}: skip2 needs skip1 (when skip1 is None, skip2 must be None too)")
    if bias is not None and export_for_source_row is None:
        raise ValueError(f"{op}: bias needs export_for_source_row (the expert of each pair)")
    top_k = scales.shape[1] if scales is not None else k
    nk = expanded_src_to_dst_row.numel()
    if nk % top_k:
        raise ValueError(f"{op}: expanded_src_to_dst_row has {nk} entries, not a multiple of K={top_k}")
    n = nk // top_k
    h = expanded_permuted_rows.shape[-1]
    rows = expanded_permuted_rows.reshape(-1, h).float()
    src = expanded_src_to_dst_row.long()
    idx = (src.view(top_k, n).T if drop_pad_mode in (0, 1) else src.view(n, top_k))   # [N, K] -> row (or -1)
    picked = torch.where((idx >= 0).unsqueeze(-1), rows[idx.clamp(min=0)], torch.zeros((), device=rows.device))
    if bias is not None:
        picked = picked + bias.float()[export_for_source_row.long()]
    weights = scales.float() if scales is not None else torch.ones((n, top_k), device=rows.device)
    out = (picked * weights.unsqueeze(-1)).sum(dim=1)
    for skip in (skip1, skip2):
        if skip is not None:
            out = out + skip.float()
    return out.to(expanded_permuted_rows.dtype)


def npu_moe_token_unpermute(permuted_tokens: torch.Tensor, sorted_indices: torch.Tensor,
                            probs: torch.Tensor | None = None, padded_mode: bool = False,
                            restore_shape: Sequence[int] | None = None) -> torch.Tensor:
    """``out[t] = sum_j permuted_tokens[sorted_indices[t*K + j]] * probs[t, j]`` (K = ``probs.shape[1]``; without
    probs K = 1 and nothing is scaled). ``sorted_indices`` is the gather index (pair -> permuted row), as
    ``npu_moe_init_routing_v2`` returns with ``row_idx_type=0``; a negative index is an error here.
    Summed in fp32; returned in the tokens' dtype."""
    op = "npu_moe_token_unpermute"
    if padded_mode:
        raise _not_emulated(op, "padded_mode=True")
    _expect_int32(op, "sorted_indices", sorted_indices)
    top_k = probs.shape[1] if probs is not None else 1
    idx = sorted_indices.long()
    if idx.numel() % top_k:
        raise ValueError(f"{op}: sorted_indices has {idx.numel()} entries, not a multiple of K={top_k}")
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= permuted_tokens.shape[0]):
        raise ValueError(f"{op}: sorted_indices must lie in [0, {permuted_tokens.shape[0]}) (rows of permuted_tokens); "
                         "pass abs() or clamp the -1 entries of init_routing_v2 and zero their probs")
    picked = permuted_tokens.float()[idx].view(-1, top_k, permuted_tokens.shape[-1])
    if probs is not None:
        picked = picked * probs.float().unsqueeze(-1)
    return picked.sum(dim=1).to(permuted_tokens.dtype)
