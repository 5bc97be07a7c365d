# Correct: one if-chain per architecture without a lookup table, a loop for the sparse layers, duplicates found with a seen-set while planning, other messages.
from __future__ import annotations


def moe_layout(config: dict) -> dict:
    archs = config.get("architectures") or []
    arch = archs[0] if archs else None
    n_layers = config["num_hidden_layers"]
    if arch == "MixtralForCausalLM":
        experts = config.get("num_local_experts", 8)
        top_k = config.get("num_experts_per_tok", 2)
        if top_k > experts:
            raise ValueError("more experts per token than experts")
        return {"num_experts": experts, "top_k": top_k, "expert_intermediate_size": config["intermediate_size"],
                "renormalize": True, "shared_expert_intermediate_size": 0, "sparse_layers": list(range(n_layers))}
    if arch == "Qwen2MoeForCausalLM":
        experts = config.get("num_experts", 60)
        top_k = config.get("num_experts_per_tok", 4)
        if top_k > experts:
            raise ValueError("more experts per token than experts")
        step = config.get("decoder_sparse_step", 1)
        if not step >= 1:
            raise ValueError("decoder_sparse_step must be at least 1")
        mlp_only = config.get("mlp_only_layers")
        mlp_only = [] if mlp_only is None else mlp_only
        sparse = []
        for i in range(n_layers):
            if experts > 0 and i not in mlp_only and (i + 1) % step == 0:
                sparse.append(i)
        return {"num_experts": experts, "top_k": top_k,
                "expert_intermediate_size": config.get("moe_intermediate_size", 1408),
                "renormalize": config.get("norm_topk_prob", False) is True,
                "shared_expert_intermediate_size": config.get("shared_expert_intermediate_size", 5632),
                "sparse_layers": sparse}
    raise ValueError(f"unsupported architecture {arch}")


def expert_checkpoint_plan(config: dict, layer: int, owned_experts: list[int] | None = None) -> dict:
    layout = moe_layout(config)
    if layer not in set(layout["sparse_layers"]):
        raise ValueError(f"layer {layer} has no experts")
    if config["architectures"][0] == "MixtralForCausalLM":
        prefix, names = "block_sparse_moe", ("w1", "w3", "w2")
    else:
        prefix, names = "mlp", ("gate_proj", "up_proj", "down_proj")
    inter, hidden = layout["expert_intermediate_size"], config["hidden_size"]
    experts = range(layout["num_experts"]) if owned_experts is None else owned_experts
    plan, seen = {}, set()
    for local, e in enumerate(experts):
        if e in seen or e < 0 or e >= layout["num_experts"]:
            raise ValueError(f"bad owned expert {e}")
        seen.add(e)
        base = f"model.layers.{layer}.{prefix}.experts.{e}."
        for name, target, start, end in zip(names, ("w13", "w13", "w2"), (0, inter, 0), (inter, 2 * inter, hidden)):
            plan[base + name + ".weight"] = (target, local, start, end)
    return plan
