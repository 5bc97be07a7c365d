"""Tests of exercise 246: persistent input buffers for decode graphs."""
import random

import pytest
import torch

from submission import DecodeBuffers, run_decode

BS, NUM_BLOCKS, D, V, MAX_BLOCKS = 4, 48, 8, 16, 4
SIZES = [1, 2, 4, 8]


class TinyModel:
    """Embedding + one attention layer over a paged KV cache + an output projection, in fp32."""

    def __init__(self, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.emb, self.wq, self.wk, self.wv = (torch.randn(V, D, generator=g), torch.randn(D, D, generator=g),
                                               torch.randn(D, D, generator=g), torch.randn(D, D, generator=g))
        self.wo = torch.randn(D, V, generator=g)

    def __call__(self, ids, pos, slots, seq_lens, tables, cache):
        key_cache, value_cache = cache
        h = self.emb[ids] + torch.sin(pos[:, None].float() * torch.arange(1, D + 1) / D)
        q, k, v = h @ self.wq, h @ self.wk, h @ self.wv
        keep = slots >= 0
        key_cache.view(-1, D)[slots[keep].long()] = k[keep]
        value_cache.view(-1, D)[slots[keep].long()] = v[keep]
        out = torch.zeros_like(h)
        for r, n in enumerate(seq_lens.tolist()):
            if n == 0:
                continue
            blocks = tables[r, : -(-n // BS)].long()
            keys, values = key_cache[blocks].reshape(-1, D)[:n], value_cache[blocks].reshape(-1, D)[:n]
            out[r] = ((keys @ q[r]) * D ** -0.5).softmax(-1) @ values
        return (h + out) @ self.wo


def new_cache(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(NUM_BLOCKS, BS, D, generator=g), torch.randn(NUM_BLOCKS, BS, D, generator=g)


def capture(buffers, model, cache, sizes=SIZES):
    """Emulated graphs: each reads the first P rows of the buffers that existed at capture time."""
    graphs, replays = {}, []
    for size in sizes:
        views = (buffers.input_ids[:size], buffers.positions[:size], buffers.slot_mapping[:size],
                 buffers.seq_lens[:size], buffers.block_tables[:size])
        out = torch.zeros(size, V)

        def replay(views=views, out=out, size=size):
            replays.append(size)
            out.copy_(model(*views, cache))
            return out
        graphs[size] = replay
    return graphs, replays


def make_batch(rng, n, used):
    batch = []
    for _ in range(n):
        pos = rng.randrange(MAX_BLOCKS * BS)
        table = []
        for _ in range(pos // BS + 1):
            block = rng.choice([b for b in range(1, NUM_BLOCKS) if b not in used])
            used.add(block)
            table.append(block)
        batch.append((rng.randrange(V), pos, table[pos // BS] * BS + pos % BS, table))
    return batch


def eager(model, cache, batch):
    ids = torch.tensor([b[0] for b in batch])
    pos = torch.tensor([b[1] for b in batch])
    slots = torch.tensor([b[2] for b in batch], dtype=torch.int32)
    lens = pos.to(torch.int32) + 1
    tables = torch.zeros(len(batch), MAX_BLOCKS, dtype=torch.int32)
    for r, b in enumerate(batch):
        tables[r, :len(b[3])] = torch.tensor(b[3], dtype=torch.int32)
    return model(ids, pos, slots, lens, tables, cache)


def check_step(model, buffers, graphs, eager_cache, graph_cache, batch):
    want = eager(model, eager_cache, batch)
    got = run_decode(buffers, graphs, batch)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(graph_cache[0], eager_cache[0], msg="key cache differs from eager")
    torch.testing.assert_close(graph_cache[1], eager_cache[1], msg="value cache differs from eager")
    return got


def test_example_fill():
    buffers = DecodeBuffers(max_size=8, max_blocks=4)
    buffers.fill([(5, 6, 14, [2, 3]), (9, 0, 4, [1])], padded_size=4)
    assert buffers.input_ids[:4].tolist() == [5, 9, 0, 0]
    assert buffers.positions[:4].tolist() == [6, 0, 0, 0]
    assert buffers.slot_mapping[:4].tolist() == [14, 4, -1, -1]
    assert buffers.seq_lens[:4].tolist() == [7, 1, 0, 0]
    assert buffers.block_tables[:4].tolist() == [[2, 3, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_example_run_decode():
    model, cache, eager_cache = TinyModel(), new_cache(), new_cache()
    buffers = DecodeBuffers(max_size=8, max_blocks=MAX_BLOCKS)
    graphs, replays = capture(buffers, model, cache)
    batch = make_batch(random.Random(0), 3, set())
    got = check_step(model, buffers, graphs, eager_cache, cache, batch)
    assert got.shape == (3, V) and replays == [4]


def test_allocation():
    buffers = DecodeBuffers(max_size=6, max_blocks=3)
    want = {"input_ids": (torch.int64, (6,)), "positions": (torch.int64, (6,)), "slot_mapping": (torch.int32, (6,)),
            "seq_lens": (torch.int32, (6,)), "block_tables": (torch.int32, (6, 3))}
    for name, (dtype, shape) in want.items():
        t = getattr(buffers, name)
        assert t.dtype == dtype and tuple(t.shape) == shape, f"{name}: {t.dtype} {tuple(t.shape)}"


def test_fill_writes_in_place():
    buffers = DecodeBuffers(max_size=8, max_blocks=MAX_BLOCKS)
    before = {n: getattr(buffers, n).data_ptr() for n in ("input_ids", "positions", "slot_mapping", "seq_lens",
                                                           "block_tables")}
    buffers.fill([(1, 2, 3, [0])], padded_size=2)
    for name, ptr in before.items():
        assert getattr(buffers, name).data_ptr() == ptr, f"{name} was replaced by a new tensor"


def test_stale_rows_and_columns_are_overwritten():
    buffers = DecodeBuffers(max_size=8, max_blocks=MAX_BLOCKS)
    buffers.fill([(i + 1, 9, 40 + i, [1, 2, 3]) for i in range(7)], padded_size=8)
    buffers.fill([(3, 1, 5, [1])] * 3, padded_size=4)
    assert buffers.slot_mapping[:4].tolist() == [5, 5, 5, -1]
    assert buffers.seq_lens[:4].tolist() == [2, 2, 2, 0]
    assert buffers.input_ids[3] == 0 and buffers.positions[3] == 0
    assert buffers.block_tables[:4].tolist() == [[1, 0, 0, 0]] * 3 + [[0, 0, 0, 0]]


def test_fill_errors():
    buffers = DecodeBuffers(max_size=4, max_blocks=2)
    with pytest.raises(ValueError):
        buffers.fill([(1, 0, 0, [0])] * 3, padded_size=2)
    with pytest.raises(ValueError):
        buffers.fill([(1, 0, 0, [0])], padded_size=8)


def test_smallest_fitting_graph_is_replayed():
    model, cache, eager_cache = TinyModel(), new_cache(), new_cache()
    buffers = DecodeBuffers(max_size=8, max_blocks=MAX_BLOCKS)
    graphs, replays = capture(buffers, model, cache)
    rng, used = random.Random(3), set()
    for n in (1, 2, 3, 5, 8):
        check_step(model, buffers, graphs, eager_cache, cache, make_batch(rng, n, used))
    assert replays == [1, 2, 4, 8, 8]
    with pytest.raises(ValueError):
        run_decode(buffers, graphs, make_batch(rng, 9, set()))


def test_result_survives_the_next_replay():
    model, cache, eager_cache = TinyModel(), new_cache(), new_cache()
    buffers = DecodeBuffers(max_size=8, max_blocks=MAX_BLOCKS)
    graphs, _ = capture(buffers, model, cache)
    rng, used = random.Random(5), set()
    first = check_step(model, buffers, graphs, eager_cache, cache, make_batch(rng, 2, used))
    kept = first.clone()
    check_step(model, buffers, graphs, eager_cache, cache, make_batch(rng, 2, used))
    torch.testing.assert_close(first, kept, msg="the returned logits changed when the graph replayed again")


@pytest.mark.parametrize("seed", range(4))
def test_random_steps_match_eager_and_keep_the_cache_clean(seed):
    rng = random.Random(seed)
    model, cache = TinyModel(seed), new_cache(seed + 10)
    eager_cache = (cache[0].clone(), cache[1].clone())
    buffers = DecodeBuffers(max_size=8, max_blocks=MAX_BLOCKS)
    graphs, _ = capture(buffers, model, cache)
    for _ in range(6):
        check_step(model, buffers, graphs, eager_cache, cache, make_batch(rng, rng.randint(1, 8), set()))
