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

from .moe_config import MoEConfig, moe_config, reject_unsupported_moe

SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MixtralForCausalLM",
                           "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
MODEL_TYPES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",  # used when 'architectures' is absent
               "qwen3": "Qwen3ForCausalLM", "mixtral": "MixtralForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM",
               "qwen3_moe": "Qwen3MoeForCausalLM", "deepseek_v2": "DeepseekV2ForCausalLM",
               "deepseek_v3": "DeepseekV3ForCausalLM"}
MLA_ARCHITECTURES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
QWEN_ARCHITECTURES = ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
# RoPE kind -> the keys it needs besides rope_theta (original_max_position_embeddings defaults as in transformers).
SUPPORTED_ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
                        "llama3": ("factor", "low_freq_factor", "high_freq_factor"), "yarn": ()}


class UnsupportedModelError(ValueError):
    """The checkpoint asks for something this engine does not implement (architecture, RoPE kind, ...)."""


@dataclass(frozen=True)
class MLAConfig:
    """Multi-head latent attention (DeepSeek-V2/V3): the query goes through a low-rank ``q_lora_rank`` bottleneck
    (None: one ``q_proj``, as in V2-Lite); keys and values come from one cached latent of ``kv_lora_rank`` values
    plus a rotary key of ``qk_rope_head_dim`` shared by every head."""
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_interleave: bool = True   # rotate pairs (x0, x1), (x2, x3), ... (V2 always; V3 unless configured off)

    def __post_init__(self) -> None:
        for name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                raise ValueError(f"config field {name} must be a positive integer, got {value!r}")
        if self.q_lora_rank is not None and (not _is_int(self.q_lora_rank) or self.q_lora_rank <= 0):
            raise ValueError(f"config field q_lora_rank must be a positive integer or null, got {self.q_lora_rank!r}")
        if self.qk_rope_head_dim % 2:
            raise ValueError(f"qk_rope_head_dim={self.qk_rope_head_dim} must be even for rotary embeddings")

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @classmethod
    def from_dict(cls, arch: str, cfg: dict[str, Any]) -> "MLAConfig":
        missing = [k for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim") if cfg.get(k) is None]
        if missing:
            raise ValueError(f"config.json of {arch} lacks the MLA field(s) {missing}")
        interleave = True if arch == "DeepseekV2ForCausalLM" else cfg.get("rope_interleave", True) is not False
        return cls(cfg.get("q_lora_rank"), cfg["kv_lora_rank"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"],
                   cfg["v_head_dim"], interleave)


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
    rope_scaling: dict[str, Any] | None = None  # None = plain RoPE; else {"rope_type": "linear" | "llama3" | ..., ...}
    tie_word_embeddings: bool = False
    qkv_bias: bool = False      # Llama: attention_bias; Qwen2: always
    o_proj_bias: bool = False   # Llama: attention_bias; Qwen2: never
    mlp_bias: bool = False
    eos_token_id: int | list[int] | None = None
    dtype: str = "float32"      # the checkpoint's dtype (``torch_dtype`` / ``dtype``), as a name
    moe: MoEConfig | None = None  # experts (Mixtral, Qwen2/3-MoE, DeepSeek); None = every layer has a dense MLP
    qk_norm: bool = False       # Qwen3: RMSNorm over each head of q and k before RoPE
    mla: MLAConfig | None = None  # DeepSeek-V2/V3: latent attention (``head_dim`` is then qk_rope_head_dim)
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
        eos = self.eos_token_id
        if not (eos is None or _is_int(eos) or (isinstance(eos, list) and all(_is_int(t) for t in eos))):
            raise ValueError(f"eos_token_id must be an integer or a list of integers, got {eos!r}; "
                             "fix config.json (or generation_config.json)")

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
        arch = archs[0] if archs else MODEL_TYPES.get(cfg.get("model_type"))  # transformers' Auto* falls back too
        refusal = reject_unsupported_moe(arch, cfg)
        if refusal:
            raise UnsupportedModelError(refusal)
        if arch not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(
                f"unsupported architecture {arch!r} (config.json 'architectures' = {archs!r}, "
                f"'model_type' = {cfg.get('model_type')!r}); mini_platform implements {', '.join(SUPPORTED_ARCHITECTURES)}")
        act = cfg.get("hidden_act", "silu")
        if act not in ("silu", "swish"):  # transformers maps both names to SiLU
            raise UnsupportedModelError(f"hidden_act={act!r} is not supported; only 'silu' (SwiGLU MLP) is")
        if arch in QWEN_ARCHITECTURES or arch == "MixtralForCausalLM":  # Llama and DeepSeek have no sliding window
            _reject_sliding_window(cfg, arch)
        missing = [k for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if cfg.get(k) is None]
        if missing:
            raise ValueError(f"config.json lacks required field(s) {missing}")
        heads = cfg["num_attention_heads"]
        mla = MLAConfig.from_dict(arch, cfg) if arch in MLA_ARCHITECTURES else None
        head_dim = mla.qk_rope_head_dim if mla else cfg.get("head_dim") or cfg["hidden_size"] // heads  # as transformers
        if not mla and not cfg.get("head_dim") and cfg["hidden_size"] % heads:
            raise ValueError(f"hidden_size={cfg['hidden_size']} is not divisible by num_attention_heads={heads} "
                             "and config.json gives no head_dim")
        theta, scaling = rope_settings(cfg)  # looked up at call time (exercise 200 stands in for it)
        is_qwen2 = arch in ("Qwen2ForCausalLM", "Qwen2MoeForCausalLM")  # Qwen3 has Llama's attention_bias
        attention_bias = bool(cfg.get("attention_bias", False))
        if arch == "Qwen2MoeForCausalLM":  # transformers' Qwen2MoeConfig: qkv_bias, default on
            attention_bias = bool(cfg.get("qkv_bias", True))
        return cls(
            architecture=arch,
            vocab_size=cfg["vocab_size"],
            hidden_size=cfg["hidden_size"],
            intermediate_size=cfg["intermediate_size"],
            num_hidden_layers=cfg["num_hidden_layers"],
            num_attention_heads=heads,
            num_key_value_heads=heads if mla else cfg.get("num_key_value_heads") or heads,  # MLA: a latent for all
            head_dim=head_dim,
            max_position_embeddings=cfg.get("max_position_embeddings", 2048),
            rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            qkv_bias=attention_bias if arch == "Qwen2MoeForCausalLM" else (is_qwen2 or attention_bias),
            o_proj_bias=not is_qwen2 and attention_bias,
            mlp_bias=bool(cfg.get("mlp_bias", False)),
            eos_token_id=cfg.get("eos_token_id"),
            dtype=str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32"),
            moe=moe_config(arch, cfg),
            qk_norm=arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
            mla=mla,
            raw=dict(cfg),
        )

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "ModelConfig":
        """Read ``<path>/config.json``; an ``eos_token_id`` in ``generation_config.json`` takes precedence,
        as it does in transformers' ``generate`` (e.g. Llama 3 instruct lists more stop tokens there)."""
        path = Path(path)
        config_file = path / "config.json"
        if not config_file.is_file():
            raise FileNotFoundError(f"{config_file} not found: a model directory needs a Hugging Face config.json")
        cfg = read_json_object(config_file)
        generation_file = path / "generation_config.json"
        if generation_file.is_file():
            eos = read_json_object(generation_file).get("eos_token_id")
            if eos is not None:
                cfg["eos_token_id"] = eos
        return cls.from_dict(cfg)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_json_object(file: Path) -> dict[str, Any]:
    """The JSON object in ``file``; a ValueError naming the file when it is not valid JSON or not an object."""
    try:
        value = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file} is not valid JSON ({exc}); fix the file or download it again") from None
    if not isinstance(value, dict):
        raise ValueError(f"{file} must hold a JSON object ({{...}}), but it holds a {type(value).__name__}")
    return value


def rope_settings(cfg: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """``(rope_theta, scaling)`` from either spelling; scaling is None for plain RoPE (exercise 200 has this contract).

    Follows transformers 5: a legacy ``rope_scaling`` dict wins over ``rope_parameters``; ``rope_theta``
    inside the dict wins over the top-level one; ``original_max_position_embeddings`` (llama3, yarn)
    defaults to the top-level one, else to ``max_position_embeddings``.
    """
    params = dict(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})
    theta = next((t for t in (params.pop("rope_theta", None), cfg.get("rope_theta"), 10000.0) if t is not None))
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or not 0 < theta < float("inf"):
        raise ValueError(f"rope_theta must be a positive number, got {theta!r}; fix config.json")
    theta = float(theta)
    kind = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    if kind not in SUPPORTED_ROPE_TYPES:
        raise UnsupportedModelError(f"RoPE scaling type {kind!r} is not supported; "
                                    f"mini_platform implements {', '.join(SUPPORTED_ROPE_TYPES)}")
    if (params.get("partial_rotary_factor") or cfg.get("partial_rotary_factor") or 1.0) != 1.0:
        raise UnsupportedModelError("partial_rotary_factor != 1 is not supported for Llama/Qwen2 models")
    missing = [k for k in SUPPORTED_ROPE_TYPES[kind] if params.get(k) is None]
    if missing:
        raise ValueError(f"RoPE scaling {kind!r} in config.json lacks {missing}; add them to 'rope_scaling' "
                         "(or 'rope_parameters')")
    if kind == "default":
        return theta, None
    if kind in ("llama3", "yarn"):
        params["original_max_position_embeddings"] = (cfg.get("original_max_position_embeddings")
                                                      or params.get("original_max_position_embeddings")
                                                      or cfg.get("max_position_embeddings", 2048))
    if kind == "yarn" and params.get("factor") is None:
        params["factor"] = cfg.get("max_position_embeddings", 2048) / params["original_max_position_embeddings"]
    return theta, {"rope_type": kind, **params}


def _sliding_by_default(arch: str, layer: int, max_window_layers: int) -> bool:
    """transformers' default ``layer_types``: Qwen2 and Qwen3 slide from ``max_window_layers`` on; Qwen2-MoE on the
    even layers below it (``(i + 1) % 2 and i < max_window_layers``); Mixtral and Qwen3-MoE on every layer."""
    if arch == "Qwen2MoeForCausalLM":
        return bool((layer + 1) % 2) and layer < max_window_layers
    return arch in ("MixtralForCausalLM", "Qwen3MoeForCausalLM") or layer >= max_window_layers


def _reject_sliding_window(cfg: dict[str, Any], arch: str) -> None:
    """Slide only where transformers would: a ``sliding_window`` set (Qwen2 and Qwen2-MoE also need
    ``use_sliding_window``), on the layers ``layer_types`` marks (default: :func:`_sliding_by_default`).
    A window that covers the whole context (``>= max_position_embeddings``) changes nothing, so it is accepted
    as full attention."""
    window = cfg.get("sliding_window")
    if window is None or (arch != "MixtralForCausalLM" and not cfg.get("use_sliding_window")):
        return
    first = cfg.get("max_window_layers")
    first = 28 if first is None else first  # Qwen2Config's default
    layer_types = cfg.get("layer_types") or ["sliding_attention" if _sliding_by_default(arch, i, first)
                                             else "full_attention" for i in range(cfg.get("num_hidden_layers") or 0)]
    sliding = [i for i, t in enumerate(layer_types) if t == "sliding_attention"]
    if sliding and window < (cfg.get("max_position_embeddings") or 32768):
        raise UnsupportedModelError(f"sliding-window attention (sliding_window={window} on layers {sliding}) is not "
                                    "supported; only full attention is (set use_sliding_window=false, or "
                                    "sliding_window=null for Mixtral)")
