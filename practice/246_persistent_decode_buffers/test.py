"""Tests of exercise 246: persistent input buffers, filled in place."""
import random

import pytest
import torch

from mini_platform.model.paged_attention import AttentionMetadata
from mini_platform.ops import graph as cpu_graph
from submission import InputBuffers

FIELDS = ("input_ids", "positions", "slot_mapping", "block_tables", "seq_lens", "query_start_loc")


def example_buffers():
    bufs = InputBuffers(max_num_tokens=8, max_num_seqs=4, max_blocks_per_seq=3)
    bufs.fill([5, 6, 7, 9], [0, 1, 2, 4], [8, 9, 10, 21], [[2], [5, 3]], seq_lens=[3, 5], query_lens=[3, 1])
    return bufs


def test_example():
    assert InputBuffers(8, 4, 3).slot_mapping.tolist() == [-1] * 8
    bufs = example_buffers()
    assert bufs.input_ids[:4].tolist() == [5, 6, 7, 9]
    assert bufs.query_start_loc[:3].tolist() == [0, 3, 4]
    assert bufs.block_tables[:2].tolist() == [[2, 0, 0], [5, 3, 0]]
    md = bufs.metadata(num_tokens=4, num_seqs=2, max_query_len=3)
    assert isinstance(md, AttentionMetadata)
    assert md.seq_lens.tolist() == [3, 5] and md.slot_mapping.data_ptr() == bufs.slot_mapping.data_ptr()
    assert md.max_query_len == 3


def test_fresh_buffers_have_the_stated_shapes_dtypes_and_values():
    bufs = InputBuffers(6, 3, 5)
    want = {"input_ids": ((6,), torch.int64, 0), "positions": ((6,), torch.int64, 0),
            "slot_mapping": ((6,), torch.int32, -1), "block_tables": ((3, 5), torch.int32, 0),
            "seq_lens": ((3,), torch.int32, 0), "query_start_loc": ((4,), torch.int32, 0)}
    for name, (shape, dtype, value) in want.items():
        t = getattr(bufs, name)
        assert (tuple(t.shape), t.dtype, t.device.type) == (shape, dtype, "cpu"), name
        assert bool((t == value).all()), name


def test_buffers_are_allocated_on_the_given_device():
    bufs = InputBuffers(6, 3, 5, device="meta")     # a device with no data: only where the tensors live is checked
    devices = {name: getattr(bufs, name).device.type for name in FIELDS}
    assert devices == dict.fromkeys(FIELDS, "meta"), devices


def test_fill_writes_in_place():
    bufs = InputBuffers(8, 4, 3)
    pointers = {name: getattr(bufs, name).data_ptr() for name in FIELDS}
    objects = {name: getattr(bufs, name) for name in FIELDS}
    for step in range(3):
        bufs.fill([step + 1] * 4, [step] * 4, [step * 4 + i for i in range(4)], [[step]] * 4, [step + 1] * 4, [1] * 4)
        assert {name: getattr(bufs, name).data_ptr() for name in FIELDS} == pointers
        assert all(getattr(bufs, name) is objects[name] for name in FIELDS)
    assert objects["input_ids"][:4].tolist() == [3] * 4 and objects["seq_lens"].tolist() == [3] * 4


def test_a_captured_graph_sees_every_fill():
    bufs = InputBuffers(4, 4, 2)
    bufs.fill([0] * 4, [0] * 4, [-1] * 4, [[0]] * 4, [0] * 4, [1] * 4)
    md = bufs.metadata(4, 4, max_query_len=1)
    g = cpu_graph.Graph()
    with cpu_graph.graph(g):
        out = bufs.input_ids[:4] * 100 + bufs.positions[:4] * 10 + md.seq_lens + md.slot_mapping
    bufs.fill([1, 2, 3, 4], [5, 6, 7, 8], [9, 8, 7, -1], [[1], [2], [3], [0]], [1, 2, 3, 0], [1, 1, 1, 1])
    g.replay()
    assert out.tolist() == [160, 270, 380, 479]


def test_metadata_is_views_of_the_first_rows():
    bufs = example_buffers()
    md = bufs.metadata(num_tokens=3, num_seqs=1, max_query_len=3)
    for field, name, rows in (("slot_mapping", "slot_mapping", 3), ("block_tables", "block_tables", 1),
                              ("query_start_loc", "query_start_loc", 2), ("seq_lens", "seq_lens", 1)):
        view = getattr(md, field)
        assert view.shape[0] == rows and view.data_ptr() == getattr(bufs, name).data_ptr(), field
    bufs.fill([1], [0], [40], [[7, 7]], [1], [1])
    assert md.slot_mapping[0].item() == 40 and md.seq_lens.tolist() == [1]   # later fills show through
    assert md.block_tables[0, :2].tolist() == [7, 7]


def test_query_start_loc_is_the_running_sum_from_zero():
    bufs = InputBuffers(16, 4, 2)
    bufs.fill([1] * 9, list(range(9)), [-1] * 9, [[0], [1], [2], [3]], [4, 1, 7, 2], [3, 1, 4, 1])
    assert bufs.query_start_loc.tolist() == [0, 3, 4, 8, 9]


def test_short_rows_are_zero_padded_to_the_widest_row():
    bufs = InputBuffers(8, 4, 4)
    bufs.fill([1] * 3, [0] * 3, [0] * 3, [[9, 9, 9], [9, 9, 9], [9, 9, 9]], [1] * 3, [1] * 3)
    bufs.fill([1] * 3, [0] * 3, [0] * 3, [[1, 2, 3], [4], []], [1] * 3, [1] * 3)
    assert bufs.block_tables[:3, :3].tolist() == [[1, 2, 3], [4, 0, 0], [0, 0, 0]]


def test_limits_are_checked_and_named():
    bufs = InputBuffers(4, 2, 3)
    bufs.fill([1] * 4, [0] * 4, [0] * 4, [[1, 2, 3], [4]], [1, 1], [2, 2])   # exactly full: fine
    with pytest.raises(ValueError, match="max_num_tokens"):
        bufs.fill([1] * 5, [0] * 5, [0] * 5, [[1]], [5], [5])
    with pytest.raises(ValueError, match="max_num_seqs"):
        bufs.fill([1] * 3, [0] * 3, [0] * 3, [[1], [2], [3]], [1] * 3, [1] * 3)
    with pytest.raises(ValueError, match="max_blocks_per_seq"):
        bufs.fill([1], [0], [0], [[1, 2, 3, 4]], [1], [1])
    with pytest.raises(ValueError, match="max_blocks_per_seq"):     # a later row too wide, not the first
        bufs.fill([1, 1], [0, 0], [0, 1], [[1], [1, 2, 3, 4]], [1, 1], [1, 1])
    with pytest.raises(ValueError, match="max_num_seqs"):           # requests without tokens are counted too
        bufs.fill([], [], [], [[1], [2], [3]], [1, 1, 1], [0, 0, 0])


def test_the_padded_empty_step_of_a_capture():
    # what the model runner fills before capturing a graph of 3: an empty step padded by pad_decode_step
    bufs = InputBuffers(4, 3, 2)
    bufs.fill([0, 0, 0], [0, 0, 0], [-1, -1, -1], [[], [], []], [0, 0, 0], [1, 1, 1])
    assert bufs.slot_mapping[:3].tolist() == [-1, -1, -1] and bufs.seq_lens.tolist() == [0, 0, 0]
    assert bufs.query_start_loc.tolist() == [0, 1, 2, 3] and bufs.block_tables.tolist() == [[0, 0]] * 3


def test_an_empty_step():
    bufs = InputBuffers(4, 2, 2)
    bufs.fill([], [], [], [], [], [])
    assert bufs.query_start_loc[0].item() == 0 and bufs.metadata(0, 0, 0).slot_mapping.numel() == 0


@pytest.mark.parametrize("seed", range(4))
def test_random_steps(seed):
    rng = random.Random(seed)
    bufs = InputBuffers(32, 6, 5)
    for _ in range(20):
        b = rng.randint(1, 6)
        query = [rng.randint(1, 32 // b) for _ in range(b)]
        t = sum(query)
        ids, pos = [rng.randrange(0, 300) for _ in range(t)], [rng.randrange(0, 80) for _ in range(t)]
        slots = [rng.randrange(-1, 200) for _ in range(t)]
        tables = [[rng.randrange(0, 50) for _ in range(rng.randint(0, 5))] for _ in range(b)]
        lens = [rng.randint(q, 80) for q in query]
        bufs.fill(ids, pos, slots, tables, lens, query)
        case = f"seed={seed}: fill({ids}, {pos}, {slots}, {tables}, {lens}, {query})"
        width = max(len(r) for r in tables)
        assert bufs.input_ids[:t].tolist() == ids and bufs.positions[:t].tolist() == pos, case
        assert bufs.slot_mapping[:t].tolist() == slots and bufs.seq_lens[:b].tolist() == lens, case
        assert bufs.query_start_loc[:b + 1].tolist() == [sum(query[:i]) for i in range(b + 1)], case
        assert bufs.block_tables[:b, :width].tolist() == [r + [0] * (width - len(r)) for r in tables], case
