"""``MoEConfig``: the mixture-of-experts fields of a Mixtral or Qwen2-MoE ``config.json``, checked once.

Pure Python (no torch). Field names and defaults follow transformers' ``MixtralConfig`` and
``Qwen2MoeConfig``; which layers are sparse follows ``Qwen2MoeDecoderLayer``: layer ``i`` is MoE when
``i not in mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MOE_ARCHITECTURES = ("MixtralForCausalLM", "Qwen2MoeForCausalLM")

# Architectures with experts that this engine refuses, and the feature it lacks for each.
UNSUPPORTED_MOE = {
    "DeepseekV2ForCausalLM": "DeepSeek-V2 MoE: grouped top-k routing (n_group / topk_group) and multi-head latent attention",
    "DeepseekV3ForCausalLM": "DeepSeek-V3 MoE: grouped top-k routing with sigmoid scores and e_score_correction_bias, "
                             "and multi-head latent attention",
    "Qwen3MoeForCausalLM": "Qwen3-MoE: per-head q/k RMSNorm in attention (Qwen3 attention is not implemented)",
    "OlmoeForCausalLM": "OLMoE: q/k RMSNorm in attention",
    "PhimoeForCausalLM": "Phi-MoE: sparsemixer routing",
    "GraniteMoeForCausalLM": "Granite-MoE: scaled residuals and embeddings",
    "JambaForCausalLM": "Jamba: Mamba layers",
    "DbrxForCausalLM": "DBRX: fused expert layout and clipped QKV",
}

# Routing options some MoE configs carry; any of them set to a non-default value is refused by name.
ROUTING_OPTIONS = {"n_group": (None, 1), "topk_group": (None, 1), "scoring_func": (None, "softmax"),
                   "routed_scaling_factor": (None, 1, 1.0), "topk_method": (None, "greedy"),
                   "moe_router_enable_expert_bias": (None, False)}


@dataclass(frozen=True)
class MoEConfig:
    num_experts: int
    top_k: int
    intermediate_size: int                # of each routed expert
    renormalize: bool                     # divide the top-k weights by their sum (Mixtral; Qwen2-MoE norm_topk_prob)
    sparse_layers: tuple[int, ...]        # layer indices with an MoE block; the others have a dense MLP
    shared_expert_intermediate_size: int = 0   # 0 = no shared expert (Qwen2-MoE's is sigmoid-gated)
    block_name: str = "mlp"               # the checkpoint's module name: Mixtral "block_sparse_moe", Qwen2-MoE "mlp"
    expert_weight_names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")  # Mixtral: w1, w3, w2

    def __post_init__(self) -> None:
        for name in ("num_experts", "top_k", "intermediate_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"MoE config field {name} must be a positive integer, got {value!r}")
        if self.top_k > self.num_experts:
            raise ValueError(f"num_experts_per_tok={self.top_k} exceeds the number of experts {self.num_experts}")
        if self.shared_expert_intermediate_size < 0:
            raise ValueError(f"shared_expert_intermediate_size must be >= 0, got {self.shared_expert_intermediate_size}")


def reject_unsupported_moe(arch: str | None, cfg: dict[str, Any]) -> str | None:
    """The reason an MoE checkpoint cannot run here, or None. Checked before the generic architecture check,
    so that a refused MoE model is named with the feature it needs."""
    if arch in UNSUPPORTED_MOE:
        return f"{arch} is not supported ({UNSUPPORTED_MOE[arch]}); mini_platform's MoE models are {', '.join(MOE_ARCHITECTURES)}"
    if arch in MOE_ARCHITECTURES:
        odd = {k: cfg[k] for k, allowed in ROUTING_OPTIONS.items() if k in cfg and cfg[k] not in allowed}
        if odd:
            return (f"{arch} with routing options {odd} is not supported; only softmax top-k routing "
                    "(no expert groups, no score bias or scaling) is implemented")
    return None


def moe_config(arch: str, cfg: dict[str, Any]) -> MoEConfig | None:
    """The MoE settings of a Mixtral / Qwen2-MoE config (None for a dense architecture, or when no layer is sparse)."""
    layers = cfg.get("num_hidden_layers") or 0
    if arch == "MixtralForCausalLM":
        return MoEConfig(num_experts=cfg.get("num_local_experts", 8), top_k=cfg.get("num_experts_per_tok", 2),
                         intermediate_size=cfg["intermediate_size"], renormalize=True,
                         sparse_layers=tuple(range(layers)), block_name="block_sparse_moe",
                         expert_weight_names=("w1", "w3", "w2"))
    if arch == "Qwen2MoeForCausalLM":
        num_experts = cfg.get("num_experts", 60)
        step = cfg.get("decoder_sparse_step", 1)
        dense = set(cfg.get("mlp_only_layers") or [])
        if not isinstance(step, int) or step < 1:
            raise ValueError(f"decoder_sparse_step must be a positive integer, got {step!r}")
        sparse = tuple(i for i in range(layers) if i not in dense and num_experts > 0 and (i + 1) % step == 0)
        if not sparse:
            return None
        return MoEConfig(num_experts=num_experts, top_k=cfg.get("num_experts_per_tok", 4),
                         intermediate_size=cfg.get("moe_intermediate_size", 1408),
                         renormalize=bool(cfg.get("norm_topk_prob", False)), sparse_layers=sparse,
                         shared_expert_intermediate_size=cfg.get("shared_expert_intermediate_size", 5632))
    return None
