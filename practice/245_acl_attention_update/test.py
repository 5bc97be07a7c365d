"""Tests of exercise 245: the per-replay attention update of an ACL graph (emulated torch_npu, on the CPU)."""
import inspect
import random
import sys

import pytest
import torch

from mini_platform.ascend.acl_graph import ACLGraphWrapper
from mini_platform.ascend.emulation import emulated_torch_npu
from mini_platform.ascend.ops import attention as npu_attention
from submission import update_attn_params

LAYERS, HEADS, KV_HEADS, DIM, BLOCK, BLOCKS, WIDTH, ROWS = 3, 4, 2, 8, 16, 12, 3, 8


@pytest.fixture(autouse=True)
def npu():
    with emulated_torch_npu() as torch_npu:
        yield torch_npu


class ToyDecoder:
    """LAYERS layers of npu paged decode attention over persistent buffers, one ACL graph per capture size."""

    def __init__(self, capture_sizes, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.caches = [(torch.randn(BLOCKS, BLOCK, KV_HEADS, DIM, generator=g),
                        torch.randn(BLOCKS, BLOCK, KV_HEADS, DIM, generator=g)) for _ in range(LAYERS)]
        self.query = torch.zeros(ROWS, HEADS, DIM)
        self.block_tables = torch.zeros(ROWS, WIDTH, dtype=torch.int32)
        self.seq_lens = torch.zeros(ROWS, dtype=torch.int64)   # int64: the kernel hands a host int32 copy to the op
        self.rng = random.Random(seed)
        self.wrapper = ACLGraphWrapper(self.forward, "cpu")
        for size in sorted(capture_sizes, reverse=True):
            self.wrapper.capture(size)

    def forward(self, size):
        return torch.stack([npu_attention.paged_decode_attention(self.query[:size], k, v, self.block_tables[:size],
                                                                 self.seq_lens[:size], DIM ** -0.5)
                            for k, v in self.caches])

    def set_step(self, seq_lens):
        """Write a step's queries, block tables and lengths (padding rows: length 0) into the buffers."""
        b = len(seq_lens)
        self.query.copy_(torch.randn(ROWS, HEADS, DIM, generator=torch.Generator().manual_seed(self.rng.randrange(2**31))))
        tables = [self.rng.sample(range(BLOCKS), WIDTH) for _ in range(b)] + [[0] * WIDTH] * (ROWS - b)
        self.block_tables.copy_(torch.tensor(tables, dtype=torch.int32))
        self.seq_lens.copy_(torch.tensor(list(seq_lens) + [0] * (ROWS - b)))

    def eager(self, size):
        return self.forward(size).clone()

    def replay_and_update(self, size, seq_lens=None, update=update_attn_params):
        graph, output = self.wrapper.entries[size]
        graph.replay()
        update(self.wrapper.update_stream, self.wrapper.params, size,
               self.seq_lens[:size] if seq_lens is None else seq_lens)
        sys.modules["torch_npu"].npu.current_stream().synchronize()
        return output


def test_example(npu):
    model = ToyDecoder([2, 4])
    model.set_step([17, 5, 30])
    npu_graph = model.wrapper.entries[4][0]
    npu_graph.replay()
    update_attn_params(model.wrapper.update_stream, model.wrapper.params, 4, model.seq_lens[:4])
    npu.npu.current_stream().synchronize()
    torch.testing.assert_close(model.wrapper.entries[4][1], model.eager(4))


def test_every_layer_of_every_step_sees_the_new_lengths():
    model = ToyDecoder([4])
    lengths = [3, 20, 1, 9]
    for _ in range(4):                      # the events re-arm: every replay needs its own records
        lengths = [n + 1 for n in lengths]
        model.set_step(lengths)
        torch.testing.assert_close(model.replay_and_update(4), model.eager(4))


def test_the_graph_of_this_size_is_updated_not_another():
    model = ToyDecoder([2, 4, 8])
    model.set_step([40, 2])
    torch.testing.assert_close(model.replay_and_update(2), model.eager(2))
    model.set_step([7, 8, 9, 10, 11])
    torch.testing.assert_close(model.replay_and_update(8), model.eager(8))


def test_without_the_update_the_output_would_be_stale():
    # What the update prevents: release the graph without updating, and attention uses the capture's lengths.
    model = ToyDecoder([4])
    model.set_step([30, 12, 6, 0])

    def release_only(stream, params, size, seq_lens):
        for event in params.events[size]:
            event.record(stream)

    stale = model.replay_and_update(4, update=release_only).clone()
    assert not torch.allclose(stale, model.eager(4))
    torch.testing.assert_close(model.replay_and_update(4), model.eager(4))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16])
def test_lengths_of_any_integer_dtype_are_handed_over_as_host_int32(dtype):
    model = ToyDecoder([4])
    model.set_step([33, 1, 16])
    torch.testing.assert_close(model.replay_and_update(4, seq_lens=model.seq_lens[:4].to(dtype)), model.eager(4))


def test_captured_arguments_and_workspace_are_passed(npu, monkeypatch):
    model = ToyDecoder([2, 4])
    params, calls = model.wrapper.params, []
    real = npu._npu_paged_attention
    signature = inspect.signature(real)

    def spy(*args, **kwargs):
        calls.append(signature.bind(*args, **kwargs).arguments)
        return real(*args, **kwargs)

    monkeypatch.setattr(npu, "_npu_paged_attention", spy)
    model.set_step([5, 6, 7])
    model.replay_and_update(4)
    assert len(calls) == LAYERS
    names = ("query", "key_cache", "value_cache", "num_kv_heads", "num_heads", "scale_value", "block_table")
    for call, captured in zip(calls, params.attn_params[4]):
        for name, value in zip(names, captured):
            assert call[name] is value or call[name] == value, name
        assert call["out"] is captured[8]
        assert call["workspace"] is params.workspaces[4]
        assert call["context_lens"].dtype == torch.int32 and call["context_lens"].tolist() == [5, 6, 7, 0]
        # the step's lengths, not the tensor saved at capture (on the device that one holds the capture's lengths)
        assert call["context_lens"].data_ptr() != captured[7].data_ptr()


@pytest.mark.parametrize("bad", [lambda m: m.seq_lens[:3], lambda m: m.seq_lens[:8], lambda m: m.seq_lens[:4].view(2, 2),
                                 lambda m: m.seq_lens[:4].view(4, 1)], ids=["(3,)", "(8,)", "(2, 2)", "(4, 1)"])
def test_lengths_of_the_wrong_shape_raise_and_touch_nothing(npu, bad):
    model = ToyDecoder([4])
    model.set_step([9, 9, 9, 9])
    graph, _ = model.wrapper.entries[4]
    graph.replay()
    with pytest.raises(ValueError):
        update_attn_params(model.wrapper.update_stream, model.wrapper.params, 4, bad(model))
    with pytest.raises(RuntimeError, match="never recorded"):   # still waiting: no event was recorded
        npu.npu.current_stream().synchronize()
    update_attn_params(model.wrapper.update_stream, model.wrapper.params, 4, model.seq_lens[:4])
    npu.npu.current_stream().synchronize()
    torch.testing.assert_close(model.wrapper.entries[4][1], model.eager(4))


def test_a_size_never_captured_raises():
    model = ToyDecoder([2, 4])
    with pytest.raises(ValueError):
        update_attn_params(model.wrapper.update_stream, model.wrapper.params, 3, model.seq_lens[:3])
