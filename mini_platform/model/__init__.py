"""The model: Hugging Face config and safetensors loading, Llama/Qwen2 layers, Mixtral/Qwen2-MoE expert blocks,
the reference attention."""
from .config import ModelConfig, UnsupportedModelError
from .contiguous_attention import ContiguousAttention, causal_attention, greedy_generate
from .llama import CausalLM
from .loader import CheckpointError, load_model
from .moe import SparseMoeBlock, expert_map_for_rank
from .moe_config import MoEConfig
from .tiny import make_tiny_checkpoint

__all__ = ["CausalLM", "CheckpointError", "ContiguousAttention", "MoEConfig", "ModelConfig", "SparseMoeBlock",
           "UnsupportedModelError", "causal_attention", "expert_map_for_rank", "greedy_generate", "load_model",
           "make_tiny_checkpoint"]
