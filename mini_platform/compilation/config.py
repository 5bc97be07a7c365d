"""``compilation_config``: which graphs the engine captures, with vLLM's names (pure Python, no torch).

``cudagraph_mode`` is vLLM's ``CUDAGraphMode`` (``vllm/config/compilation.py``; read at commit 009eec3b, the
same values since v0.10.2): three runtime modes a step can run in, and two pairs ``(decode, mixed)`` that pick one
runtime mode for uniform decode batches and another for every other batch.

| mode | uniform decode batch | prefill / mixed batch |
| --- | --- | --- |
| ``NONE`` | eager | eager |
| ``PIECEWISE`` | piecewise graphs | piecewise graphs |
| ``FULL`` | full graph | full graph (needs attention that a graph can hold for any batch) |
| ``FULL_DECODE_ONLY`` | full graph | eager |
| ``FULL_AND_PIECEWISE`` | full graph | piecewise graphs |

Our attention can be held in a full graph for uniform single-token decode batches only (the CPU kernel for mixed
batches loops over requests on the host), vLLM's ``AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE``. vLLM's
``CompilationConfig`` then turns ``FULL`` into ``FULL_AND_PIECEWISE`` when attention is a splitting op (it is here)
with a warning: :func:`resolve_cudagraph_mode` does the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# mode -> (runtime mode of a uniform decode batch, runtime mode of any other batch), as vLLM's decode_mode()/mixed_mode()
CUDAGRAPH_MODES = {
    "NONE": ("NONE", "NONE"),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
    "FULL": ("FULL", "FULL"),
    "FULL_DECODE_ONLY": ("FULL", "NONE"),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE"),
}
RUNTIME_MODES = ("NONE", "PIECEWISE", "FULL")
# The custom ops the model is split at (vLLM's default splitting_ops are its attention ops): see attention_op.py.
SPLITTING_OPS = ("mini_platform::unified_attention_with_output", "mini_platform::unified_mla_attention_with_output")
COMPILATION_CONFIG_KEYS = ("cudagraph_mode",)


@dataclass(frozen=True)
class CompilationConfig:
    """The engine's ``compilation_config``: ``cudagraph_mode`` as given (resolved later for the attention)."""
    cudagraph_mode: str = "FULL_DECODE_ONLY"

    @property
    def needs_piecewise(self) -> bool:
        """Whether some batch replays piecewise graphs (the model is compiled and split), FULL resolved."""
        return "PIECEWISE" in CUDAGRAPH_MODES[resolve_cudagraph_mode(self.cudagraph_mode)]


def parse_compilation_config(value: Mapping[str, Any] | None) -> CompilationConfig | None:
    """``compilation_config={"cudagraph_mode": "PIECEWISE"}`` checked: None stays None (the engine's default),
    a dict may hold only the keys of COMPILATION_CONFIG_KEYS, ``cudagraph_mode`` must be one of CUDAGRAPH_MODES
    (upper or lower case). ValueError naming the key or value that is wrong otherwise."""
    if value is None:
        return None
    if isinstance(value, CompilationConfig):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"compilation_config must be a dict such as {{'cudagraph_mode': 'PIECEWISE'}}, "
                         f"got {type(value).__name__} {value!r:.60}")
    unknown = [k for k in value if k not in COMPILATION_CONFIG_KEYS]
    if unknown:
        raise ValueError(f"compilation_config has unknown keys {unknown}; known: {list(COMPILATION_CONFIG_KEYS)}")
    mode = value.get("cudagraph_mode", "FULL_DECODE_ONLY")
    name = mode.upper() if isinstance(mode, str) else mode
    if name not in CUDAGRAPH_MODES:
        raise ValueError(f"compilation_config cudagraph_mode={mode!r} is not one of {list(CUDAGRAPH_MODES)}")
    return CompilationConfig(name)


def resolve_cudagraph_mode(mode: str, full_graph_support: str = "UNIFORM_SINGLE_TOKEN_DECODE") -> str:
    """The mode the engine runs: ``FULL`` becomes ``FULL_AND_PIECEWISE`` when attention can be held in a full graph
    only for uniform decode batches (``full_graph_support`` other than ``"ALWAYS"``) and attention is a splitting op,
    as vLLM's ``CompilationConfig`` resolves it; every other mode stays."""
    if mode == "FULL" and full_graph_support != "ALWAYS":
        return "FULL_AND_PIECEWISE"
    return mode
