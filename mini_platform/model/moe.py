"""The mixture-of-experts block of Mixtral, Qwen2/3-MoE and DeepSeek-V2/V3: router, routed experts, shared experts.

    logits = gate(x)                                             # [T, E], a plain linear layer
    w, ids = ops.moe_topk_softmax(logits, top_k, renormalize)    # fp32 softmax, top-k, maybe renormalised
    out = ops.fused_experts(x, w13, w2, w, ids, expert_map)      # this block's share of the routed experts
    out += sigmoid(shared_expert_gate(x)) * shared_expert(x)     # Qwen2-MoE only
    out += shared_experts(x)                                     # DeepSeek: always on, no gate

DeepSeek routes with ``ops.moe_grouped_topk`` instead (expert groups, sigmoid scores and a correction bias that
steers the choice only, weights scaled by ``routed_scaling_factor``); its router weight and bias stay fp32, as
transformers keeps them (``_keep_in_fp32_modules_strict``).

The experts' weights are stacked at load time into the layout the kernels want: ``w13`` ``[E_local, 2*I, H]``
(each expert's gate rows, then its up rows) and ``w2`` ``[E_local, H, I]``; :meth:`SparseMoeBlock.checkpoint_slices`
tells the loader which slice each per-expert checkpoint tensor fills.

Expert parallelism: a block built with an ``expert_map`` (global id -> local index, -1 = elsewhere) holds and
loads only its own experts, and :meth:`SparseMoeBlock.routed_experts` computes exactly their share, so summing
it over all owners gives the routed output of the whole layer. The shared expert is not split: it belongs to
every rank and must be added once (:meth:`SparseMoeBlock.shared_output`).

In worker processes (chapter 8) the block asks the parallel groups how to split itself, as vLLM's FusedMoE does:
with an expert-parallel group it owns whole experts (linear placement by EP rank) and exchanges tokens with
the other owners through an :class:`~mini_platform.distributed.moe_dispatch.ExpertParallelDispatcher`;
otherwise, under tensor parallelism, every rank holds every expert with its intermediate dim split (``w13``
rows and ``w2`` columns, like the dense MLP) and the partial outputs are all-reduced.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import ops, utils
from ..distributed.moe_dispatch import ExpertParallelDispatcher, current_moe_comm
from ..distributed.parallel_state import GroupCoordinator, get_ep_group, get_moe_comm, get_tp_group
from .config import ModelConfig
from .layers import Linear, Shard, SiluAndMulMLP
from .sharding import divide


MC2_DISPATCHER = "mini_platform.ascend.mc2.MC2Dispatcher"   # by name: the model imports no backend


def expert_map_for_rank(num_experts: int, ep_size: int, ep_rank: int, placement: str = "linear") -> torch.Tensor:
    """vLLM's ``determine_expert_map`` (after PRs #21497 and #23745, 2025): int32 ``[num_experts]``,
    this rank's experts numbered 0.. in order, -1 elsewhere.

    ``linear``: contiguous runs, the first ``num_experts % ep_size`` ranks one expert more;
    ``round_robin``: experts ``ep_rank, ep_rank + ep_size, ...``.
    """
    if not 0 <= ep_rank < ep_size:
        raise ValueError(f"ep_rank must be in [0, ep_size={ep_size}), got {ep_rank}")
    if placement == "linear":
        base, rest = divmod(num_experts, ep_size)
        start = ep_rank * base + min(ep_rank, rest)
        owned = range(start, start + base + (ep_rank < rest))
    elif placement == "round_robin":
        owned = range(ep_rank, num_experts, ep_size)
    else:
        raise ValueError(f"unknown expert placement {placement!r}; use 'linear' or 'round_robin'")
    expert_map = torch.full((num_experts,), -1, dtype=torch.int32)
    expert_map[list(owned)] = torch.arange(len(owned), dtype=torch.int32)
    return expert_map


def expert_owners(num_experts: int, ep_size: int, placement: str = "linear") -> torch.Tensor:
    """int64 ``[num_experts]``: the EP rank that owns each expert."""
    if ep_size < 1:
        raise ValueError(f"ep_size must be >= 1, got {ep_size}")
    owned = torch.stack([expert_map_for_rank(num_experts, ep_size, r, placement) >= 0 for r in range(ep_size)])
    return owned.int().argmax(dim=0)


def local_experts(expert_map: torch.Tensor | None, num_experts: int) -> list[int]:
    """The global ids this map owns, by local index; checks that the owned entries number the experts 0..L-1."""
    if expert_map is None:
        return list(range(num_experts))
    if expert_map.dim() != 1 or expert_map.numel() != num_experts or expert_map.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"expert_map must be an int32 tensor of shape [{num_experts}] (global id -> local index, "
                         f"-1 = elsewhere), got {expert_map.dtype} of shape {tuple(expert_map.shape)}")
    values = expert_map.tolist()
    owned = sorted((local, g) for g, local in enumerate(values) if local >= 0)
    if [local for local, _ in owned] != list(range(len(owned))) or any(v < -1 for v in values):
        raise ValueError(f"expert_map {values} must give the owned experts the local indices 0..L-1 once each, "
                         "and -1 to the others")
    return [g for _, g in owned]


class Router(nn.Module):
    """DeepSeek's gate: fp32 logits from an fp32 weight, and (V3) ``e_score_correction_bias`` ``[E]``."""

    def __init__(self, hidden: int, num_experts: int, correction_bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, hidden, dtype=torch.float32), requires_grad=False)
        self.e_score_correction_bias = nn.Parameter(torch.empty(num_experts, dtype=torch.float32),
                                                    requires_grad=False) if correction_bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x.float(), self.weight)


class SparseMoeBlock(nn.Module):
    def __init__(self, config: ModelConfig, dtype: torch.dtype, expert_map: torch.Tensor | None = None) -> None:
        super().__init__()
        moe = config.moe
        if moe is None:
            raise ValueError(f"{config.architecture} has no MoE settings; SparseMoeBlock needs config.moe")
        self.moe = moe
        self.top_k, self.renormalize, self.num_experts = moe.top_k, moe.renormalize, moe.num_experts
        self.weight_names = moe.expert_weight_names
        ep = get_ep_group()
        self.dispatcher = self.mc2 = None
        if ep is not None and ep.world_size > 1:  # expert parallelism: whole experts, tokens sent to their owners
            if expert_map is not None:
                raise ValueError("under expert parallelism the EP group places the experts; do not pass expert_map")
            expert_map = expert_map_for_rank(moe.num_experts, ep.world_size, ep.rank_in_group)
            self.dispatcher = ExpertParallelDispatcher(ep, expert_owners(moe.num_experts, ep.world_size),
                                                       get_moe_comm())
            if get_moe_comm() in ("mc2", "auto"):  # Ascend's fused exchange (the engine allows it on npu only)
                self.mc2 = utils.resolve_obj_by_qualname(MC2_DISPATCHER)(ep, moe.num_experts)
        # Without EP, tensor parallelism splits every expert's intermediate dim; with EP experts stay whole.
        self.expert_tp = get_tp_group() if self.dispatcher is None else GroupCoordinator("tp")
        self.local_experts = local_experts(expert_map, moe.num_experts)
        hidden, self.full_intermediate = config.hidden_size, moe.intermediate_size
        inter = divide(moe.intermediate_size, self.expert_tp.world_size, "moe intermediate_size")
        self.gate = Router(hidden, moe.num_experts, moe.correction_bias) if moe.grouped else \
            Linear(hidden, moe.num_experts, False, dtype)
        self.register_buffer("expert_map", None if expert_map is None else
                             expert_map.to(device=self.gate.weight.device, dtype=torch.int32), persistent=False)
        local = len(self.local_experts)
        self.w13 = nn.Parameter(torch.empty(local, 2 * inter, hidden, dtype=dtype), requires_grad=False)
        self.w2 = nn.Parameter(torch.empty(local, hidden, inter, dtype=dtype), requires_grad=False)
        shared = moe.shared_expert_intermediate_size
        self.shared_name = moe.shared_expert_name
        self.add_module(self.shared_name, SiluAndMulMLP(config, dtype, shared) if shared else None)
        gated = shared and self.shared_name == "shared_expert"   # Qwen2-MoE's is gated, DeepSeek's is not
        self.shared_expert_gate = Linear(hidden, 1, False, dtype) if gated else None

    def checkpoint_slices(self, prefix: str) -> dict[str, tuple[torch.Tensor, Shard]]:
        """Checkpoint name -> (the slice of ``w13`` / ``w2`` it fills, the shard of it to read), for the experts
        this block owns (the router and the shared expert are submodules, loaded as usual)."""
        gate, up, down = self.weight_names
        inter = self.w2.shape[2]
        rows = Shard(0, self.expert_tp.rank_in_group * inter, self.full_intermediate)
        cols = Shard(1, self.expert_tp.rank_in_group * inter, self.full_intermediate)
        slices = {}
        for local, expert in enumerate(self.local_experts):
            name = f"{prefix}.experts.{expert}"
            slices[f"{name}.{gate}.weight"] = (self.w13.data[local, :inter], rows)
            slices[f"{name}.{up}.weight"] = (self.w13.data[local, inter:], rows)
            slices[f"{name}.{down}.weight"] = (self.w2.data[local], cols)
        return slices

    def ignored_checkpoint_tensors(self, prefix: str) -> set[str]:
        """Tensors a checkpoint may hold that this block does not load: other ranks' experts, and the zero-size
        shared expert transformers saves when ``shared_expert_intermediate_size`` (or DeepSeek's ``n_shared_experts``)
        is 0."""
        owned = set(self.local_experts)
        names = {f"{prefix}.experts.{e}.{w}.weight" for e in range(self.num_experts) if e not in owned
                 for w in self.weight_names}
        if self.shared_experts_mlp is None:   # transformers saves a zero-size one (Qwen2-MoE, DeepSeek with 0)
            names |= {f"{prefix}.{self.shared_name}.{w}.weight" for w in ("gate_proj", "up_proj", "down_proj")}
            if self.shared_name == "shared_expert":
                names.add(f"{prefix}.shared_expert_gate.weight")
        return names

    @property
    def shared_experts_mlp(self) -> nn.Module | None:
        """The shared expert(s) MLP under its checkpoint name, or None."""
        return getattr(self, self.shared_name)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(topk_weights fp32 [T, K], topk_ids int32 [T, K])`` from the router logits."""
        moe = self.moe
        if moe.grouped:
            return ops.moe_grouped_topk(self.gate(x), self.top_k, moe.num_expert_group, moe.topk_group,
                                        self.renormalize, moe.scoring_func, self.gate.e_score_correction_bias,
                                        moe.routed_scaling_factor)
        return ops.moe_topk_softmax(self.gate(x), self.top_k, self.renormalize)

    def routed_experts(self, x: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor) -> torch.Tensor:
        """This block's share of the routed experts (all of them without an expert map)."""
        return ops.fused_experts(x, self.w13, self.w2, topk_weights, topk_ids, self.expert_map)

    def shared_output(self, x: torch.Tensor) -> torch.Tensor | None:
        """``sigmoid(shared_expert_gate(x)) * shared_expert(x)`` (Qwen2-MoE), ``shared_experts(x)`` (DeepSeek), or
        None without a shared expert."""
        mlp = self.shared_experts_mlp
        if mlp is None:
            return None
        out = mlp(x)
        return out if self.shared_expert_gate is None else torch.sigmoid(self.shared_expert_gate(x)) * out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        method = None if self.dispatcher is None else current_moe_comm(self.dispatcher.method)
        if method == "mc2":
            out = self.mc2(x, self.route, self.w13, self.w2)
        elif self.dispatcher is not None:
            out = self.dispatcher(x, self.route, self.routed_experts, method)
        else:  # under TP each rank has a slice of every expert: sum the partial outputs
            out = self.expert_tp.all_reduce(self.routed_experts(x, *self.route(x)))
        shared = self.shared_output(x)
        return out if shared is None else out + shared
