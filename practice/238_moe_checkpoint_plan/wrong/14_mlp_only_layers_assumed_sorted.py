# Mistake: Looks layers up in mlp_only_layers with bisect, which assumes the list is sorted; an unsorted list misses some dense layers.
from __future__ import annotations

import bisect

# architecture -> (module name of the MoE block, (gate, up, down) matrix names)
NAMES = {"MixtralForCausalLM": ("block_sparse_moe", ("w1", "w3", "w2")),
         "Qwen2MoeForCausalLM": ("mlp", ("gate_proj", "up_proj", "down_proj"))}


def _architecture(config: dict) -> str:
    arch = (config.get("architectures") or [None])[0]
    if arch not in NAMES:
        raise ValueError(f"architecture {arch!r} is not an MoE architecture handled here; expected one of {sorted(NAMES)}")
    return arch


def moe_layout(config: dict) -> dict:
    arch = _architecture(config)
    layers = config["num_hidden_layers"]
    if arch == "MixtralForCausalLM":
        layout = {"num_experts": config.get("num_local_experts", 8), "top_k": config.get("num_experts_per_tok", 2),
                  "expert_intermediate_size": config["intermediate_size"], "renormalize": True,
                  "shared_expert_intermediate_size": 0, "sparse_layers": list(range(layers))}
    else:
        num_experts = config.get("num_experts", 60)
        step = config.get("decoder_sparse_step", 1)
        if step < 1:
            raise ValueError(f"decoder_sparse_step must be >= 1, got {step}")
        dense = list(config.get("mlp_only_layers") or [])
        layout = {"num_experts": num_experts, "top_k": config.get("num_experts_per_tok", 4),
                  "expert_intermediate_size": config.get("moe_intermediate_size", 1408),
                  "renormalize": bool(config.get("norm_topk_prob", False)),
                  "shared_expert_intermediate_size": config.get("shared_expert_intermediate_size", 5632),
                  "sparse_layers": [i for i in range(layers)
                                    if not (bisect.bisect_left(dense, i) < len(dense) and dense[bisect.bisect_left(dense, i)] == i) and num_experts > 0 and (i + 1) % step == 0]}
    if layout["top_k"] > layout["num_experts"]:
        raise ValueError(f"num_experts_per_tok={layout['top_k']} exceeds num_experts={layout['num_experts']}")
    return layout


def expert_checkpoint_plan(config: dict, layer: int, owned_experts: list[int] | None = None) -> dict:
    layout = moe_layout(config)
    if layer not in layout["sparse_layers"]:
        raise ValueError(f"layer {layer} is not an MoE layer; MoE layers are {layout['sparse_layers']}")
    num_experts, inter, hidden = layout["num_experts"], layout["expert_intermediate_size"], config["hidden_size"]
    owned = list(range(num_experts)) if owned_experts is None else list(owned_experts)
    if len(set(owned)) != len(owned) or any(not 0 <= e < num_experts for e in owned):
        raise ValueError(f"owned_experts must be distinct ids in [0, {num_experts}), got {owned}")
    block, (gate, up, down) = NAMES[_architecture(config)]
    plan = {}
    for local, e in enumerate(owned):
        prefix = f"model.layers.{layer}.{block}.experts.{e}"
        plan[f"{prefix}.{gate}.weight"] = ("w13", local, 0, inter)
        plan[f"{prefix}.{up}.weight"] = ("w13", local, inter, 2 * inter)
        plan[f"{prefix}.{down}.weight"] = ("w2", local, 0, hidden)
    return plan
