# Correct: reads the raw settings into a small tuple first and checks everything before building the layout; the plan is built by a dict comprehension over (local, expert, matrix).
from __future__ import annotations

SPEC = {
    "MixtralForCausalLM": {"experts": ("num_local_experts", 8), "top_k": ("num_experts_per_tok", 2),
                           "block": "block_sparse_moe", "names": ("w1", "w3", "w2")},
    "Qwen2MoeForCausalLM": {"experts": ("num_experts", 60), "top_k": ("num_experts_per_tok", 4),
                            "block": "mlp", "names": ("gate_proj", "up_proj", "down_proj")},
}


def _spec(config: dict) -> tuple[str, dict]:
    arch = next(iter(config.get("architectures") or []), None)
    if arch not in SPEC:
        raise ValueError(f"{arch} is neither Mixtral nor Qwen2-MoE")
    return arch, SPEC[arch]


def moe_layout(config: dict) -> dict:
    arch, spec = _spec(config)
    experts = config.get(*spec["experts"])
    top_k = config.get(*spec["top_k"])
    qwen = arch == "Qwen2MoeForCausalLM"
    step = config.get("decoder_sparse_step", 1) if qwen else 1
    if step < 1 or top_k > experts:
        raise ValueError(f"invalid MoE settings: top_k={top_k}, experts={experts}, decoder_sparse_step={step}")
    dense = set(config.get("mlp_only_layers") or ()) if qwen else set()
    layers = range(config["num_hidden_layers"])
    return {
        "sparse_layers": [i for i in layers if experts > 0 and i not in dense and (i + 1) % step == 0],
        "shared_expert_intermediate_size": config.get("shared_expert_intermediate_size", 5632) if qwen else 0,
        "renormalize": bool(config.get("norm_topk_prob", False)) if qwen else True,
        "expert_intermediate_size": config.get("moe_intermediate_size", 1408) if qwen else config["intermediate_size"],
        "top_k": top_k,
        "num_experts": experts,
    }


def expert_checkpoint_plan(config: dict, layer: int, owned_experts: list[int] | None = None) -> dict:
    _, spec = _spec(config)
    layout = moe_layout(config)
    e_total = layout["num_experts"]
    owned = list(range(e_total)) if owned_experts is None else list(owned_experts)
    if sorted(set(owned)) != sorted(owned) or (owned and (min(owned) < 0 or max(owned) >= e_total)):
        raise ValueError("owned_experts: ids must be unique and below num_experts")
    if layer not in layout["sparse_layers"]:
        raise ValueError(f"not an MoE layer: {layer}")
    i, h = layout["expert_intermediate_size"], config["hidden_size"]
    slices = dict(zip(spec["names"], (("w13", 0, i), ("w13", i, 2 * i), ("w2", 0, h))))
    return {f"model.layers.{layer}.{spec['block']}.experts.{e}.{name}.weight": (target, local, lo, hi)
            for local, e in enumerate(owned) for name, (target, lo, hi) in slices.items()}
