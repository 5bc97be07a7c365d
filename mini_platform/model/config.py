"""``ModelConfig``: the fields of a Hugging Face ``config.json`` this engine uses, checked once.

Pure Python (no torch), so the engine can read a checkpoint's geometry before it builds anything.
Both spellings of RoPE settings are accepted: transformers 5 writes ``rope_parameters``
(``{"rope_type": ..., "rope_theta": ...}``); older files have ``rope_theta`` and ``rope_scaling``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM")
SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3")


class UnsupportedModelError(ValueError):
    """The checkpoint asks for something this engine does not implement (architecture, RoPE kind, ...)."""


@dataclass(frozen=True)
class ModelConfig:
    architecture: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] | None = None  # None = plain RoPE; else {"rope_type": "linear" | "llama3", ...}
    tie_word_embeddings: bool = False
    qkv_bias: bool = False      # Llama: attention_bias; Qwen2: always
    o_proj_bias: bool = False   # Llama: attention_bias; Qwen2: never
    mlp_bias: bool = False
    eos_token_id: int | list[int] | None = None
    dtype: str = "float32"      # the checkpoint's dtype (``torch_dtype`` / ``dtype``), as a name
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"config field {name} must be a positive integer, got {value!r}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads={self.num_key_value_heads}; grouped-query attention needs it")
        if self.head_dim % 2:
            raise ValueError(f"head_dim={self.head_dim} must be even for rotary embeddings")

    # -- derived geometry ------------------------------------------------------------------------
    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def num_queries_per_kv(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """``eos_token_id`` as a tuple (empty when the checkpoint names none)."""
        if self.eos_token_id is None:
            return ()
        return (self.eos_token_id,) if isinstance(self.eos_token_id, int) else tuple(self.eos_token_id)

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> "ModelConfig":
        """Build from the parsed ``config.json``; unsupported features raise :class:`UnsupportedModelError`."""
        archs = cfg.get("architectures") or []
        arch = archs[0] if archs else None
        if arch not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(
                f"unsupported architecture {arch!r} (config.json 'architectures' = {archs!r}); "
                f"mini_platform implements {', '.join(SUPPORTED_ARCHITECTURES)}")
        act = cfg.get("hidden_act", "silu")
        if act != "silu":
            raise UnsupportedModelError(f"hidden_act={act!r} is not supported; only 'silu' (SwiGLU MLP) is")
        _reject_sliding_window(cfg)
        missing = [k for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if cfg.get(k) is None]
        if missing:
            raise ValueError(f"config.json lacks required field(s) {missing}")
        heads = cfg["num_attention_heads"]
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
        if not cfg.get("head_dim") and cfg["hidden_size"] % heads:
            raise ValueError(f"hidden_size={cfg['hidden_size']} is not divisible by num_attention_heads={heads} "
                             "and config.json gives no head_dim")
        theta, scaling = _rope_settings(cfg)
        is_qwen2 = arch == "Qwen2ForCausalLM"
        attention_bias = bool(cfg.get("attention_bias", False))
        return cls(
            architecture=arch,
            vocab_size=cfg["vocab_size"],
            hidden_size=cfg["hidden_size"],
            intermediate_size=cfg["intermediate_size"],
            num_hidden_layers=cfg["num_hidden_layers"],
            num_attention_heads=heads,
            num_key_value_heads=cfg.get("num_key_value_heads") or heads,
            head_dim=head_dim,
            max_position_embeddings=cfg.get("max_position_embeddings", 2048),
            rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            qkv_bias=is_qwen2 or attention_bias,
            o_proj_bias=not is_qwen2 and attention_bias,
            mlp_bias=bool(cfg.get("mlp_bias", False)),
            eos_token_id=cfg.get("eos_token_id"),
            dtype=str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32"),
            raw=dict(cfg),
        )

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "ModelConfig":
        """Read ``<path>/config.json`` (and ``generation_config.json`` for a missing ``eos_token_id``)."""
        path = Path(path)
        config_file = path / "config.json"
        if not config_file.is_file():
            raise FileNotFoundError(f"{config_file} not found: a model directory needs a Hugging Face config.json")
        cfg = json.loads(config_file.read_text())
        generation_file = path / "generation_config.json"
        if cfg.get("eos_token_id") is None and generation_file.is_file():
            cfg["eos_token_id"] = json.loads(generation_file.read_text()).get("eos_token_id")
        return cls.from_dict(cfg)


def _rope_settings(cfg: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """``(rope_theta, scaling)`` from either spelling; scaling is None for plain RoPE."""
    params = dict(cfg.get("rope_parameters") or cfg.get("rope_scaling") or {})
    theta = float(params.pop("rope_theta", cfg.get("rope_theta", 10000.0)))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind not in SUPPORTED_ROPE_TYPES:
        raise UnsupportedModelError(f"RoPE scaling type {kind!r} is not supported; "
                                    f"mini_platform implements {', '.join(SUPPORTED_ROPE_TYPES)}")
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise UnsupportedModelError("partial_rotary_factor != 1 is not supported for Llama/Qwen2 models")
    if kind == "default":
        return theta, None
    params["rope_type"] = kind
    params.pop("type", None)
    return theta, params


def _reject_sliding_window(cfg: dict[str, Any]) -> None:
    layer_types = cfg.get("layer_types") or []
    if cfg.get("use_sliding_window") or any(t != "full_attention" for t in layer_types):
        raise UnsupportedModelError("sliding-window attention layers are not supported; "
                                    "only full attention (use_sliding_window=false) is")
