"""The model: Hugging Face config and safetensors loading, Llama/Qwen2 layers, the reference attention."""
from .config import ModelConfig, UnsupportedModelError
from .contiguous_attention import ContiguousAttention, causal_attention, greedy_generate
from .llama import CausalLM
from .loader import CheckpointError, load_model
from .tiny import make_tiny_checkpoint

__all__ = ["CausalLM", "CheckpointError", "ContiguousAttention", "ModelConfig", "UnsupportedModelError",
           "causal_attention", "greedy_generate", "load_model", "make_tiny_checkpoint"]
