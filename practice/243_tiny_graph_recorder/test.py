"""Tests of exercise 243: a tiny graph recorder."""
import random

import pytest

from submission import Buffer, Graph, Stream

calls = []


def scale(out, x, k):
    calls.append("scale")
    for i in range(len(x.data)):
        out.data[i] = k * x.data[i]


def add(out, a, b):
    calls.append("add")
    for i in range(len(a.data)):
        out.data[i] = a.data[i] + b.data[i]


def gather(out, x, index):                 # index: a host list, frozen at capture
    for i, j in enumerate(index):
        out.data[i] = x.data[j]


def gather_rows(out, x, rows):             # rows: a host list of lists
    for i, row in enumerate(rows):
        out.data[i] = sum(x.data[j] for j in row)


def lookup(out, x, table):               # table: a host dict {output row: input row}
    for i, j in table.items():
        out.data[i] = x.data[j]


class Picks:                               # a host object holding a list
    def __init__(self, rows):
        self.rows = rows


def pick(out, x, picks):
    for i, j in enumerate(picks.rows):
        out.data[i] = x.data[j]


def test_example():
    x, out = Buffer([1, 2, 3]), Buffer([0, 0, 0])
    stream, graph = Stream(), Graph()
    k = 2
    with graph.capture(stream):
        stream.launch(scale, out, x, k)
    assert out.data == [0, 0, 0]
    graph.replay()
    assert out.data == [2, 4, 6]
    x.data[:] = [10, 20, 30]
    k = 5  # noqa: F841  (the point: the graph does not see it)
    graph.replay()
    assert out.data == [20, 40, 60]


def test_eager_launch_runs_now():
    x, out = Buffer([1, 2]), Buffer([0, 0])
    Stream().launch(scale, out, x, 3)
    assert out.data == [3, 6]


def test_capture_records_without_running():
    calls.clear()
    x, out = Buffer([1, 2]), Buffer([0, 0])
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        stream.launch(scale, out, x, 3)
        stream.launch(add, out, out, x)
    assert calls == [] and out.data == [0, 0] and graph.num_nodes == 2


def test_replay_keeps_order_and_repeats():
    calls.clear()
    x, out = Buffer([1, 2]), Buffer([0, 0])
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        stream.launch(scale, out, x, 3)
        stream.launch(add, out, out, x)     # out = 3x + x
    for _ in range(3):
        graph.replay()
    assert out.data == [4, 8] and calls == ["scale", "add"] * 3


def test_stream_is_eager_again_after_capture():
    x, out = Buffer([1]), Buffer([0])
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        pass
    stream.launch(scale, out, x, 7)
    assert out.data == [7] and graph.num_nodes == 0


def test_stream_is_eager_again_after_an_exception():
    x, out = Buffer([1]), Buffer([0])
    stream, graph = Stream(), Graph()
    with pytest.raises(KeyError):
        with graph.capture(stream):
            raise KeyError("boom")
    stream.launch(scale, out, x, 7)
    assert out.data == [7]


def test_host_list_is_frozen_but_buffer_is_live():
    x, out = Buffer([10, 20, 30, 40]), Buffer([0, 0])
    index = [3, 0]
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        stream.launch(gather, out, x, index)
    index[0] = 1
    x.data[3] = 99
    graph.replay()
    assert out.data == [99, 10]


def test_nested_host_values_are_frozen_too():
    x, out = Buffer([1, 2, 4, 8]), Buffer([0, 0])
    rows = [[0, 1], [2, 3]]
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        stream.launch(gather_rows, out, x, rows)
    rows[1].append(0)
    graph.replay()
    assert out.data == [3, 12]


def test_an_empty_graph_replays_as_nothing():
    x = Buffer([1, 2])
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        pass
    graph.replay()                         # captured (with no launch): replaying it is allowed and does nothing
    graph.replay()
    assert graph.num_nodes == 0 and x.data == [1, 2]
    with pytest.raises(RuntimeError):      # and it counts as captured
        with graph.capture(stream):
            pass


@pytest.mark.parametrize("kind", ["dict", "tuple of lists", "object"])
def test_every_host_value_is_frozen_not_only_lists(kind):
    x, out = Buffer([10, 20, 30]), Buffer([0, 0])
    if kind == "dict":
        kernel, host, change = lookup, {0: 2, 1: 0}, lambda h: h.update({0: 1})
    elif kind == "tuple of lists":
        kernel, host, change = gather_rows, ([0, 1], [2]), lambda h: h[1].append(0)
    else:
        kernel, host, change = pick, Picks([2, 0]), lambda h: h.rows.reverse()
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        stream.launch(kernel, out, x, host)
    change(host)
    graph.replay()
    assert out.data == ([30, 10] if kind != "tuple of lists" else [30, 30]), f"a {kind} argument changed after capture"


def test_host_values_are_copied_at_launch_not_at_the_end_of_capture():
    x, out = Buffer([10, 20, 30, 40]), Buffer([0, 0])
    index = [3, 0]
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        stream.launch(gather, out, x, index)
        index[0] = 1                       # still inside the with block, after the launch
    graph.replay()
    assert out.data == [40, 10]


def test_graphs_captured_one_after_another_on_one_stream_keep_their_own_launches():
    x, a, b = Buffer([1]), Buffer([0]), Buffer([0])
    stream, g1, g2 = Stream(), Graph(), Graph()
    with g1.capture(stream):
        stream.launch(scale, a, x, 2)
    with g2.capture(stream):
        stream.launch(scale, b, x, 3)
    assert (g1.num_nodes, g2.num_nodes) == (1, 1)
    g2.replay()
    assert (a.data, b.data) == ([0], [3])  # g2 replays its own launch only
    g1.replay()
    assert (a.data, b.data) == ([2], [3])


def test_errors():
    stream = Stream()
    with pytest.raises(RuntimeError):
        Graph().replay()
    graph = Graph()
    with graph.capture(stream):
        pass
    with pytest.raises(RuntimeError):
        with graph.capture(stream):
            pass
    outer, inner = Graph(), Graph()
    with outer.capture(stream):
        with pytest.raises(RuntimeError):
            with inner.capture(stream):
                pass


def test_two_streams_capture_independently():
    x, a, b = Buffer([1]), Buffer([0]), Buffer([0])
    s1, s2, g1, g2 = Stream(), Stream(), Graph(), Graph()
    with g1.capture(s1):
        s1.launch(scale, a, x, 2)
        s2.launch(scale, b, x, 3)          # the other stream runs eagerly
    assert (a.data, b.data, g1.num_nodes) == ([0], [3], 1)
    with g2.capture(s2):
        s2.launch(scale, b, x, 4)
    g1.replay(), g2.replay()
    assert (a.data, b.data) == ([2], [4])


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_replay_like_eager_with_frozen_scalars(seed):
    rng = random.Random(seed)
    n = 5
    bufs = [Buffer([rng.randint(-9, 9) for _ in range(n)]) for _ in range(4)]
    program = []
    for _ in range(12):
        if rng.random() < 0.5:
            program.append((scale, rng.randrange(4), rng.randrange(4), rng.randint(-3, 3)))
        else:
            program.append((add, rng.randrange(4), rng.randrange(4), rng.randrange(4)))
    stream, graph = Stream(), Graph()
    with graph.capture(stream):
        for kernel, o, a, c in program:
            stream.launch(kernel, bufs[o], bufs[a], c if kernel is scale else bufs[c])
    for replay in range(2):
        start = [list(b.data) for b in bufs]
        mirror = [Buffer(list(v)) for v in start]
        for kernel, o, a, c in program:
            kernel(mirror[o], mirror[a], c if kernel is scale else mirror[c])
        graph.replay()
        assert [b.data for b in bufs] == [m.data for m in mirror], \
            f"seed={seed}, replay {replay + 1}, program (kernel, out, a, b or k)={[(k.__name__, o, a, c) for k, o, a, c in program]}"
