"""``MoEConfig``: the mixture-of-experts fields of a Mixtral, Qwen2-MoE, Qwen3-MoE or DeepSeek-V2/V3 ``config.json``,
checked once.

Pure Python (no torch). Field names and defaults follow transformers 5.24's ``MixtralConfig``, ``Qwen2MoeConfig``,
``Qwen3MoeConfig``, ``DeepseekV2Config`` and ``DeepseekV3Config``. Which layers are sparse: Qwen2/3-MoE layer ``i``
when ``i not in mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0``; DeepSeek from
``first_k_dense_replace`` on (the first k layers keep a dense MLP).

Routing: softmax top-k (Mixtral, Qwen); DeepSeek-V2 softmax, with ``topk_method="group_limited_greedy"`` limited to
the ``topk_group`` best of ``n_group`` expert groups; DeepSeek-V3 sigmoid scores, an ``e_score_correction_bias`` that
steers the choice only, groups scored by their two best experts. DeepSeek scales the weights by
``routed_scaling_factor`` and adds ``n_shared_experts`` always-on experts (one MLP, ungated).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MOE_ARCHITECTURES = ("MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM",
                     "DeepseekV3ForCausalLM")
DEEPSEEK = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")

# Architectures with experts that this engine refuses, and the feature it lacks for each.
UNSUPPORTED_MOE = {
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
    renormalize: bool                     # divide the top-k weights by their sum (Mixtral; Qwen/DeepSeek norm_topk_prob)
    sparse_layers: tuple[int, ...]        # layer indices with an MoE block; the others have a dense MLP
    shared_expert_intermediate_size: int = 0   # 0 = no shared expert (Qwen2-MoE's is sigmoid-gated, DeepSeek's not)
    block_name: str = "mlp"               # the checkpoint's module name: Mixtral "block_sparse_moe", the others "mlp"
    expert_weight_names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")  # Mixtral: w1, w3, w2
    shared_expert_name: str = "shared_expert"   # DeepSeek: "shared_experts", added without a gate
    scoring_func: str = "softmax"         # DeepSeek-V3: "sigmoid"
    num_expert_group: int = 1             # DeepSeek: n_group (1 = plain top-k over all experts)
    topk_group: int = 1                   # DeepSeek: how many groups a token may choose from
    routed_scaling_factor: float = 1.0    # DeepSeek: multiplies the routed weights
    correction_bias: bool = False         # DeepSeek-V3: gate.e_score_correction_bias steers the choice

    def __post_init__(self) -> None:
        for name in ("num_experts", "top_k", "intermediate_size", "num_expert_group", "topk_group"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"MoE config field {name} must be a positive integer, got {value!r}")
        if self.top_k > self.num_experts:
            raise ValueError(f"num_experts_per_tok={self.top_k} exceeds the number of experts {self.num_experts}")
        if self.shared_expert_intermediate_size < 0:
            raise ValueError(f"shared_expert_intermediate_size must be >= 0, got {self.shared_expert_intermediate_size}")
        if self.num_experts % self.num_expert_group or self.topk_group > self.num_expert_group:
            raise ValueError(f"n_group={self.num_expert_group} must divide the {self.num_experts} experts and be at "
                             f"least topk_group={self.topk_group}")
        if self.top_k > self.topk_group * (self.num_experts // self.num_expert_group):
            raise ValueError(f"num_experts_per_tok={self.top_k} exceeds the experts of the topk_group={self.topk_group} "
                             f"groups a token may choose from")

    @property
    def grouped(self) -> bool:
        """Routed by ``ops.moe_grouped_topk`` (DeepSeek) rather than ``ops.moe_topk_softmax``."""
        return (self.scoring_func != "softmax" or self.num_expert_group > 1 or self.correction_bias
                or self.routed_scaling_factor != 1.0)


def reject_unsupported_moe(arch: str | None, cfg: dict[str, Any]) -> str | None:
    """The reason an MoE checkpoint cannot run here, or None. Checked before the generic architecture check,
    so that a refused MoE model is named with the feature it needs."""
    if arch in UNSUPPORTED_MOE:
        return f"{arch} is not supported ({UNSUPPORTED_MOE[arch]}); mini_platform's MoE models are {', '.join(MOE_ARCHITECTURES)}"
    if arch in DEEPSEEK:
        return _reject_unsupported_deepseek(arch, cfg)
    if arch in MOE_ARCHITECTURES:
        odd = {k: cfg[k] for k, allowed in ROUTING_OPTIONS.items() if k in cfg and cfg[k] not in allowed}
        if odd:
            return (f"{arch} with routing options {odd} is not supported; only softmax top-k routing "
                    "(no expert groups, no score bias or scaling) is implemented")
    return None


def _reject_unsupported_deepseek(arch: str, cfg: dict[str, Any]) -> str | None:
    """What a DeepSeek config asks for that transformers 5.24 (the oracle) and this engine do not agree on."""
    if (cfg.get("moe_layer_freq") or 1) != 1:
        return (f"{arch} with moe_layer_freq={cfg['moe_layer_freq']} is not supported: transformers 5.24 ignores it "
                "(every layer from first_k_dense_replace on is MoE); use moe_layer_freq=1")
    if arch == "DeepseekV2ForCausalLM":
        if cfg.get("topk_method", "greedy") not in ("greedy", "group_limited_greedy"):
            return f"{arch} with topk_method={cfg.get('topk_method')!r} is not supported; use greedy or group_limited_greedy"
        if cfg.get("norm_topk_prob"):
            return (f"{arch} with norm_topk_prob=true is not supported: transformers 5.24's DeepseekV2 router never "
                    "renormalises (DeepSeek's own code and vLLM do); released V2 checkpoints use false")
    elif cfg.get("topk_method", "noaux_tc") not in ("noaux_tc", None):
        return f"{arch} with topk_method={cfg.get('topk_method')!r} is not supported; DeepSeek-V3 routes with noaux_tc"
    return None


def _deepseek_moe(arch: str, cfg: dict[str, Any], layers: int) -> MoEConfig | None:
    """DeepSeek-V2/V3: routed experts from ``first_k_dense_replace`` on, plus ``n_shared_experts`` in one MLP."""
    first_dense = cfg.get("first_k_dense_replace") or 0
    sparse = tuple(range(first_dense, layers))
    v3 = arch == "DeepseekV3ForCausalLM"
    num_experts = cfg.get("n_routed_experts", 256 if v3 else 64)
    if not sparse or not num_experts:
        return None
    inter = cfg.get("moe_intermediate_size", 2048 if v3 else 1407)
    grouped = v3 or cfg.get("topk_method") == "group_limited_greedy"
    shared = cfg.get("n_shared_experts", 1 if v3 else 2) or 0
    return MoEConfig(num_experts=num_experts, top_k=cfg.get("num_experts_per_tok") or (8 if v3 else 6),
                     intermediate_size=inter, renormalize=bool(cfg.get("norm_topk_prob", v3)), sparse_layers=sparse,
                     shared_expert_intermediate_size=inter * shared, shared_expert_name="shared_experts",
                     scoring_func="sigmoid" if v3 else "softmax",
                     num_expert_group=(cfg.get("n_group") or 1) if grouped else 1,
                     topk_group=(cfg.get("topk_group") or 1) if grouped else 1,
                     routed_scaling_factor=float(cfg.get("routed_scaling_factor", 2.5 if v3 else 1.0)),
                     correction_bias=v3)


def moe_config(arch: str, cfg: dict[str, Any]) -> MoEConfig | None:
    """The MoE settings of a Mixtral / Qwen2-MoE / Qwen3-MoE / DeepSeek config (None for a dense architecture, or
    when no layer is sparse)."""
    layers = cfg.get("num_hidden_layers") or 0
    if arch == "MixtralForCausalLM":
        return MoEConfig(num_experts=cfg.get("num_local_experts", 8), top_k=cfg.get("num_experts_per_tok", 2),
                         intermediate_size=cfg["intermediate_size"], renormalize=True,
                         sparse_layers=tuple(range(layers)), block_name="block_sparse_moe",
                         expert_weight_names=("w1", "w3", "w2"))
    if arch in DEEPSEEK:
        return _deepseek_moe(arch, cfg, layers)
    if arch in ("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"):
        qwen3 = arch == "Qwen3MoeForCausalLM"
        # transformers 5.24 saves Qwen3-MoE's num_experts as num_local_experts (its attribute_map); hub files say num_experts
        num_experts = cfg.get("num_experts", cfg.get("num_local_experts", 128) if qwen3 else 60)
        step = cfg.get("decoder_sparse_step", 1)
        dense = cfg.get("mlp_only_layers") or []
        if not isinstance(step, int) or step < 1:
            raise ValueError(f"decoder_sparse_step must be a positive integer, got {step!r}")
        if not isinstance(dense, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in dense):
            raise ValueError(f"mlp_only_layers must be a list of layer indices (integers), got {dense!r}")
        sparse = tuple(i for i in range(layers) if i not in dense and num_experts > 0 and (i + 1) % step == 0)
        if not sparse:
            return None
        if qwen3:  # no shared expert; norm_topk_prob defaults to false in Qwen3MoeConfig too
            return MoEConfig(num_experts=num_experts, top_k=cfg.get("num_experts_per_tok", 8),
                             intermediate_size=cfg.get("moe_intermediate_size", 768),
                             renormalize=bool(cfg.get("norm_topk_prob", False)), sparse_layers=sparse)
        return MoEConfig(num_experts=num_experts, top_k=cfg.get("num_experts_per_tok", 4),
                         intermediate_size=cfg.get("moe_intermediate_size", 1408),
                         renormalize=bool(cfg.get("norm_topk_prob", False)), sparse_layers=sparse,
                         shared_expert_intermediate_size=cfg.get("shared_expert_intermediate_size", 5632))
    return None
