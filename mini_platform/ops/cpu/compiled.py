"""The CPU decode attention compiled with numba: what the ``cpu`` backend runs when numba is installed.

The torch version (:func:`~.attention._attend_decodes`) gathers every request's K/V into a padded batch,
then calls ``scaled_dot_product_attention``: about fifteen torch calls per layer, and three trips through
memory for the K/V (read the cache, write the copy, read the copy). On a CPU running a small model both
costs dominate a decode step. This kernel walks each request's block table and reads its K/V rows straight
from the cache, once, with no copy and no padding: one call per layer. vLLM's CPU backend reads the paged cache
the same way, in C++: ``paged_attention_v1`` in ``csrc/cpu/attention.cpp`` (read at vLLM commit 08f1781), and
``cpu_attention_with_kv_cache``, which ``vllm/v1/attention/backends/cpu_attn.py`` calls at commit 0035860.

The result equals the torch version up to float rounding (the kernel may reorder sums, ``fastmath`` reassoc).
It reads only slots below each request's length, so unwritten slots and unused block-table columns are never
touched. Without numba, or for dtypes other than fp32 (the kernel is compiled for fp32 only), the torch version
runs; set ``MINI_PLATFORM_CPU_COMPILED=0`` to run the torch version anyway. :func:`describe` says which runs.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from ... import envs


def decode_kernel(q, k_cache, v_cache, block_tables, seq_lens, scale, out):
    """Paged decode attention over numpy arrays, in loops numba compiles (plain Python runs it too, slowly).
    q/out ``[B, nh, hd]``, caches ``[nb, bs, nkv, hd]``, fp32; block_tables/seq_lens int32. Writes ``out``;
    returns the first request whose length or used block-table entries are out of range (then ``out`` is unset),
    or -1. Nothing is read before these checks: compiled code does not check bounds."""
    num_seqs, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads = k_cache.shape[0], k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    for b in range(num_seqs):
        if not 1 <= seq_lens[b] <= block_tables.shape[1] * block_size:
            return b
        for i in range((seq_lens[b] + block_size - 1) // block_size):
            if not 0 <= block_tables[b, i] < num_blocks:
                return b
    longest = 0
    for b in range(num_seqs):
        longest = max(longest, seq_lens[b])
    probs = np.empty((group, longest), dtype=np.float32)
    acc = np.empty((group, head_dim), dtype=np.float32)
    qs = np.empty((group, head_dim), dtype=np.float32)
    for b in range(num_seqs):
        length = seq_lens[b]
        num_used = (length + block_size - 1) // block_size
        for h in range(num_kv_heads):  # the `group` query heads of KV head h, together: each K/V row read once
            for j in range(group):
                for d in range(head_dim):
                    qs[j, d] = q[b, h * group + j, d] * scale
            for i in range(num_used):  # scores: token t = i * bs + offset lives in block block_tables[b, i]
                block, first = block_tables[b, i], i * block_size
                for offset in range(min(block_size, length - first)):
                    for j in range(group):
                        s = np.float32(0.0)
                        for d in range(head_dim):
                            s += qs[j, d] * k_cache[block, offset, h, d]
                        probs[j, first + offset] = s
            for j in range(group):  # softmax over the request's own tokens
                top = probs[j, 0]
                for t in range(1, length):
                    top = max(top, probs[j, t])
                total = np.float32(0.0)
                for t in range(length):
                    probs[j, t] = np.exp(probs[j, t] - top)
                    total += probs[j, t]
                inverse = np.float32(1.0) / total
                for t in range(length):
                    probs[j, t] *= inverse
            acc[:, :] = 0.0
            for i in range(num_used):  # the weighted sum of the V rows, read in the same order
                block, first = block_tables[b, i], i * block_size
                for offset in range(min(block_size, length - first)):
                    for j in range(group):
                        p = probs[j, first + offset]
                        for d in range(head_dim):
                            acc[j, d] += p * v_cache[block, offset, h, d]
            for j in range(group):
                for d in range(head_dim):
                    out[b, h * group + j, d] = acc[j, d]
    return -1


@functools.lru_cache(maxsize=1)
def _kernel():
    """:func:`decode_kernel` jitted, or None without numba. Compiled at the first call (about 3 s) and cached on
    disk beside this file when that is writable, so later processes load it in under a second."""
    try:
        import numba
    except ImportError:
        return None
    options = dict(nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")
    try:
        return numba.njit(cache=True, **options)(decode_kernel)
    except RuntimeError:  # no writable place to cache it (a read-only install): compile in every process
        return numba.njit(**options)(decode_kernel)


def available(*tensors: torch.Tensor) -> bool:
    """Whether :func:`paged_decode_attention` runs these inputs (the query and both caches): fp32 CPU tensors, no
    autograd, numba installed, and ``MINI_PLATFORM_CPU_COMPILED`` not ``0``."""
    if not envs.cpu_compiled():
        return False
    if any(t.dtype != torch.float32 or t.device.type != "cpu" or t.requires_grad for t in tensors):
        return False
    return _kernel() is not None


def describe() -> str:
    """Which decode attention the ``cpu`` backend runs for fp32 models, in words (benchmarks print it)."""
    if not envs.cpu_compiled():
        return f"torch ({envs.CPU_COMPILED}=0)"
    if _kernel() is None:
        return "torch (numba is not installed)"
    import numba
    return f"compiled with numba {numba.__version__}"


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """One query per request, ``[B, nh, hd]`` -> ``[B, nh, hd]``, over each request's first ``seq_lens[b]``
    cached tokens. Needs :func:`available`; shapes are checked by the caller, lengths and block ids here."""
    out = torch.empty(query.shape, dtype=torch.float32)
    tables = block_tables.to(torch.int32).contiguous()
    bad = _kernel()(query.contiguous().numpy(), key_cache.contiguous().numpy(), value_cache.contiguous().numpy(),
                    tables.numpy(), seq_lens.to(torch.int32).contiguous().numpy(), np.float32(scale), out.numpy())
    if bad >= 0:
        length, capacity = int(seq_lens[bad]), tables.shape[1] * key_cache.shape[1]
        if not 1 <= length <= capacity:
            raise ValueError(f"request {bad}: seq_len {length} is not within 1 .. max_blocks * block_size ({capacity})")
        raise ValueError(f"request {bad}: its block table row {tables[bad].tolist()} holds an entry that is not a "
                         f"block id (0 <= id < {key_cache.shape[0]}) among the blocks its {length} tokens use")
    return out
