"""Exercise 238: MoE settings from config.json and where each expert tensor of a checkpoint goes. Keep the names."""
from __future__ import annotations


def moe_layout(config: dict) -> dict:
    """num_experts, top_k, expert_intermediate_size, renormalize, shared_expert_intermediate_size, sparse_layers."""
    # TODO: the architecture; Mixtral's and Qwen2-MoE's fields with their defaults; which layers are sparse
    raise NotImplementedError("moe_layout")


def expert_checkpoint_plan(config: dict, layer: int, owned_experts: list[int] | None = None) -> dict:
    """checkpoint tensor name -> (target "w13" | "w2", local_index, row_start, row_end)."""
    # TODO: validate the layer and owned_experts (None = all experts, [] = none); the name prefix and matrix names per architecture
    raise NotImplementedError("expert_checkpoint_plan")
