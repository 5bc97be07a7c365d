"""Tests of exercise 245: the per-replay attention update of an ACL graph, emulated on the CPU."""
import random

import pytest
import torch

from submission import update_attention_tasks

BLOCK, NKV, NH, HD = 4, 1, 2, 8


class Event:
    def __init__(self):
        self.recorded = False

    def record(self):
        self.recorded = True


class AttentionTask:
    """One captured attention launch: device tensors by reference, host-side seq_lens frozen until updated."""

    def __init__(self, query, key_cache, value_cache, block_tables, seq_lens, out):
        self.query, self.key_cache, self.value_cache = query, key_cache, value_cache
        self.block_tables, self.out = block_tables, out
        self.num_rows = query.shape[0]
        self._seq_lens, self._updating, self.event = list(seq_lens), False, Event()

    @property
    def seq_lens(self):
        return self._seq_lens

    @seq_lens.setter
    def seq_lens(self, value):
        if not self._updating:
            raise RuntimeError("task parameters change only between begin_update() and end_update()")
        self._seq_lens = value

    def begin_update(self):
        self._updating = True

    def end_update(self):
        if not self._updating:
            raise RuntimeError("end_update() without begin_update()")
        if len(self._seq_lens) != self.num_rows:
            raise ValueError(f"the graph was captured for {self.num_rows} rows, got {len(self._seq_lens)} lengths")
        self._updating = False

    def run(self):
        if self._updating:
            raise RuntimeError("the task ran while its update was still open")
        if not self.event.recorded:
            raise RuntimeError("attention task waits on an event nobody recorded: the graph hangs")
        self.event.recorded = False
        self.out.copy_(attention(self.query, self.key_cache, self.value_cache, self.block_tables, self._seq_lens))


class Graph:
    def __init__(self, tasks):
        self.tasks, self.launched = tasks, False

    def launch(self):
        self.launched = True

    def synchronize(self):
        assert self.launched
        for task in self.tasks:
            task.run()
        self.launched = False


def attention(query, key_cache, value_cache, block_tables, seq_lens):
    out = torch.zeros_like(query)
    for r, n in enumerate(seq_lens):
        if n == 0:
            continue
        blocks = block_tables[r, : -(-n // BLOCK)].long()
        k = key_cache[blocks].flatten(0, 1)[:n].repeat_interleave(NH // NKV, dim=1)
        v = value_cache[blocks].flatten(0, 1)[:n].repeat_interleave(NH // NKV, dim=1)
        scores = torch.einsum("hd,khd->hk", query[r], k) * HD ** -0.5
        out[r] = torch.einsum("hk,khd->hd", scores.softmax(-1), v)
    return out


def make_graph(num_layers, captured_seq_lens, seed=0):
    gen = torch.Generator().manual_seed(seed)
    rows, width = len(captured_seq_lens), 4
    block_tables = torch.arange(rows * width, dtype=torch.int32).reshape(rows, width)   # shared by all layers
    tasks = []
    for _ in range(num_layers):
        cache_shape = (rows * width, BLOCK, NKV, HD)
        tasks.append(AttentionTask(torch.randn(rows, NH, HD, generator=gen), torch.randn(cache_shape, generator=gen),
                                   torch.randn(cache_shape, generator=gen), block_tables, captured_seq_lens,
                                   torch.zeros(rows, NH, HD)))
    return Graph(tasks)


def expected(graph, seq_lens):
    padded = list(seq_lens) + [0] * (graph.tasks[0].num_rows - len(seq_lens))
    return [attention(t.query, t.key_cache, t.value_cache, t.block_tables, padded) for t in graph.tasks]


def replay(graph, seq_lens):
    graph.launch()
    update_attention_tasks(graph.tasks, seq_lens)
    graph.synchronize()
    return [t.out.clone() for t in graph.tasks]


def test_example():
    graph = make_graph(num_layers=2, captured_seq_lens=[5, 3, 0, 0])
    got = replay(graph, [6, 4])
    for g, w in zip(got, expected(graph, [6, 4])):
        torch.testing.assert_close(g, w)


def test_every_layer_is_updated():
    graph = make_graph(num_layers=4, captured_seq_lens=[2, 2, 2])
    got = replay(graph, [9, 1, 5])
    for layer, (g, w) in enumerate(zip(got, expected(graph, [9, 1, 5]))):
        torch.testing.assert_close(g, w, msg=f"layer {layer}")


def test_padding_rows_have_length_zero():
    graph = make_graph(num_layers=1, captured_seq_lens=[3, 3, 3, 3])
    got = replay(graph, [7])
    assert graph.tasks[0].seq_lens == [7, 0, 0, 0]
    assert got[0][1:].abs().max() == 0


def test_many_steps_in_a_row():
    graph = make_graph(num_layers=3, captured_seq_lens=[1, 2, 0, 0])
    for step in range(5):
        lens = [1 + step, 2 + step, 3]
        for g, w in zip(replay(graph, lens), expected(graph, lens)):
            torch.testing.assert_close(g, w, msg=f"step {step}")


def test_caller_list_is_not_modified():
    graph = make_graph(num_layers=2, captured_seq_lens=[1, 1, 1, 1])
    lens = [4, 5]
    replay(graph, lens)
    assert lens == [4, 5]


def test_too_many_requests():
    graph = make_graph(num_layers=2, captured_seq_lens=[1, 1])
    with pytest.raises(ValueError):
        update_attention_tasks(graph.tasks, [3, 3, 3])
    assert all(t.seq_lens == [1, 1] and not t.event.recorded and not t._updating for t in graph.tasks)


@pytest.mark.parametrize("seed", range(4))
def test_random_steps(seed):
    rng = random.Random(seed)
    rows = rng.randint(1, 6)
    graph = make_graph(num_layers=rng.randint(1, 4), captured_seq_lens=[rng.randint(0, 16) for _ in range(rows)],
                       seed=seed)
    for _ in range(4):
        lens = [rng.randint(1, 16) for _ in range(rng.randint(1, rows))]
        for g, w in zip(replay(graph, lens), expected(graph, lens)):
            torch.testing.assert_close(g, w)
