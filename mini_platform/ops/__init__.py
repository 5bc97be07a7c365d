"""One interface per kernel, dispatched to the backend the current platform names.

Backends are packages with one module per kernel family; this module knows where each kernel
lives and imports the backend module on first use:

| backend | package | runs on |
| --- | --- | --- |
| ``cpu`` | ``mini_platform.ops.cpu`` | anywhere; plain torch; the specification every other backend is tested against |
| ``triton`` | ``mini_platform.ops.triton`` | NVIDIA GPUs (on CPU only under ``TRITON_INTERPRET=1``) |
| ``npu`` | ``mini_platform.ascend.ops`` | Ascend NPUs, through torch_npu as vllm-ascend calls it |

An out-of-tree platform adds its own backend with :func:`register_backend` (from a general plugin,
before the engine starts) and names it in its ``kernel_backend``.

``linear`` (the matmul of every linear layer) is the one kernel a backend may leave out: without its own it gets
``torch.nn.functional.linear`` on whatever device the tensors live (``DEFAULT_KERNELS``), as vLLM's
``dispatch_unquantized_gemm`` gives every platform but ROCm and the CPU ``F.linear`` (vLLM commit 0035860,
``vllm/model_executor/layers/utils.py``). The ``cpu`` backend has its own: a compiled GEMV for one bf16 token.

The backend is, in order: the ``backend=`` argument, the innermost :func:`use_backend` block, the
``MINI_PLATFORM_KERNEL_BACKEND`` variable, ``current_platform.kernel_backend``. A backend that lacks
any other kernel raises :class:`KernelUnavailableError`; there is never a silent fallback to another backend.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from typing import Any, Callable, Iterator

from .. import envs

BACKEND_PACKAGES = {
    "cpu": "mini_platform.ops.cpu",
    "triton": "mini_platform.ops.triton",
    "npu": "mini_platform.ascend.ops",
}

_BUILTIN_BACKENDS = frozenset(BACKEND_PACKAGES)

# kernel name -> module (inside each backend package) that defines a function of the same name.
KERNEL_MODULES = {
    "rms_norm": "layernorm",
    "fused_add_rms_norm": "layernorm",
    "rotary_embedding": "rotary",
    "silu_and_mul": "activation",
    "reshape_and_cache": "attention",
    "paged_decode_attention": "attention",
    "paged_attention": "attention",
    "moe_topk_softmax": "moe",
    "moe_grouped_topk": "moe",
    "fused_experts": "moe",
    "concat_and_cache_mla": "mla",
    "mla_decode_attention": "mla",
    "gather_mla_cache": "mla",
    "mla_prefill_attention": "mla",
    "linear": "linear",
}

# Kernels a backend may leave out, and the module whose function of the same name serves them then.
DEFAULT_KERNELS = {"linear": "torch.nn.functional"}
_missing_modules: set[str] = set()   # backend modules of DEFAULT_KERNELS found missing once: not searched again


class KernelUnavailableError(NotImplementedError):
    """The chosen backend does not implement this kernel."""

    def __init__(self, kernel: str, backend: str, reason: str = "") -> None:
        self.kernel, self.backend = kernel, backend
        detail = f": {reason}" if reason else ""
        super().__init__(f"kernel {kernel!r} is not available in the {backend!r} backend{detail}")


_local = threading.local()


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[None]:
    """Run the kernels called inside the block on backend ``name`` (per thread, nestable)."""
    _check_backend(name)
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


def register_backend(name: str, package: str) -> None:
    """Add kernel backend ``name``, served by ``package``: one module per kernel family, named as in
    ``KERNEL_MODULES`` (``layernorm``, ``rotary``, ``activation``, ``attention``, ``moe``, ``mla``; ``linear`` is
    optional), each defining the kernels of the same names. Nothing is imported until a kernel is first asked for.
    Registering a name again with the same package does nothing; with another package it is an error (built-ins
    included).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a kernel backend name must be a Python identifier, got {name!r}")
    if not isinstance(package, str) or not all(part.isidentifier() for part in package.split(".")):
        raise ValueError(f"package must be a dotted module path such as 'my_plugin.ops', got {package!r}")
    registered = BACKEND_PACKAGES.get(name)
    if registered is not None and registered != package:
        raise ValueError(f"kernel backend {name!r} is already served by {registered!r}; pick another name")
    BACKEND_PACKAGES[name] = package
    _missing_modules.clear()   # a package registered anew (a rebuilt plugin) is searched again


def unregister_backend(name: str) -> None:
    """Remove a backend added with :func:`register_backend` (tests, notebooks); the built-in ones stay.
    The next kernel lookup of ``name`` sees whatever is registered then."""
    if name in _BUILTIN_BACKENDS:
        raise ValueError(f"{name!r} is a built-in kernel backend and cannot be unregistered")
    BACKEND_PACKAGES.pop(name, None)
    _missing_modules.clear()


def _check_backend(name: str) -> None:
    if name not in BACKEND_PACKAGES:
        raise ValueError(f"unknown kernel backend {name!r}; choose one of {sorted(BACKEND_PACKAGES)}")


def current_backend(backend: str | None = None) -> str:
    """The backend a kernel call would use now (see the module docstring for the order)."""
    stack = getattr(_local, "stack", None)
    name = backend or (stack[-1] if stack else None) or envs.kernel_backend()
    if name is None:
        from ..platforms import current_platform
        name = current_platform.kernel_backend
    _check_backend(name)
    return name


def get_kernel(kernel: str, backend: str | None = None) -> Callable[..., Any]:
    """The implementation of ``kernel`` in ``backend`` (or the current backend).

    The backend's module is imported once; the function is looked up on it at every call, so a kernel
    swapped on the module (``monkeypatch``, a learner's own implementation) takes effect at once.
    Inside :func:`use_resolved_kernels`, a call without ``backend=`` takes the kernel from that table."""
    table = _resolved
    if table is not None and backend is None and kernel in table:
        return table[kernel]
    if kernel not in KERNEL_MODULES:
        raise ValueError(f"unknown kernel {kernel!r}; known kernels: {sorted(KERNEL_MODULES)}")
    name = current_backend(backend)
    module_name = f"{BACKEND_PACKAGES[name]}.{KERNEL_MODULES[kernel]}"
    module = None
    if module_name not in _missing_modules:
        try:
            module = _import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise  # the module exists but a dependency of it is missing: say so, do not hide it
            if kernel in DEFAULT_KERNELS:
                _missing_modules.add(module_name)
    impl = getattr(module, kernel, None)
    if impl is None and kernel in DEFAULT_KERNELS:
        return getattr(_import_module(DEFAULT_KERNELS[kernel]), kernel)
    if impl is None:
        reason = f"no module {module_name}" if module is None else f"{module_name} does not define it"
        raise KernelUnavailableError(kernel, name, reason)
    return impl


def resolve_kernels(backend: str | None = None) -> dict[str, Callable[..., Any]]:
    """Every kernel ``backend`` (or the current backend) implements, looked up now: ``{name: function}``."""
    table = {}
    for kernel in KERNEL_MODULES:
        try:
            table[kernel] = get_kernel(kernel, backend)
        except KernelUnavailableError:
            pass
    return table


# The table of use_resolved_kernels(): one module global, so that code traced by torch.compile (TorchDynamo) reads
# a plain dict of functions instead of the per-thread stack, the environment and sys.modules (which it cannot trace).
_resolved: dict[str, Callable[..., Any]] | None = None


@contextlib.contextmanager
def use_resolved_kernels(table: dict[str, Callable[..., Any]]) -> Iterator[None]:
    """Serve kernel calls without ``backend=`` from ``table`` (:func:`resolve_kernels`) inside the block.

    For code that torch.compile traces (``mini_platform.compilation.piecewise``): the kernels are bound once, before
    tracing, as vLLM's ``CustomOp`` picks its ``forward_*`` method when the layer is built. Pass the same table
    every time: TorchDynamo guards on it, and another table makes it trace the model again."""
    global _resolved
    previous, _resolved = _resolved, table
    try:
        yield
    finally:
        _resolved = previous


def _import_module(module_name: str) -> Any:
    """The module, from ``sys.modules`` when already imported (every layer of every step asks again)."""
    return sys.modules.get(module_name) or importlib.import_module(module_name)


# -- the public kernels --------------------------------------------------------------------------
# Shapes use T = tokens, H = hidden size, nh / nkv = query / key-value heads, hd = head dim,
# B = sequences, nb = blocks, bs = block size.

def linear(x, weight, bias=None, *, backend: str | None = None):
    """``x @ weight.T + bias``, the matmul of every linear layer: x ``[..., K]``, weight ``[N, K]``, bias ``[N]`` or
    None -> ``[..., N]`` in x's dtype. A backend without its own runs ``torch.nn.functional.linear``."""
    return get_kernel("linear", backend)(x, weight, bias)


def rms_norm(x, weight, eps: float, *, backend: str | None = None):
    """``x * rsqrt(mean(x**2, -1) + eps) * weight``; x ``[..., H]``, weight ``[H]``; computed in fp32, returned in x's dtype."""
    return get_kernel("rms_norm", backend)(x, weight, eps)


def fused_add_rms_norm(x, residual, weight, eps: float, *, backend: str | None = None):
    """``residual = x + residual``; returns ``(rms_norm(residual), residual)`` (the new residual is the sum)."""
    return get_kernel("fused_add_rms_norm", backend)(x, residual, weight, eps)


def rotary_embedding(positions, query, key, head_size: int, cos_sin_cache, is_neox_style: bool, *,
                     backend: str | None = None):
    """Rotate ``query`` ``[T, nh*hd]`` and ``key`` ``[T, nkv*hd]`` by position; returns new ``(query, key)``.

    ``positions`` is ``[T]``, one entry per row of query and key.

    ``cos_sin_cache`` is ``[max_position, rot_dim]``: cos in the first half, sin in the second.
    Neox style rotates the halves of each head (``x[:d/2]``, ``x[d/2:]``); the interleaved style rotates
    pairs ``(x[0], x[1]), (x[2], x[3]), ...``. Only the first ``rot_dim`` dims of each head rotate.
    The inputs are not modified.
    """
    return get_kernel("rotary_embedding", backend)(positions, query, key, head_size, cos_sin_cache, is_neox_style)


def silu_and_mul(x, *, backend: str | None = None):
    """``silu(x[..., :d]) * x[..., d:]`` for x ``[..., 2d]`` (the first half is the gate)."""
    return get_kernel("silu_and_mul", backend)(x)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, *, backend: str | None = None) -> None:
    """Write ``key``/``value`` ``[T, nkv, hd]`` into the caches ``[nb, bs, nkv, hd]`` at ``slot_mapping``.

    ``slot = block * bs + offset`` (int32); slots ``< 0`` are padding and are skipped. In place.
    """
    return get_kernel("reshape_and_cache", backend)(key, value, key_cache, value_cache, slot_mapping)


def paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale: float, *,
                           backend: str | None = None):
    """One query token per sequence: ``query`` ``[B, nh, hd]`` attends to the first ``seq_lens[b]``
    cached tokens of its block table row (``block_tables`` int32 ``[B, max_blocks]``, ``seq_lens`` int32
    ``[B]``, including the current token). Grouped-query heads: head ``h`` reads kv head ``h // (nh // nkv)``.
    Returns ``[B, nh, hd]``.
    """
    return get_kernel("paged_decode_attention", backend)(query, key_cache, value_cache, block_tables, seq_lens, scale)


def paged_attention(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale: float, *,
                    backend: str | None = None):
    """Causal attention for a packed batch of any mix of prefills, chunks and decodes.

    ``query`` is ``[T, nh, hd]`` with request ``b`` at rows ``query_start_loc[b]:query_start_loc[b+1]``
    (int32, ``[B+1]``, cumulative). ``seq_lens[b]`` is the request's total KV length after this step, so
    its queries are its last ``q_len`` positions and query ``i`` sees KV positions ``<= seq_len - q_len + i``.
    Their K/V must already be in the cache (call :func:`reshape_and_cache` first). Returns ``[T, nh, hd]``.
    """
    return get_kernel("paged_attention", backend)(query, key_cache, value_cache, block_tables,
                                                  query_start_loc, seq_lens, scale)


# MoE shapes: E = experts in the model (global ids), E_local = experts this layer owns, K = experts
# per token (top_k), I = an expert's intermediate size.

def moe_topk_softmax(router_logits, top_k: int, renormalize: bool, *, backend: str | None = None):
    """Route each token to ``top_k`` experts: ``router_logits`` ``[T, E]`` -> ``(topk_weights, topk_ids)``.

    ``topk_weights`` fp32 ``[T, K]`` and ``topk_ids`` int32 ``[T, K]`` are the K largest of ``softmax(logits)``
    in descending order, with the softmax in fp32 (equal ones lower expert id first); with ``renormalize`` the K weights
    of a token are divided by their sum (Mixtral always, Qwen2-MoE when ``norm_topk_prob``).
    """
    return get_kernel("moe_topk_softmax", backend)(router_logits, top_k, renormalize)


def moe_grouped_topk(router_logits, top_k: int, num_expert_group: int, topk_group: int, renormalize: bool,
                     scoring_func: str = "softmax", e_score_correction_bias=None, routed_scaling_factor: float = 1.0, *,
                     backend: str | None = None):
    """Grouped top-k routing (DeepSeek-V2/V3, vLLM v0.11.0's ``grouped_topk`` in ``fused_moe/fused_moe.py``): ``router_logits`` ``[T, E]`` ->
    ``(topk_weights fp32 [T, K], topk_ids int32 [T, K])``.

    1. ``scores = sigmoid(logits)`` or ``softmax(logits)`` (``scoring_func``), in fp32;
    2. ``choice = scores + e_score_correction_bias`` (the bias only steers the choice; V3), else ``scores``;
    3. the E experts form ``num_expert_group`` groups of consecutive ids; a group's score is the sum of its two
       largest ``choice`` values when there is a bias (V3), else its largest ``choice`` (V2);
    4. keep the ``topk_group`` best groups, then the ``top_k`` best experts by ``choice`` inside them, in
       descending ``choice`` order; among equal values (groups or experts) the lower id comes first;
    5. the weights are the UNBIASED ``scores`` of those experts, divided by their sum when ``renormalize``,
       then multiplied by ``routed_scaling_factor``.
    """
    return get_kernel("moe_grouped_topk", backend)(router_logits, top_k, num_expert_group, topk_group, renormalize,
                                                   scoring_func, e_score_correction_bias, routed_scaling_factor)


def fused_experts(hidden, w13, w2, topk_weights, topk_ids, expert_map=None, *, backend: str | None = None):
    """The routed experts of a MoE layer: ``out[t] = sum_j w[t, j] * expert_{ids[t, j]}(hidden[t])``.

    ``hidden`` ``[T, H]``; ``w13`` ``[E_local, 2*I, H]`` (each expert's gate rows, then its up rows);
    ``w2`` ``[E_local, H, I]``; ``topk_weights`` ``[T, K]`` (fp32); ``topk_ids`` ``[T, K]`` GLOBAL expert ids;
    an expert computes ``w2[e] @ (silu(gate) * up)`` with ``gate, up = (w13[e] @ x).chunk(2)``.

    ``expert_map`` int32 ``[E]`` maps a global id to this layer's local index, -1 for an expert owned
    elsewhere (None: every expert is local, ``E = E_local``). Tokens routed to experts not owned here
    contribute zero, so summing the outputs of all owners gives the whole layer (expert parallelism).
    Returns ``[T, H]`` in hidden's dtype; products and sums accumulate in fp32.
    """
    return get_kernel("fused_experts", backend)(hidden, w13, w2, topk_weights, topk_ids, expert_map)


# MLA (multi-head latent attention, DeepSeek-V2/V3) shapes: L = kv_lora_rank (the latent), R = qk_rope_head_dim,
# the latent cache of a layer is ``kv_c_cache`` ``[nb, bs, 1, L]`` and ``k_pe_cache`` ``[nb, bs, 1, R]``
# (one entry per token, shared by every head; vllm-ascend's layout).

def concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, slot_mapping, *, backend: str | None = None) -> None:
    """Write the latents ``kv_c`` ``[T, L]`` (already RMS-normed) and rotary keys ``k_pe`` ``[T, R]`` (already
    rotated) to ``slot_mapping`` (int32 ``[T]``, ``block * bs + offset``); slots ``< 0`` are padding, skipped. In place."""
    return get_kernel("concat_and_cache_mla", backend)(kv_c, k_pe, kv_c_cache, k_pe_cache, slot_mapping)


def mla_decode_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, block_tables, seq_lens, scale: float, *,
                         backend: str | None = None):
    """Absorbed MLA decode, one query token per request. ``q_nope`` ``[B, nh, L]`` is the no-rope query with
    ``W_UK`` already folded in, ``q_pe`` ``[B, nh, R]`` the rotated rope query. Over the first ``seq_lens[b]``
    cached tokens ``t`` of block-table row ``b``: ``score = scale * (q_nope . kv_c[t] + q_pe . k_pe[t])``,
    softmax in fp32, output ``sum_t p_t * kv_c[t]``: a latent ``[B, nh, L]`` in q_nope's dtype (the caller
    applies ``W_UV``). A request of length 0 (graph padding) gives zeros."""
    return get_kernel("mla_decode_attention", backend)(q_nope, q_pe, kv_c_cache, k_pe_cache, block_tables,
                                                       seq_lens, scale)


def gather_mla_cache(kv_c_cache, k_pe_cache, block_tables, seq_lens, *, backend: str | None = None):
    """Read back the first ``seq_lens[b]`` cached tokens of every request, requests end to end: ``(kv_c [S, L],
    k_pe [S, R])`` with ``S = sum(seq_lens)`` (request ``b`` at rows ``cumsum(seq_lens)[b-1]`` on)."""
    return get_kernel("gather_mla_cache", backend)(kv_c_cache, k_pe_cache, block_tables, seq_lens)


def mla_prefill_attention(query, key, value, query_start_loc, kv_start_loc, scale: float, *,
                          backend: str | None = None):
    """Causal attention over contiguous per-request K/V whose head dims differ (MLA's expanded prefill):
    ``query`` ``[T, nh, Dqk]``, ``key`` ``[S, nh, Dqk]``, ``value`` ``[S, nh, Dv]``; request ``b`` owns query rows
    ``query_start_loc[b]:[b+1]`` and K/V rows ``kv_start_loc[b]:[b+1]`` (both int32 ``[B+1]``, cumulative). Its
    ``n`` queries are its last ``n`` positions of ``s`` keys: query ``i`` sees keys ``0 .. s - n + i``. Softmax in
    fp32; returns ``[T, nh, Dv]`` in query's dtype, zeros for rows past ``query_start_loc[-1]``."""
    return get_kernel("mla_prefill_attention", backend)(query, key, value, query_start_loc, kv_start_loc, scale)
