"""CPU kernels compiled with numba: what the ``cpu`` backend runs for fp32 and bf16 tensors when numba is installed.

A small model on a CPU spends its decode step in per-call overhead: each torch call costs a few microseconds
before it computes anything, and a layer's rotary embedding, RMSNorm or cache write is a dozen such calls.
A numba kernel is one call (about a microsecond; both measured with torch 2.13 and numba 0.68 on a 2-core Xeon)
over the numpy views of the same memory. vLLM's CPU backend runs
C++ kernels for these operations (``csrc/cpu``: ``paged_attention_v1`` in ``attention.cpp`` read at vLLM commit
08f1781; ``rotary_embedding`` in ``pos_encoding.cpp`` at 282a703, ``fused_add_rms_norm`` in ``layernorm.cpp`` at
6d33657 and ``reshape_and_cache`` in ``cache.cpp`` at 31e15b8; ``cpu_attention_with_kv_cache``, which
``vllm/v1/attention/backends/cpu_attn.py`` calls at commit 0035860). The torch functions of this package stay the
specification; these follow them:

- :func:`paged_decode_attention`: the torch version (:func:`~.attention._attend_decodes`) gathers every request's
  K/V into a padded batch (fifteen torch calls, three trips through memory); this kernel walks each block table
  and reads the K/V rows straight from the cache, once. Equal up to float rounding (``fastmath`` reassoc).
- :func:`rotary_embedding`: the same products and sums in the same order as the torch version: bitwise equal.
- :func:`rms_norm`: the residual add bitwise equal; the mean of squares summed in another order, so the result is
  equal up to float rounding.
- :func:`silu_and_mul`: the gated SiLU in one pass (torch: a conversion, a split, ``silu``, a product, a conversion
  back); its exp is :func:`exp_nonpositive`, so equal up to float rounding (vLLM's ``silu_and_mul`` in
  ``csrc/cpu/activation.cpp``, read at commit e29559c, computes ``x / (1 + exp(-x))`` in fp32 the same way).
- :func:`reshape_and_cache`: copies, bitwise equal; out-of-range slots found in the same pass.
- :func:`linear_bf16`: ``F.linear`` for one bf16 token, a GEMV that reads the weight near the memory's bandwidth
  (:mod:`.gemv` says why torch's does not); fp32 sums in another order, so equal up to the last bf16 bit.

bf16 (numpy has none): every kernel reads bf16 tensors through int16 views of their bits (the GEMV reads its weight two
values to a 32-bit word), widened exactly where a value is used (:func:`as_f32`); the cache write copies them as bits;
the others round their results to bf16 in the kernel (:func:`narrow`: ties to even, as torch rounds). All compute in
fp32 and round once, as the torch versions do.

Each kernel reads nothing before checking the indices it is given (compiled code does not check bounds). They run
only where :func:`available` says so: CPU tensors of the dtypes they take, numba installed,
``MINI_PLATFORM_CPU_COMPILED`` not ``0``, and no ``torch.compile`` trace in progress (it cannot see inside a numba
call, so it gets the torch version). :func:`describe` says which runs.

A CPU graph (:mod:`..graph`) records each kernel call as one node, :class:`KernelNode`, the way a CUDA graph records a
kernel launch: the kernel and the numpy views it was given, which are the memory of the captured tensors, and at replay
the same kernel runs again on that memory (:func:`_launch`). Nothing of the wrappers' Python runs at replay.
"""
from __future__ import annotations

import functools
import importlib
import threading
import weakref

import numpy as np
import torch

from ... import envs
from ..graph import current_graph, is_capturing, untraced


def exp_nonpositive(x):
    """``e**x`` for an fp32 ``x <= 0`` (a softmax term after subtracting the row's max), within 1e-7 relative of
    the exact value (``np.exp`` is within half an fp32 ulp, 6e-8); 0 below -87, where ``e**x`` leaves fp32's normal
    range. Arithmetic only, so that LLVM vectorizes the softmax loop around it: numba calls libm's ``expf`` once per
    element otherwise (without Intel's SVML), a quarter of the decode kernel's time at head size 16 (numba 0.68 on
    the 2-core Xeon named above).
    Cody-Waite: ``x = k ln2 + r`` with ``|r| <= ln2 / 2``, ``e**r`` by the degree-7 polynomial of Cephes' ``expf``,
    then times ``2**k``, built from its bits (exponent ``k + 127``, ``-126 <= k <= 0``): a table lookup would be a
    gather in the vectorized loop, a libm call stops it vectorizing. Compiled inline into the kernels that call it
    (:func:`_register_helpers`)."""
    if x < np.float32(-87.0):
        return np.float32(0.0)
    k = np.floor(x * np.float32(1.4426950408889634) + np.float32(0.5))   # round(x / ln 2)
    r = (x - k * np.float32(0.693359375)) - k * np.float32(-2.12194440e-4)   # ln 2 in two parts: r nearly exact
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    two_to_k = np.int32((np.int32(k) + np.int32(127)) << np.int32(23)).view(np.float32)
    return (p * r * r + r + np.float32(1.0)) * two_to_k


def as_f32(value):
    """``value`` as an fp32 number: itself when it is one, and a bf16 given as its 16 bits (an int16: the kernels see
    a bf16 tensor through an int16 view, numpy has no bf16) widened exactly, ``bits << 16``. Compiled inline where a
    kernel calls it (:func:`_register_helpers`)."""
    if isinstance(value, np.int16):
        return (np.uint32(np.uint16(value)) << np.uint32(16)).view(np.float32)
    return value


def narrow(value, out):
    """``value`` (fp32) as an element of the array ``out``: itself when ``out`` is fp32, the bits of the bf16 nearest to
    it (ties to even, as torch rounds) when ``out`` holds bf16 bits (int16). Compiled inline where a kernel calls it
    (:func:`_register_helpers`)."""
    if out.dtype == np.int16:
        return np.int16(torch.tensor(value, dtype=torch.float32).to(torch.bfloat16).view(torch.int16).item())
    return value


def decode_kernel(q, k_cache, v_cache, block_tables, seq_lens, scale, out):
    """Paged decode attention over numpy arrays, in loops numba compiles (plain Python runs it too, slowly).
    q/out ``[B, nh, hd]``, caches ``[nb, bs, nkv, hd]``: all fp32, or all the int16 bits of bf16 values (:func:`as_f32`;
    each output rounded once, :func:`narrow`); block_tables/seq_lens int32. Writes ``out``;
    returns the first request whose length or used block-table entries are out of range (then ``out`` is unset),
    or -1. Nothing is read before these checks: compiled code does not check bounds. A request of length 0 (a padding
    row of a graph's batch) reads nothing and gets zeros.

    The loops over a head (``d``) are short, 16 to 128 values, so each pass over one does more than one token's work:
    the scores take two K rows a pass (the running maximum kept on the way), the weighted sum four V rows a pass into
    one update of ``acc``, and the softmax's division waits for the output. On the 2-core Xeon named above that took
    the kernel from 290 to 150 microseconds for 64 requests of 8..191 tokens at head size 16 (4 query, 2 KV heads),
    where one row fills no vector loop, and from 610 to 450 for 8 requests of 100..999 tokens at Qwen2.5-0.5B's 14
    and 2 heads of 64, bf16."""
    num_seqs, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads = k_cache.shape[0], k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    for b in range(num_seqs):
        if not 0 <= seq_lens[b] <= block_tables.shape[1] * block_size:
            return b
        for i in range((seq_lens[b] + block_size - 1) // block_size):
            if not 0 <= block_tables[b, i] < num_blocks:
                return b
    longest = 1
    for b in range(num_seqs):
        longest = max(longest, seq_lens[b])
    probs = np.empty((group, longest), dtype=np.float32)
    acc = np.empty((group, head_dim), dtype=np.float32)
    qs = np.empty((group, head_dim), dtype=np.float32)
    tops = np.empty(group, dtype=np.float32)      # each query head's largest score
    inverse = np.empty(group, dtype=np.float32)   # 1 / its softmax denominator
    for b in range(num_seqs):
        length = seq_lens[b]
        num_used = (length + block_size - 1) // block_size
        if length == 0:   # padding
            out[b, :, :] = 0
            continue
        for h in range(num_kv_heads):  # the `group` query heads of KV head h, together: each K/V row read once
            for j in range(group):
                for d in range(head_dim):
                    qs[j, d] = as_f32(q[b, h * group + j, d]) * scale
                tops[j] = -np.inf
            for i in range(num_used):  # scores: token first + t lives in row t of block block_tables[b, i]
                block, first = block_tables[b, i], i * block_size
                n = min(block_size, length - first)
                t = 0
                while t + 1 < n:   # two rows a pass
                    for j in range(group):
                        s0 = s1 = np.float32(0.0)
                        for d in range(head_dim):
                            s0 += qs[j, d] * as_f32(k_cache[block, t, h, d])
                            s1 += qs[j, d] * as_f32(k_cache[block, t + 1, h, d])
                        probs[j, first + t], probs[j, first + t + 1] = s0, s1
                        tops[j] = max(tops[j], max(s0, s1))
                    t += 2
                if t < n:          # an odd last row
                    for j in range(group):
                        s = np.float32(0.0)
                        for d in range(head_dim):
                            s += qs[j, d] * as_f32(k_cache[block, t, h, d])
                        probs[j, first + t] = s
                        tops[j] = max(tops[j], s)
            for j in range(group):  # softmax over the request's own tokens, divided at the end
                total = np.float32(0.0)
                for t in range(length):
                    probs[j, t] = exp_nonpositive(probs[j, t] - tops[j])
                    total += probs[j, t]
                inverse[j] = np.float32(1.0) / total
            acc[:, :] = 0.0
            for i in range(num_used):  # the weighted sum of the V rows, in the same order
                block, first = block_tables[b, i], i * block_size
                n = min(block_size, length - first)
                t = 0
                while t + 3 < n:   # four rows a pass
                    for j in range(group):
                        p0, p1 = probs[j, first + t], probs[j, first + t + 1]
                        p2, p3 = probs[j, first + t + 2], probs[j, first + t + 3]
                        for d in range(head_dim):
                            acc[j, d] += ((p0 * as_f32(v_cache[block, t, h, d])
                                           + p1 * as_f32(v_cache[block, t + 1, h, d]))
                                          + (p2 * as_f32(v_cache[block, t + 2, h, d])
                                             + p3 * as_f32(v_cache[block, t + 3, h, d])))
                    t += 4
                for t in range(t, n):  # the last rows, one a pass
                    for j in range(group):
                        p = probs[j, first + t]
                        for d in range(head_dim):
                            acc[j, d] += p * as_f32(v_cache[block, t, h, d])
            for j in range(group):
                for d in range(head_dim):
                    out[b, h * group + j, d] = narrow(acc[j, d] * inverse[j], out)
    return -1


def rotary_kernel(positions, query, key, cos_sin_cache, head_size, is_neox_style, query_out, key_out):
    """Rotate each head of ``query``/``key`` ``[T, n*head_size]`` by the angles of its row's position, into
    ``*_out``; the first ``rot_dim`` (the cache's width) dims rotate, the rest pass through. Query, key and the outputs
    fp32, or all bf16 bits (each rotated value rounded once, :func:`narrow`); the cache fp32 or bf16 bits. Returns the
    first row whose position is not a row of ``cos_sin_cache`` (then the outputs are unset), or -1."""
    num_rows, rot_dim = cos_sin_cache.shape[0], cos_sin_cache.shape[1]
    half = rot_dim // 2
    for t in range(positions.shape[0]):
        if not 0 <= positions[t] < num_rows:
            return t
    for x, out in ((query, query_out), (key, key_out)):
        for t in range(x.shape[0]):
            p = positions[t]
            for base in range(0, x.shape[1], head_size):
                for i in range(half):
                    c, s = as_f32(cos_sin_cache[p, i]), as_f32(cos_sin_cache[p, half + i])
                    if is_neox_style:   # dim i pairs with dim i + half
                        first, second = base + i, base + half + i
                    else:               # dim 2i pairs with dim 2i + 1
                        first, second = base + 2 * i, base + 2 * i + 1
                    x1, x2 = as_f32(x[t, first]), as_f32(x[t, second])
                    out[t, first] = narrow(x1 * c - x2 * s, out)
                    out[t, second] = narrow(x2 * c + x1 * s, out)
                for d in range(base + rot_dim, base + head_size):
                    out[t, d] = x[t, d]
    return -1


def rms_norm_kernel(x, residual, weight, eps, out, summed):
    """Rows of ``x`` ``[T, H]`` plus ``residual`` (when it has rows), written to ``summed``, then
    ``row * (1 / sqrt(mean(row**2) + eps)) * weight`` of the rows written into ``out``, computed in fp32. All arrays
    fp32, or all the bits of bf16 values (int16): then each sum is rounded to bf16 before the norm reads it, as torch
    adds two bf16 tensors, and each output is rounded once (:func:`as_f32`, :func:`narrow`)."""
    width = x.shape[1]
    for t in range(x.shape[0]):
        total = np.float32(0.0)
        for d in range(width):
            value = as_f32(x[t, d]) + as_f32(residual[t, d]) if residual.shape[0] else as_f32(x[t, d])
            summed[t, d] = narrow(value, summed)
            value = as_f32(summed[t, d])
            total += value * value
        scale = np.float32(1.0) / np.sqrt(total / np.float32(width) + np.float32(eps))
        for d in range(width):
            out[t, d] = narrow(as_f32(summed[t, d]) * scale * as_f32(weight[d]), out)


def silu_and_mul_kernel(x, out):
    """``silu(gate) * up`` for each row of ``x`` ``[T, 2d]`` (gate, then up) into ``out`` ``[T, d]``, in fp32; all fp32
    or all bf16 bits (:func:`as_f32`, :func:`narrow`). ``silu(g) = g * sigmoid(g)``, the sigmoid from
    ``z = exp(-|g|)`` (:func:`exp_nonpositive`, which LLVM vectorizes): ``1 / (1 + z)`` for ``g >= 0``, ``z / (1 + z)``
    below, so that the exp never overflows."""
    half = out.shape[1]
    for t in range(x.shape[0]):
        for i in range(half):
            gate = as_f32(x[t, i])
            z = exp_nonpositive(-abs(gate))
            sigmoid = np.float32(1.0) / (np.float32(1.0) + z)
            if gate < np.float32(0.0):
                sigmoid *= z
            out[t, i] = narrow(gate * sigmoid * as_f32(x[t, half + i]), out)


def reshape_and_cache_kernel(key, value, key_cache, value_cache, slots):
    """Row ``t`` of ``key``/``value`` ``[T, W]`` to row ``slots[t]`` of the caches ``[num_slots, W]``; slots below 0
    are skipped. Returns the first row whose slot is past the cache (nothing is written then), or -1."""
    for t in range(slots.shape[0]):
        if slots[t] >= key_cache.shape[0]:
            return t
    for t in range(slots.shape[0]):
        slot = slots[t]
        if slot >= 0:
            key_cache[slot, :] = key[t, :]
            value_cache[slot, :] = value[t, :]
    return -1


_KERNELS = {"decode": (decode_kernel, {"fastmath": {"reassoc", "contract"}}), "rotary": (rotary_kernel, {}),
            "rms_norm": (rms_norm_kernel, {"fastmath": {"reassoc"}}),
            "silu_and_mul": (silu_and_mul_kernel, {"fastmath": {"reassoc", "contract"}}),
            "reshape_and_cache": (reshape_and_cache_kernel, {}),
            # parallel, and built on LLVM intrinsics (numba.extending): in its own module, imported only with numba
            "gemv_bf16": ("gemv", {"fastmath": True, "parallel": True})}


@functools.cache
def _register_helpers() -> None:
    """Let numba compile the helpers the kernels call (plain Python functions) inline wherever a kernel calls them.
    ``as_f32`` and ``narrow`` are compiled per type: the identity on floats; on int16 bits the exact widening and the
    rounding of :mod:`.gemv` (a kernel cached on disk is not recompiled when that module changes: clear
    ``__pycache__`` after editing it)."""
    from numba import types
    from numba.extending import overload, register_jitable

    from .gemv import bf16_to_f32, round_to_bf16

    register_jitable(inline="always")(exp_nonpositive)

    @overload(narrow, inline="always")
    def _narrow(value, out):
        if isinstance(out.dtype, types.Integer) and out.dtype.bitwidth == 16:
            return lambda value, out: round_to_bf16(value)
        if isinstance(out.dtype, types.Float):
            return lambda value, out: value

    @overload(as_f32, inline="always")
    def _as_f32(value):
        if isinstance(value, types.Integer) and value.bitwidth == 16:
            return lambda value: bf16_to_f32(value)
        if isinstance(value, types.Float):
            return lambda value: value


@functools.lru_cache(maxsize=None)
def _kernel(name: str = "decode"):
    """The kernel ``name`` of ``_KERNELS`` jitted, or None without numba. Compiled at its first call (seconds) and
    cached on disk beside this file when that is writable, so later processes load it in a fraction of that."""
    try:
        import numba
    except ImportError:
        return None
    _register_helpers()
    function, options = _KERNELS[name]
    if isinstance(function, str):
        function = getattr(importlib.import_module(f"{__package__}.{function}"), name)
    options = dict(nogil=True, error_model="numpy", **options)
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # no writable place to cache it (a read-only install): compile in every process
        return numba.njit(**options)(function)


def available(*tensors: torch.Tensor, dtype: torch.dtype = torch.float32) -> bool:
    """Whether the compiled kernels run these inputs: CPU tensors of ``dtype``, no autograd, numba installed,
    ``MINI_PLATFORM_CPU_COMPILED`` not ``0``, and no ``torch.compile`` trace in progress (a CPU graph capture records
    them, :class:`KernelNode`). The GEMV asks it with ``dtype=torch.bfloat16``; every other kernel asks
    :func:`available_widened`."""
    if torch.compiler.is_compiling() or not envs.cpu_compiled():
        return False
    for t in tensors:
        if t.dtype is not dtype or not t.is_cpu or t.requires_grad:
            return False
    return _kernel() is not None


# The dtypes every kernel but the GEMV takes (bf16 through int16 views of its bits); the GEMV takes bf16 only.
WIDENED_DTYPES = (torch.float32, torch.bfloat16)


def available_widened(*tensors: torch.Tensor) -> bool:
    """:func:`available` for the kernels that take fp32 or bf16 (``WIDENED_DTYPES``): every tensor of the first one's
    dtype, that dtype one of those."""
    return tensors[0].dtype in WIDENED_DTYPES and available(*tensors, dtype=tensors[0].dtype)


def describe() -> str:
    """Which kernels the ``cpu`` backend runs for fp32 and bf16 models, in words (benchmarks print it)."""
    if not envs.cpu_compiled():
        return f"torch ({envs.CPU_COMPILED}=0)"
    if _kernel() is None:
        return "torch (numba is not installed)"
    import numba
    return f"compiled with numba {numba.__version__}"


def _array(t: torch.Tensor) -> np.ndarray:
    """The numpy view of a CPU tensor's memory (of a contiguous copy when it is not contiguous); a bf16 tensor's as
    int16 bits (numpy has no bf16). While a CPU graph captures, the copy is one of its nodes (made again at replay);
    the view reads no value, so it is made outside the recorder, which refuses ``.numpy()`` as a host read."""
    t = t if t.is_contiguous() else t.contiguous()
    t = t.view(torch.int16) if t.dtype is torch.bfloat16 else t
    if not is_capturing():
        return t.numpy()
    with untraced():
        return t.numpy()


# id(tensor) -> ((data_ptr, shape, dtype), its numpy view), for the tensors _lasting_array was given; an entry goes
# when its tensor does (weakref.finalize). Kept here, not on the tensor: a pickled or deep-copied parameter does not
# carry a copy of its own data along.
_LASTING: dict[int, tuple[tuple, np.ndarray]] = {}


def _lasting_array(t: torch.Tensor) -> np.ndarray:
    """:func:`_array` of a tensor the model keeps from step to step (a weight, a KV cache, the cos/sin cache): made
    once and kept (``.numpy()`` costs about 2 microseconds, a dozen times a layer), made again when the tensor's
    memory, shape or dtype changed (``param.data = ...``). Not kept for a tensor that is not contiguous (:func:`_array`
    copies it)."""
    key = (t.data_ptr(), t.shape, t.dtype)
    kept = _LASTING.get(id(t))
    if kept is not None and kept[0] == key:
        return kept[1]
    if not t.is_contiguous():
        return _array(t)
    if kept is None:
        weakref.finalize(t, _LASTING.pop, id(t), None)
    view = _array(t)   # its base is an alias torch makes, not ``t``: the entry does not keep ``t`` alive
    _LASTING[id(t)] = (key, view)
    return view


class KernelNode:
    """One compiled kernel call in a CPU graph: the kernel and the arrays it was given (views of the captured tensors'
    memory, and the outputs made at capture, which later nodes read). :meth:`run` calls it again on them."""

    def __init__(self, name: str, kernel, args: tuple) -> None:
        self.name, self.kernel, self.args = name, kernel, args

    def run(self) -> None:
        bad = self.kernel(*self.args)
        if bad is not None and bad >= 0:   # the kernels that check indices return the first bad row, or -1
            raise IndexError(f"the compiled {self.name} kernel found an index out of range at row {bad} while a CPU "
                             "graph replayed it (a position, slot, length or block id in the step's buffers); it "
                             "checks every index before it reads or writes, so it wrote nothing")

    def __repr__(self) -> str:
        return f"KernelNode({self.name})"


def _launch(name: str, *args):
    """Run the kernel ``name`` on ``args`` (numpy arrays and numbers) and return what it returns. While a CPU graph
    captures (and is not paused by code that adds its own node, :func:`..graph.untraced`), it also becomes a
    :class:`KernelNode` of that graph."""
    kernel = _kernel(name)
    if not is_capturing():
        return kernel(*args)
    with untraced():
        result = kernel(*args)
    current_graph().add_node(KernelNode(name, kernel, args))
    return result


# The wrappers below work on numpy views and return tensors made with torch.from_numpy: a torch view or reshape
# costs microseconds, as much as the kernel itself on a small model.

def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """One query per request, ``[B, nh, hd]`` -> ``[B, nh, hd]``, over each request's first ``seq_lens[b]``
    cached tokens, fp32 or bf16 (computed in fp32, returned in the query's dtype). Needs :func:`available` with that
    dtype; shapes are checked by the caller, lengths and block ids here."""
    q = _array(query)
    out = np.empty_like(q)   # fp32, or the bits of bf16 results
    tables = block_tables.to(torch.int32)
    bad = _launch("decode", q, _lasting_array(key_cache), _lasting_array(value_cache), _array(tables),
                  _array(seq_lens.to(torch.int32)), np.float32(scale), out)
    if bad >= 0:
        length, capacity = int(seq_lens[bad]), tables.shape[1] * key_cache.shape[1]
        if not 0 <= length <= capacity:
            raise ValueError(f"request {bad}: seq_len {length} is not within 0 (a padding row) .. max_blocks * "
                             f"block_size ({capacity})")
        raise ValueError(f"request {bad}: its block table row {tables[bad].tolist()} holds an entry that is not a "
                         f"block id (0 <= id < {key_cache.shape[0]}) among the blocks its {length} tokens use")
    return _tensor(out, query.dtype)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`~.rotary.rotary_embedding` compiled (needs :func:`available_widened` for query and key, and for the cache;
    the caller checks the shapes): fp32, or bf16 computed in fp32 and rounded once, bitwise the torch version's.
    IndexError for a position past the cache, as ``index_select`` raises it there."""
    q, k = _array(query), _array(key)
    q_out, k_out = np.empty_like(q), np.empty_like(k)
    bad = _launch("rotary", _array(positions), q, k, _lasting_array(cos_sin_cache), head_size, is_neox_style,
                  q_out, k_out)
    if bad >= 0:
        raise IndexError(f"position {int(positions[bad])} (row {bad}) is not a row of the cos/sin cache "
                         f"({cos_sin_cache.shape[0]} positions)")
    return _tensor(q_out, query.dtype), _tensor(k_out, key.dtype)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float,
             residual: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`~.layernorm.rms_norm`, or with ``residual`` :func:`~.layernorm.fused_add_rms_norm`, compiled (needs
    :func:`available_widened`: every tensor fp32, or every one bf16; the caller checks the shapes). bf16 is computed in
    fp32 and rounded once, the residual sum rounded to bf16 before the norm, as the torch versions do."""
    rows = _array(x)
    out, summed = np.empty_like(rows), np.empty_like(rows)   # fp32, or the bits of bf16 results
    width = rows.shape[-1]
    extra = _array(residual).reshape(-1, width) if residual is not None else rows.reshape(-1, width)[:0]
    _launch("rms_norm", rows.reshape(-1, width), extra, _lasting_array(weight), eps, out.reshape(-1, width),
            summed.reshape(-1, width))
    if residual is None:
        return _tensor(out, x.dtype)
    return _tensor(out, x.dtype), _tensor(summed, x.dtype)


def _tensor(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """The tensor over a kernel's output: fp32 as it is, bf16 bits (int16) viewed as bf16."""
    return torch.from_numpy(array).view(torch.bfloat16) if dtype is torch.bfloat16 else torch.from_numpy(array)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """:func:`~.activation.silu_and_mul` compiled (needs :func:`available_widened`; the caller checks that the last dim
    is even): ``x`` ``[..., 2d]`` fp32 or bf16 -> ``[..., d]``, computed in fp32 and rounded once."""
    rows = _array(x)
    width = rows.shape[-1]
    out = np.empty(rows.shape[:-1] + (width // 2,), dtype=rows.dtype)
    _launch("silu_and_mul", rows.reshape(-1, width), out.reshape(-1, width // 2))
    return _tensor(out, x.dtype)


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                      slot_mapping: torch.Tensor) -> bool:
    """:func:`~.attention.reshape_and_cache` compiled (fp32, or bf16 copied as its bits), when the caches can be
    written through numpy views (contiguous) and :func:`available`; returns False, having written nothing, when not.
    The caller checks the shapes."""
    if not (key_cache.is_contiguous() and value_cache.is_contiguous()):
        return False
    num_slots, width = key_cache.shape[0] * key_cache.shape[1], key_cache.shape[2] * key_cache.shape[3]
    bad = _launch("reshape_and_cache", _array(key).reshape(-1, width), _array(value).reshape(-1, width),
                  # views: writes land in the caches
                  _lasting_array(key_cache).reshape(num_slots, width),
                  _lasting_array(value_cache).reshape(num_slots, width), _array(slot_mapping))
    if bad >= 0:
        raise ValueError(f"slot {int(slot_mapping[bad])} is outside the cache ({key_cache.shape[0]} blocks x "
                         f"{key_cache.shape[1]} slots)")
    return True


_NO_BIAS = np.empty(0, dtype=np.int16)


_numba_threads = threading.local()   # per thread, as numba's own setting is


def _use_torch_threads() -> None:
    """Run numba's parallel kernels on as many threads as torch uses (a tensor-parallel worker uses fewer than the
    machine has cores). Set again only when torch's number changed: asking numba costs a microsecond a call."""
    threads = torch.get_num_threads()
    if getattr(_numba_threads, "torch", None) != threads:
        import numba
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        _numba_threads.torch = threads


def linear_bf16(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear`` for one bf16 token, ``x`` ``[..., K]`` holding a single row, on the compiled GEMV of :mod:`.gemv`:
    fp32 products and sums, rounded to bf16 once. Needs :func:`available` with ``dtype=torch.bfloat16``; the caller
    checks the shapes, that ``weight`` is contiguous and that it can be read as 32-bit words (an even ``K`` from an even
    offset, on a little-endian machine)."""
    rows, width = weight.shape
    out = np.empty((*x.shape[:-1], rows), dtype=np.int16)   # bf16 bits: rounded in the kernel, no conversion after
    extra = _lasting_array(bias) if bias is not None else _NO_BIAS
    _use_torch_threads()
    pairs = _lasting_array(weight).view(np.uint32)   # two bf16 values per word (the caller checks that K is even)
    # Prefetch about 4 KiB ahead: 2 rows of a hidden size of 896 (Qwen2.5-0.5B), 1 row of its MLP's 4864.
    _launch("gemv_bf16", _array(x).reshape(width), pairs, extra, out.reshape(rows), max(1, 4096 // (2 * width)))
    return _tensor(out, torch.bfloat16)
