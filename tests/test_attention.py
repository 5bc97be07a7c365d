"""Paged attention kernels on three backends.

The CPU backend (the specification) is checked against an independent dense computation: K/V
gathered token by token from the block table and ``scaled_dot_product_attention`` with an explicit
causal mask. The Triton backend (run in the Triton interpreter on the CPU) and the npu backend (run
against the torch_npu emulation: verified against an emulation of torch_npu semantics; not run on
Ascend hardware here) are checked against the CPU backend. Random cases use fixed seeds.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from mini_platform import ops
from mini_platform.model.paged_attention import AttentionMetadata, PagedAttention, allocate_kv_caches

# Each scenario lists requests as (tokens already cached, query tokens in this step).
SCENARIOS = {
    "decode_ragged": [(16, 1), (0, 1), (37, 1), (5, 1)],
    "prefill_empty_cache": [(0, 20), (0, 7)],
    "prefix_hit": [(32, 9), (16, 5)],
    "chunked_prefill": [(21, 11), (3, 16)],
    "mixed": [(0, 13), (40, 1), (19, 6), (7, 1)],
    # Requests with no query this step (first, middle, last; one with no KV either, like a padded request),
    # a prompt longer than any query block, and a KV length that fills its last block exactly.
    "empty_queries": [(5, 0), (0, 18), (16, 0), (31, 1), (0, 0), (7, 0)],
}
HEADS = {"MHA": (4, 4), "GQA": (6, 2), "MQA": (4, 1)}
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}
HEAD_DIM = 16


def make_batch(requests, num_heads, num_kv_heads, block_size, dtype, seed, head_dim=HEAD_DIM):
    """A random cache and a packed query batch whose requests own shuffled, non-contiguous blocks."""
    gen = torch.Generator().manual_seed(seed)
    seq_lens = [c + q for c, q in requests]
    blocks_per_req = [-(-s // block_size) for s in seq_lens]
    max_blocks = max(blocks_per_req) + 1                    # one spare column: unused entries must be ignored
    num_blocks = sum(blocks_per_req) + 3                    # spare blocks hold garbage that must not leak in
    perm = torch.randperm(num_blocks, generator=gen)
    block_tables = torch.full((len(requests), max_blocks), num_blocks - 1, dtype=torch.int32)
    used = 0
    for b, n in enumerate(blocks_per_req):
        block_tables[b, :n] = perm[used:used + n]
        used += n
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    key_cache = torch.randn(shape, generator=gen).to(dtype)
    value_cache = torch.randn(shape, generator=gen).to(dtype)
    q_lens = [q for _, q in requests]
    query = torch.randn(sum(q_lens), num_heads, head_dim, generator=gen).to(dtype)
    query_start_loc = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32)
    return query, key_cache, value_cache, block_tables, query_start_loc, torch.tensor(seq_lens, dtype=torch.int32)


def dense_reference(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale):
    """Gather each request's K/V slot by slot, then SDPA with an explicit causal mask (fp32)."""
    block_size = key_cache.shape[1]
    group = query.shape[1] // key_cache.shape[2]
    out = torch.zeros(query.shape, dtype=torch.float32)
    starts = query_start_loc.tolist()
    for b, seq_len in enumerate(seq_lens.tolist()):
        if starts[b] == starts[b + 1]:
            continue                                                        # no query: nothing to compute
        slots = [(int(block_tables[b, p // block_size]), p % block_size) for p in range(seq_len)]
        k = torch.stack([key_cache[i, j] for i, j in slots]).float().repeat_interleave(group, dim=1)
        v = torch.stack([value_cache[i, j] for i, j in slots]).float().repeat_interleave(group, dim=1)
        q = query[starts[b]:starts[b + 1]].float()
        q_pos = seq_len - q.shape[0] + torch.arange(q.shape[0])
        allowed = torch.arange(seq_len)[None, :] <= q_pos[:, None]          # True = may attend
        o = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                           attn_mask=allowed, scale=scale)
        out[starts[b]:starts[b + 1]] = o.transpose(0, 1)
    return out


def run(backend, batch, scale, decode):
    query, key_cache, value_cache, block_tables, query_start_loc, seq_lens = batch
    if decode:
        return ops.paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale, backend=backend)
    return ops.paged_attention(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale,
                               backend=backend)


CASES = [(s, h, 16, torch.float32) for s in SCENARIOS for h in HEADS] + [
    ("mixed", "GQA", 128, torch.float32), ("decode_ragged", "MQA", 128, torch.float32),
    ("mixed", "GQA", 16, torch.float16), ("mixed", "GQA", 16, torch.bfloat16),
    ("decode_ragged", "GQA", 16, torch.bfloat16), ("prefix_hit", "MHA", 128, torch.float16)]


def case_id(case):
    scenario, heads, block_size, dtype = case
    return f"{scenario}-{heads}-bs{block_size}-{str(dtype).removeprefix('torch.')}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_cpu_reference_matches_dense_sdpa(case):
    scenario, heads, block_size, dtype = case
    batch = make_batch(SCENARIOS[scenario], *HEADS[heads], block_size, dtype, seed=CASES.index(case))
    scale = HEAD_DIM ** -0.5
    got = run("cpu", batch, scale, decode=scenario == "decode_ragged")
    want = dense_reference(*batch, scale)
    assert got.dtype == dtype and got.shape == batch[0].shape
    torch.testing.assert_close(got.float(), want, atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_loop_specification_matches_dense_sdpa(case):
    """``paged_attention_reference``, the per-request loop the chapters read, against the same dense check."""
    from mini_platform.ops.cpu.attention import paged_attention_reference
    scenario, heads, block_size, dtype = case
    batch = make_batch(SCENARIOS[scenario], *HEADS[heads], block_size, dtype, seed=CASES.index(case))
    got = paged_attention_reference(*batch, HEAD_DIM ** -0.5)
    torch.testing.assert_close(got.float(), dense_reference(*batch, HEAD_DIM ** -0.5), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.fixture(params=["compiled", "torch"])
def decode_path(request, monkeypatch):
    """Run a test with the ``cpu`` backend's decode batches on the numba-compiled kernel, then on the torch one
    (``MINI_PLATFORM_CPU_COMPILED``). Returns a check that given inputs really take the named path."""
    from mini_platform.ops.cpu import compiled
    monkeypatch.setenv("MINI_PLATFORM_CPU_COMPILED", "1" if request.param == "compiled" else "0")

    def takes_named_path(*tensors):
        return compiled.available_widened(*tensors) == (request.param == "compiled")   # what _decode_batch asks
    return takes_named_path


@pytest.mark.parametrize("seed", range(16))
def test_batched_cpu_kernel_matches_the_loop_specification(seed, decode_path):
    """The engine's batched ``cpu`` kernel against the loop on random batches: decodes, prompts, chunks and
    requests with no query mixed; GQA/MQA/MHA; KV lengths on, just before and just after block boundaries;
    NaN in every slot no request has written and invalid block ids in unused block-table columns. Decode
    rows run on the compiled kernel and on the torch one."""
    import random
    from mini_platform.ops.cpu.attention import paged_attention, paged_attention_reference
    rng = random.Random(seed)
    block_size = rng.choice([1, 4, 16])
    num_heads, num_kv_heads = rng.choice(list(HEADS.values()))
    requests = []
    for _ in range(rng.randint(1, 9)):
        cached = rng.choice([0, block_size - 1, block_size, block_size + 1, rng.randint(0, 50)])
        query = rng.choice([0, 1, 1, 1, rng.randint(2, 24)])
        requests.append((cached, query))
    dtype = torch.bfloat16 if seed % 4 == 3 else torch.float32
    batch = make_batch(requests, num_heads, num_kv_heads, block_size, dtype, seed=1000 + seed)
    poison_unwritten(batch, invalid_block_id=-1 if seed % 2 else 10**6)
    assert decode_path(*batch[:3])   # fp32 and bf16 both have a compiled decode path
    got = paged_attention(*batch, 0.3)
    want = paged_attention_reference(*batch, 0.3)
    assert got.dtype == dtype and got.shape == want.shape
    torch.testing.assert_close(got.float(), want.float(), atol=TOL[dtype], rtol=TOL[dtype])


def poison_unwritten(batch, invalid_block_id):
    """NaN in every cache slot no request has written (slots never written may hold anything), and
    ``invalid_block_id`` in every unused block-table column (never read, so any value is fine)."""
    _, key_cache, value_cache, block_tables, _, seq_lens = batch
    block_size = key_cache.shape[1]
    written = torch.zeros(key_cache.shape[:2], dtype=torch.bool)
    for b, seq_len in enumerate(seq_lens.tolist()):
        for p in range(seq_len):
            written[block_tables[b, p // block_size], p % block_size] = True
        block_tables[b, -(-seq_len // block_size):] = invalid_block_id
    for cache in (key_cache, value_cache):
        cache[~written] = float("nan")


@pytest.mark.parametrize("same_length", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_decode_kernel_matches_the_loop_specification_on_poisoned_caches(seed, same_length, decode_path):
    """The ``cpu`` decode kernels, compiled and torch (masked when lengths differ, unmasked when all are equal),
    read no unwritten slot and no unused block-table column."""
    import random
    from mini_platform.ops.cpu.attention import paged_attention_reference, paged_decode_attention
    rng = random.Random(seed)
    block_size = rng.choice([1, 4, 16])
    num_heads, num_kv_heads = rng.choice(list(HEADS.values()))
    length = rng.randint(1, 40)
    requests = [((length if same_length else rng.randint(1, 40)) - 1, 1) for _ in range(rng.randint(2, 9))]
    batch = make_batch(requests, num_heads, num_kv_heads, block_size, torch.float32, seed=2000 + seed)
    poison_unwritten(batch, invalid_block_id=-1 if seed % 2 else 10**6)
    query, key_cache, value_cache, block_tables, _, seq_lens = batch
    assert decode_path(query, key_cache, value_cache)
    got = paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, 0.3)
    torch.testing.assert_close(got, paged_attention_reference(*batch, 0.3), atol=TOL[torch.float32],
                               rtol=TOL[torch.float32])


def test_compiled_decode_kernel_takes_any_layout_and_names_a_bad_block_id():
    """Strided queries, int64 tables and lengths give the numbers of the contiguous int32 call; a used
    block-table entry that is no block id, or a length the table cannot hold, is refused with the request's
    index (no out-of-bounds read); a length of 0 (a graph's padding row) gives zeros."""
    from mini_platform.ops.cpu import compiled
    query, key_cache, value_cache, block_tables, _, seq_lens = make_batch(
        SCENARIOS["decode_ragged"], 6, 2, 16, torch.float32, seed=21)
    want = compiled.paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, 0.3)
    strided = torch.cat([query, query], dim=-1)[..., :HEAD_DIM]
    got = compiled.paged_decode_attention(strided, key_cache, value_cache, block_tables.long(), seq_lens.long(), 0.3)
    assert not strided.is_contiguous() and torch.equal(got, want)
    for bad in (-1, key_cache.shape[0]):
        tables = block_tables.clone()
        tables[2, 1] = bad  # request 2 holds 38 tokens: its second block is in use
        with pytest.raises(ValueError, match=f"request 2: .*not a block id \\(0 <= id < {key_cache.shape[0]}\\)"):
            compiled.paged_decode_attention(query, key_cache, value_cache, tables, seq_lens, 0.3)
    capacity = block_tables.shape[1] * key_cache.shape[1]
    for bad in (-1, capacity + 1):  # called directly, without the backend's checks: still no out-of-bounds read
        lens = seq_lens.clone()
        lens[1] = bad
        with pytest.raises(ValueError, match=f"request 1: seq_len {bad} is not within 0 .*\\({capacity}\\)"):
            compiled.paged_decode_attention(query, key_cache, value_cache, block_tables, lens, 0.3)
    lens = seq_lens.clone()
    lens[1] = 0   # a padding row of a graph's batch: zeros, the other requests untouched
    padded = compiled.paged_decode_attention(query, key_cache, value_cache, block_tables, lens, 0.3)
    assert not padded[1].any() and torch.equal(padded[[0, *range(2, len(lens))]], want[[0, *range(2, len(lens))]])


def test_compiled_decode_kernel_runs_only_what_it_was_compiled_for(monkeypatch):
    """The compiled kernel takes fp32 CPU tensors (or bf16 ones, all three) without autograd, unless
    MINI_PLATFORM_CPU_COMPILED=0; mixed or other dtypes (their numbers are checked in the random-batch test above) go
    to the torch kernel; a value of the variable that means nothing is refused."""
    from mini_platform import envs
    from mini_platform.ops.cpu import compiled
    cache = torch.zeros(2, 16, 2, HEAD_DIM)
    query = torch.zeros(1, 4, HEAD_DIM)
    assert compiled.available(query, cache, cache) and compiled.describe().startswith("compiled with numba")
    assert not compiled.available(query.bfloat16(), cache, cache)
    assert not compiled.available(query.bfloat16(), cache, cache, dtype=torch.bfloat16)
    assert compiled.available(query.bfloat16(), cache.bfloat16(), cache.bfloat16(), dtype=torch.bfloat16)
    assert not compiled.available(query, cache.half(), cache) and not compiled.available(query, cache, cache.half())
    assert not compiled.available(query.requires_grad_(), cache, cache)
    monkeypatch.setenv(envs.CPU_COMPILED, "0")
    assert not compiled.available(torch.zeros(1, 4, HEAD_DIM), cache) and compiled.describe().startswith("torch")
    monkeypatch.setenv(envs.CPU_COMPILED, "yes")
    with pytest.raises(ValueError, match="MINI_PLATFORM_CPU_COMPILED='yes' is not understood"):
        compiled.available(query, cache)


def test_causal_mask_matters():
    """Guard for the comparison above: without the mask the prefix-hit outputs differ."""
    batch = make_batch(SCENARIOS["prefix_hit"], 4, 4, 16, torch.float32, seed=0)
    query, key_cache, value_cache, block_tables, query_start_loc, seq_lens = batch
    causal = run("cpu", batch, 0.25, decode=False)
    # Seeing everything = every query at the last position: compare with each query alone as a decode.
    last_only = []
    for b, seq_len in enumerate(seq_lens.tolist()):
        rows = query[query_start_loc[b]:query_start_loc[b + 1]]
        last_only.append(ops.paged_decode_attention(rows, key_cache, value_cache,
                                                    block_tables[b:b + 1].expand(len(rows), -1),
                                                    torch.full((len(rows),), seq_len, dtype=torch.int32), 0.25,
                                                    backend="cpu"))
    assert not torch.allclose(causal, torch.cat(last_only), atol=1e-3)


@pytest.mark.parametrize("backend", ["triton", "npu"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_backend_matches_cpu_reference(backend, case, request):
    if backend == "npu":
        request.getfixturevalue("emulated_npu")
    scenario, heads, block_size, dtype = case
    batch = make_batch(SCENARIOS[scenario], *HEADS[heads], block_size, dtype, seed=100 + CASES.index(case))
    scale = HEAD_DIM ** -0.5
    decode = scenario == "decode_ragged"
    want = run("cpu", batch, scale, decode)
    got = run(backend, batch, scale, decode)
    assert got.dtype == dtype and got.shape == want.shape
    torch.testing.assert_close(got.float(), want.float(), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("backend", ["cpu", "triton", "npu"])
@pytest.mark.parametrize("num_heads, num_kv_heads, head_dim", [(6, 2, 24), (20, 1, 16)])
def test_odd_head_dim_and_wide_gqa_groups(backend, num_heads, num_kv_heads, head_dim, request):
    """head_dim not a power of two (the Triton kernel pads it to 32 and masks), and 20 query heads per
    KV head (more than 16 rows: one query token per Triton program, 12 padded rows)."""
    if backend == "npu":
        request.getfixturevalue("emulated_npu")
    batch = make_batch(SCENARIOS["empty_queries"], num_heads, num_kv_heads, 16, torch.float32, seed=num_heads,
                       head_dim=head_dim)
    got = run(backend, batch, head_dim ** -0.5, decode=False)
    torch.testing.assert_close(got, dense_reference(*batch, head_dim ** -0.5), atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_decode_batch_gives_the_same_through_both_entry_points(backend):
    """paged_attention with only decodes equals paged_decode_attention."""
    batch = make_batch(SCENARIOS["decode_ragged"], 6, 2, 16, torch.float32, seed=7)
    torch.testing.assert_close(run(backend, batch, 0.3, decode=False), run(backend, batch, 0.3, decode=True))


@pytest.mark.parametrize("backend", ["triton", "npu"])
def test_strided_metadata_tensors_are_read_correctly(backend, request):
    """Views with a stride (e.g. a column of a larger buffer) as seq_lens, query_start_loc, slot_mapping."""
    if backend == "npu":
        request.getfixturevalue("emulated_npu")

    def strided(t):
        return torch.stack([t, torch.full_like(t, 7)], dim=1)[:, 0]

    query, key_cache, value_cache, block_tables, query_start_loc, seq_lens = make_batch(
        SCENARIOS["mixed"], 6, 2, 16, torch.float32, seed=5)
    want = ops.paged_attention(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, 0.25,
                               backend="cpu")
    got = ops.paged_attention(query, key_cache, value_cache, block_tables, strided(query_start_loc),
                              strided(seq_lens), 0.25, backend=backend)
    torch.testing.assert_close(got, want)
    caches = [torch.zeros(4, 16, 2, HEAD_DIM) for _ in range(4)]
    key = torch.randn(3, 2, HEAD_DIM, generator=torch.Generator().manual_seed(6))
    slots = torch.tensor([3, 17, -1], dtype=torch.int32)
    ops.reshape_and_cache(key, key, caches[0], caches[1], slots, backend="cpu")
    ops.reshape_and_cache(key, key, caches[2], caches[3], strided(slots), backend=backend)
    assert torch.equal(caches[2], caches[0]) and torch.equal(caches[3], caches[1])


@pytest.mark.parametrize("backend", ["cpu", "triton", "npu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_reshape_and_cache_writes_slots_and_skips_padding(backend, dtype, request):
    if backend == "npu":
        request.getfixturevalue("emulated_npu")
    gen = torch.Generator().manual_seed(3)
    num_blocks, block_size, nkv = 4, 16, 2
    key_cache = torch.randn(num_blocks, block_size, nkv, HEAD_DIM, generator=gen).to(dtype)
    value_cache = torch.randn(num_blocks, block_size, nkv, HEAD_DIM, generator=gen).to(dtype)
    slots = torch.tensor([17, -1, 0, 63, -1, 40, 15], dtype=torch.int32)
    key = torch.randn(len(slots), nkv, HEAD_DIM, generator=gen).to(dtype)
    value = torch.randn(len(slots), nkv, HEAD_DIM, generator=gen).to(dtype)
    want_k, want_v = key_cache.clone(), value_cache.clone()
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            want_k[s // block_size, s % block_size] = key[t]
            want_v[s // block_size, s % block_size] = value[t]
    ops.reshape_and_cache(key, value, key_cache, value_cache, slots, backend=backend)
    assert torch.equal(key_cache, want_k) and torch.equal(value_cache, want_v)


def test_cpu_rejects_bad_input():
    cache = torch.zeros(2, 16, 1, HEAD_DIM)
    with pytest.raises(ValueError, match="outside the cache"):
        ops.reshape_and_cache(torch.zeros(1, 1, HEAD_DIM), torch.zeros(1, 1, HEAD_DIM), cache, cache.clone(),
                              torch.tensor([32], dtype=torch.int32), backend="cpu")
    with pytest.raises(ValueError, match="multiple of the cache's num_kv_heads"):
        ops.paged_decode_attention(torch.zeros(1, 3, HEAD_DIM), torch.zeros(2, 16, 2, HEAD_DIM),
                                   torch.zeros(2, 16, 2, HEAD_DIM), torch.zeros(1, 2, dtype=torch.int32),
                                   torch.ones(1, dtype=torch.int32), 1.0, backend="cpu")
    with pytest.raises(ValueError, match="max_blocks \\* block_size"):
        ops.paged_decode_attention(torch.zeros(1, 1, HEAD_DIM), cache, cache, torch.zeros(1, 2, dtype=torch.int32),
                                   torch.tensor([33], dtype=torch.int32), 1.0, backend="cpu")


@pytest.mark.parametrize("padding", [0, 3], ids=["unpadded", "padded"])
@pytest.mark.parametrize("backend", ["cpu", "triton", "npu"])
def test_paged_attention_module_prefill_then_decode_matches_full_causal(backend, padding, request):
    """Two steps through PagedAttention (prefill of two prompts, then one decode each) equal causal
    attention over the whole sequences computed at once. ``padded``: each step also carries padding
    tokens after the real ones (slot -1, outside ``query_start_loc``), as a fixed-shape step would;
    they must leave the cache and the real tokens' outputs alone, in the decode step too."""
    if backend == "npu":
        request.getfixturevalue("emulated_npu")
    pad_gen = torch.Generator().manual_seed(12)

    def pad(tensors, slot_mapping):
        rows = [torch.cat([t, 100 * torch.randn(padding, *t.shape[1:], generator=pad_gen)]) for t in tensors]
        return rows, torch.tensor(slot_mapping + [-1] * padding, dtype=torch.int32)

    gen = torch.Generator().manual_seed(11)
    nh, nkv, block_size, lens = 4, 2, 16, [19, 6]
    kv_caches = allocate_kv_caches(1, 6, block_size, nkv, HEAD_DIM, torch.float32)
    assert kv_caches[0][0].shape == (6, block_size, nkv, HEAD_DIM)
    for cache in kv_caches[0]:  # the cache is uninitialised: slots never written may hold anything, NaN included
        cache.fill_(float("nan"))
    attn = PagedAttention(kv_caches, backend=backend)
    block_tables = torch.tensor([[4, 1], [2, 0]], dtype=torch.int32)
    seqs = [[torch.randn(n + 1, h, HEAD_DIM, generator=gen) for h in (nh, nkv, nkv)] for n in lens]

    def slots(b, positions):
        return [int(block_tables[b, p // block_size]) * block_size + p % block_size for p in positions]

    prefill, slot_mapping = pad([torch.cat([s[i][:n] for s, n in zip(seqs, lens)]) for i in range(3)],
                                slots(0, range(19)) + slots(1, range(6)))
    attn.metadata = AttentionMetadata(
        slot_mapping=slot_mapping, block_tables=block_tables,
        query_start_loc=torch.tensor([0, 19, 25], dtype=torch.int32),
        seq_lens=torch.tensor(lens, dtype=torch.int32), max_query_len=19)
    out_prefill = attn(0, *prefill)
    decode, slot_mapping = pad([torch.stack([s[i][n] for s, n in zip(seqs, lens)]) for i in range(3)],
                               slots(0, [19]) + slots(1, [6]))
    attn.metadata = AttentionMetadata(
        slot_mapping=slot_mapping, block_tables=block_tables,
        query_start_loc=torch.tensor([0, 1, 2], dtype=torch.int32),
        seq_lens=torch.tensor([n + 1 for n in lens], dtype=torch.int32), max_query_len=1)
    out_decode = attn(0, *decode)
    assert out_prefill.shape == prefill[0].shape and out_decode.shape == decode[0].shape
    assert not out_prefill[25:].any() and not out_decode[2:].any()     # padding rows come out as zeros
    assert all(cache[[3, 5]].isnan().all() for cache in kv_caches[0])  # blocks no request owns stay untouched
    for b, (q, k, v) in enumerate(seqs):
        full = F.scaled_dot_product_attention(q.transpose(0, 1), k.repeat_interleave(2, 1).transpose(0, 1),
                                              v.repeat_interleave(2, 1).transpose(0, 1), is_causal=True).transpose(0, 1)
        start = [0, 19][b]
        torch.testing.assert_close(out_prefill[start:start + lens[b]], full[:-1], atol=2e-5, rtol=2e-5)
        torch.testing.assert_close(out_decode[b], full[-1], atol=2e-5, rtol=2e-5)


def test_paged_attention_module_needs_metadata():
    attn = PagedAttention(allocate_kv_caches(1, 2, 16, 1, HEAD_DIM, torch.float32), backend="cpu")
    with pytest.raises(RuntimeError, match="metadata is not set"):
        attn(0, torch.zeros(1, 1, HEAD_DIM), torch.zeros(1, 1, HEAD_DIM), torch.zeros(1, 1, HEAD_DIM))


@pytest.mark.npu
@pytest.mark.parametrize("case", [c for c in CASES if c[3] != torch.float32], ids=case_id)
def test_real_torch_npu_matches_cpu_reference(case):
    """On an Ascend machine: the npu backend on real torch_npu (fp16/bf16) against the CPU reference."""
    pytest.importorskip("torch_npu")
    scenario, heads, block_size, dtype = case
    batch = make_batch(SCENARIOS[scenario], *HEADS[heads], block_size, dtype, seed=200 + CASES.index(case))
    scale, decode = HEAD_DIM ** -0.5, scenario == "decode_ragged"
    want = run("cpu", batch, scale, decode)
    got = run("npu", tuple(t.to("npu") for t in batch), scale, decode).cpu()
    torch.testing.assert_close(got.float(), want.float(), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.npu
def test_real_torch_npu_reshape_and_cache_skips_padding():
    """On an Ascend machine: the npu KV write on real torch_npu equals the CPU reference, padding untouched."""
    pytest.importorskip("torch_npu")
    gen = torch.Generator().manual_seed(5)
    caches = [torch.randn(4, 16, 2, HEAD_DIM, generator=gen).half() for _ in range(2)]
    key, value = (torch.randn(6, 2, HEAD_DIM, generator=gen).half() for _ in range(2))
    slots = torch.tensor([17, -1, 0, 63, -1, 40], dtype=torch.int32)
    want = [c.clone() for c in caches]
    ops.reshape_and_cache(key, value, *want, slots, backend="cpu")
    on_npu = [c.to("npu") for c in caches]
    ops.reshape_and_cache(key.to("npu"), value.to("npu"), *on_npu, slots.to("npu"), backend="npu")
    assert all(torch.equal(got.cpu(), w) for got, w in zip(on_npu, want))
