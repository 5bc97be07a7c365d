"""Create a tiny random checkpoint (``config.json`` + ``model.safetensors``) without downloading anything.

The files are in Hugging Face format, so ``transformers`` loads them too. Weights are drawn from a
seeded generator with a spread wide enough that greedy decoding does not sit on near-ties.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from .config import ModelConfig
from .llama import CausalLM
from .loader import checkpoint_targets

ARCHITECTURES = {"llama": ("LlamaForCausalLM", "llama"), "qwen2": ("Qwen2ForCausalLM", "qwen2"),
                 "qwen3": ("Qwen3ForCausalLM", "qwen3"), "mixtral": ("MixtralForCausalLM", "mixtral"),
                 "qwen2_moe": ("Qwen2MoeForCausalLM", "qwen2_moe"), "qwen3_moe": ("Qwen3MoeForCausalLM", "qwen3_moe"),
                 "deepseek_v2": ("DeepseekV2ForCausalLM", "deepseek_v2"),
                 "deepseek_v3": ("DeepseekV3ForCausalLM", "deepseek_v3")}
# DeepSeek's latent attention: 4 heads, a 32-value latent, 16 + 8 query/key dims per head (8 rotary), 16 value dims.
MLA_FIELDS = {"num_key_value_heads": 4, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
              "v_head_dim": 16, "first_k_dense_replace": 1, "moe_intermediate_size": 32}
# The expert settings of the MoE architectures: Mixtral and Qwen 4 experts, 2 per token (Qwen2-MoE adds a shared
# expert); DeepSeek-V3 12 experts in 4 groups (Ascend's gating op needs more than 2 per group), 2 groups and 2
# experts per token, a shared expert, layer 0 dense;
# DeepSeek-V2 in its V2-Lite form (no query bottleneck, plain softmax top-k, 2 shared experts).
MOE_FIELDS = {
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                  "shared_expert_intermediate_size": 64, "norm_topk_prob": False, "decoder_sparse_step": 1,
                  "mlp_only_layers": []},
    "qwen3_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "norm_topk_prob": True,
                  "decoder_sparse_step": 1, "mlp_only_layers": []},
    "deepseek_v3": {**MLA_FIELDS, "q_lora_rank": 24, "n_routed_experts": 12, "num_experts_per_tok": 2, "n_group": 4,
                    "topk_group": 2, "n_shared_experts": 1, "routed_scaling_factor": 2.5, "norm_topk_prob": True,
                    "topk_method": "noaux_tc", "rope_interleave": True},
    "deepseek_v2": {**MLA_FIELDS, "q_lora_rank": None, "n_routed_experts": 8, "num_experts_per_tok": 2,
                    "n_shared_experts": 2, "routed_scaling_factor": 1.0, "norm_topk_prob": False,
                    "topk_method": "greedy"},
}


def tiny_config(arch: str = "llama", **overrides: Any) -> dict[str, Any]:
    """A config.json dict for a 2-layer model with hidden size 64 (fields can be overridden); the MoE
    architectures get :data:`MOE_FIELDS`."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of {sorted(ARCHITECTURES)}")
    architecture, model_type = ARCHITECTURES[arch]
    cfg = {
        "architectures": [architecture], "model_type": model_type, "vocab_size": 257, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "hidden_act": "silu", "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "float32", **MOE_FIELDS.get(arch, {}),
    }
    if arch.startswith("deepseek"):
        del cfg["head_dim"]   # transformers sets it to qk_rope_head_dim
    cfg.update(overrides)
    return cfg


def make_tiny_checkpoint(path: str | Path, arch: str = "llama", seed: int = 0, **overrides: Any) -> Path:
    """Write a random tiny checkpoint to directory ``path`` (created if needed); returns the path."""
    path = Path(path)
    cfg = tiny_config(arch, **overrides)
    model = CausalLM(ModelConfig.from_dict(cfg))
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, target in sorted(checkpoint_targets(model).items()):
        noise = torch.randn(target.shape, generator=generator)
        tensors[name] = 1.0 + 0.1 * noise if name.endswith("norm.weight") else 0.2 * noise
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    return path
