"""Graph capture for decode steps: capture sizes, persistent buffers, the CPU graph, the emulated ACL graph.

Graph mode is checked against eager mode token for token (eager itself is checked against Hugging Face
transformers in test_engine.py). The npu backend runs against the emulation of torch_npu semantics,
not Ascend hardware. The real CUDA graph path is in test_cuda.py (needs an NVIDIA GPU).
"""
from __future__ import annotations

import random

import pytest
import torch

from mini_platform import LLM, SamplingParams, envs
from mini_platform.ascend import acl_graph
from mini_platform.ascend.acl_graph import ACLGraphWrapper
from mini_platform.compilation.buffers import InputBuffers
from mini_platform.compilation.capture_sizes import decode_capture_sizes, dispatch_graph
from mini_platform.compilation.cpu_graph import CPUGraphWrapper
from mini_platform.model import make_tiny_checkpoint
from mini_platform.ops import graph as cpu_graph
from mini_platform.ops.cpu import attention as cpu_attention
from mini_platform.ops.graph import GraphCaptureError

GREEDY = SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("graph_ckpt")
    return {arch: make_tiny_checkpoint(root / arch, arch, seed=seed, max_position_embeddings=128)
            for seed, arch in enumerate(("llama", "qwen2"))}


def prompts(seed: int, n: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(3, 257) for _ in range(rng.randint(2, 24))] for _ in range(n)]


def tokens(outputs) -> list[list[int]]:
    return [o.token_ids for o in outputs]


# -- capture sizes ----------------------------------------------------------------------------------------

def test_default_capture_sizes_follow_vllm_up_to_max_num_seqs():
    # vLLM v0.11.0's schedule [1, 2, 4] + 8, 16, ... up to min(2 * max_num_seqs, 512); a full decode graph
    # holds at most max_num_seqs requests, so only those sizes stay (vllm-ascend v0.11.0's _capture_model).
    assert decode_capture_sizes(1, 2048) == [1]
    assert decode_capture_sizes(8, 2048) == [1, 2, 4, 8]
    assert decode_capture_sizes(20, 2048) == [1, 2, 4, 8, 16]
    assert decode_capture_sizes(3, 2048) == [1, 2]
    big = decode_capture_sizes(1000, 100_000)
    assert big[:4] == [1, 2, 4, 8] and big[-1] == 512 and len(big) == 3 + 64
    assert decode_capture_sizes(64, max_num_batched_tokens=20) == [1, 2, 4, 8, 16]


def test_user_capture_sizes_are_sorted_deduplicated_and_kept_up_to_max_num_seqs():
    assert decode_capture_sizes(8, 2048, [8, 1, 8, 4]) == [1, 4, 8]
    assert decode_capture_sizes(6, 2048, [16, 2, 4, 8]) == [2, 4]
    with pytest.raises(ValueError, match="max_num_seqs=2"):
        decode_capture_sizes(2, 2048, [4, 8])


@pytest.mark.parametrize("bad", [[], [0, 2], [2, True], "1,2", [1.0]])
def test_bad_capture_sizes_are_rejected(bad):
    with pytest.raises(ValueError, match="cudagraph_capture_sizes"):
        decode_capture_sizes(8, 2048, bad)


def test_only_uniform_decode_steps_replay_in_the_next_capture_size():
    sizes = [1, 2, 4, 8, 16]
    assert [dispatch_graph([1] * n, sizes) for n in range(1, 18)] == \
        [1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 16, None]
    assert dispatch_graph([1, 3, 1], sizes) is None and dispatch_graph([2], sizes) is None
    assert dispatch_graph([1], []) is None
    with pytest.raises(ValueError):
        dispatch_graph([], sizes)


def test_pad_decode_step_adds_requests_of_one_harmless_token():
    from mini_platform.model_runner import StepInput, pad_decode_step

    step = StepInput([5, 6], [9, 3], [17, 40], [[1, 2, 0], [5, 6, 7]], [10, 4], [1, 1], [0, 1], 1)
    padded = pad_decode_step(step, 4)
    assert padded.input_ids == [5, 6, 0, 0] and padded.positions == [9, 3, 0, 0]
    assert padded.slot_mapping == [17, 40, -1, -1] and padded.seq_lens == [10, 4, 0, 0]
    assert padded.query_lens == [1, 1, 1, 1] and padded.sample_rows == [0, 1] and padded.max_query_len == 1
    assert padded.block_tables == [[1, 2, 0], [5, 6, 7], [0, 0, 0], [0, 0, 0]]
    assert step.input_ids == [5, 6] and len(step.block_tables) == 2            # the step is not modified
    with pytest.raises(ValueError, match="decode"):
        pad_decode_step(StepInput([5, 6], [0, 1], [0, 1], [[0]], [2], [2], [1], 2), 4)
    with pytest.raises(ValueError, match="size 1"):
        pad_decode_step(step, 1)


# -- the CPU graph ----------------------------------------------------------------------------------------

def test_replay_reruns_the_recorded_ops_on_the_captured_tensors():
    torch.manual_seed(0)
    w, x = torch.randn(4, 4), torch.randn(3, 4)
    g = cpu_graph.Graph()
    with cpu_graph.graph(g):
        y = torch.relu(x @ w)
        view = y[1:]
        z = y.clone()
        z.mul_(2)
    before = z.clone()
    x.copy_(torch.randn(3, 4))          # new input copied into the captured tensor
    assert torch.equal(z, before)       # nothing runs until replay
    g.replay()
    assert torch.allclose(z, torch.relu(x @ w) * 2) and torch.equal(view, y[1:])
    x = torch.zeros(3, 4)               # a new tensor is not an input: the graph still reads the old one
    g.replay()
    assert not torch.equal(z, torch.zeros(3, 4))


def test_host_values_are_frozen_at_capture():
    x = torch.arange(6.0)
    n, scale = 2, 10.0
    g = cpu_graph.Graph()
    with cpu_graph.graph(g):
        head = x[:n] * scale              # the slice length and the Python float are recorded as values
    n, scale = 5, 1.0
    x.copy_(torch.arange(6.0) + 1)
    g.replay()
    assert head.tolist() == [10.0, 20.0]  # x's new values, the capture's length and scale


@pytest.mark.parametrize("op, fn", [
    (r"aten\.(item|_local_scalar_dense)", lambda x: x.sum().item()),
    (r"aten\.(is_nonzero|_local_scalar_dense)", lambda x: bool(x[0] > 0)),
    ("Tensor.tolist", lambda x: x.tolist()),
    ("aten.nonzero", lambda x: x.nonzero()),
    ("boolean mask", lambda x: x[x > 0]),
    ("aten.repeat_interleave.Tensor", lambda x: torch.repeat_interleave(torch.tensor([1, 2]))),
])
def test_capture_refuses_host_syncs_and_data_dependent_shapes(op, fn):
    x = torch.tensor([1.0, -2.0, 3.0])
    with pytest.raises(GraphCaptureError, match=op):
        with cpu_graph.graph(cpu_graph.Graph()):
            fn(x)
    assert x.tolist() == [1.0, -2.0, 3.0] and not cpu_graph.is_capturing()  # everything restored


def test_capture_records_functional_collectives_and_refuses_torch_distributed_calls():
    """While capturing, the communicator's all-reduce is a functional collective plus its wait: both are nodes,
    re-issued at replay (a tensor-parallel decode graph holds its all-reduces, as a CUDA graph holds NCCL's). A
    plain torch.distributed call returns a Work handle nobody would wait on at replay: refused. One gloo rank."""
    import torch.distributed as dist
    from mini_platform.distributed.communicator import CpuCommunicator
    from mini_platform.executor.multiproc import free_port
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        comm, x = CpuCommunicator(dist.group.WORLD, torch.device("cpu")), torch.zeros(3)
        g = cpu_graph.Graph()
        with torch.inference_mode(), cpu_graph.graph(g):
            y = comm.all_reduce(x * 2) + 1
        assert [str(n.func) for n in g.nodes] == ["aten.mul.Tensor", "_c10d_functional.all_reduce_.default",
                                                  "_c10d_functional.wait_tensor.default", "aten.add.Tensor"]
        x.copy_(torch.tensor([1.0, 2.0, 3.0]))
        g.replay()
        assert y.tolist() == [3.0, 5.0, 7.0]
        gathered = cpu_graph.Graph()  # a collective into new memory: replay waits on it before copying it out
        with torch.inference_mode(), cpu_graph.graph(gathered):
            out = torch.ops._c10d_functional.all_gather_into_tensor(x, 1, dist.group.WORLD.group_name)
            out = torch.ops._c10d_functional.wait_tensor(out) * 10
        x.copy_(torch.tensor([4.0, 5.0, 6.0]))
        gathered.replay()
        assert out.tolist() == [40.0, 50.0, 60.0]
        with pytest.raises(GraphCaptureError, match=r"c10d\.allreduce_.*functional collective"):
            with torch.inference_mode(), cpu_graph.graph(cpu_graph.Graph()):
                dist.all_reduce(x * 2)
    finally:
        dist.destroy_process_group()


def test_static_decode_kernels_match_the_reference():
    gen = torch.Generator().manual_seed(3)
    nb, bs, nkv, nh, hd = 12, 4, 2, 4, 8
    for trial in range(4):
        kc, vc = torch.randn(nb, bs, nkv, hd, generator=gen), torch.randn(nb, bs, nkv, hd, generator=gen)
        batch = 5
        tables = torch.stack([torch.randperm(nb, generator=gen)[:3] for _ in range(batch)]).int()
        lens = torch.randint(1, 3 * bs + 1, (batch,), generator=gen).int()
        q = torch.randn(batch, nh, hd, generator=gen)
        want = cpu_attention.paged_decode_attention(q, kc, vc, tables, lens, 0.3)
        got = cpu_attention.static_paged_decode_attention(q, kc, vc, tables, lens, 0.3)
        torch.testing.assert_close(got, want)
        padded = cpu_attention.static_paged_decode_attention(
            torch.cat([q, q[:2]]), kc, vc, torch.cat([tables, tables[:2] * 0]), torch.cat([lens, lens[:2] * 0]), 0.3)
        torch.testing.assert_close(padded[:batch], want)
        assert torch.equal(padded[batch:], torch.zeros(2, nh, hd))
        # The cache starts uninitialised: NaN in slots no length covers must not reach the output.
        written = torch.arange(nb * bs).view(nb, bs)
        covered = torch.zeros(nb, bs, dtype=torch.bool)
        for row, n in zip(tables.long(), lens.tolist()):
            covered.view(-1)[written[row].flatten()[:n]] = True
        nan_k, nan_v = kc.masked_fill(~covered[..., None, None], float("nan")), vc.masked_fill(~covered[..., None, None], float("nan"))
        torch.testing.assert_close(cpu_attention.static_paged_decode_attention(q, nan_k, nan_v, tables, lens, 0.3), want)
        # KV writes: real rows first, then padding (slot -1); padding must leave the cache as the reference does.
        k, v = torch.randn(6, nkv, hd, generator=gen), torch.randn(6, nkv, hd, generator=gen)
        slots = torch.randperm(nb * bs, generator=gen)[:6].int()
        slots[4 - trial % 2:] = -1
        want_k, want_v, got_k, got_v = kc.clone(), vc.clone(), kc.clone(), vc.clone()
        cpu_attention.reshape_and_cache(k, v, want_k, want_v, slots)
        cpu_attention.static_reshape_and_cache(k, v, got_k, got_v, slots)
        assert torch.equal(got_k, want_k) and torch.equal(got_v, want_v)
    all_padding = torch.full((3,), -1, dtype=torch.int32)
    got_k, got_v = kc.clone(), vc.clone()
    cpu_attention.static_reshape_and_cache(k[:3], v[:3], got_k, got_v, all_padding)
    assert torch.equal(got_k, kc) and torch.equal(got_v, vc)


def test_compiled_kernels_are_graph_nodes_that_check_their_indices_at_replay(monkeypatch):
    """While a CPU graph captures, a compiled kernel runs and becomes one node (the kernel and the views of the
    captured tensors, as a CUDA graph records a launch): a replay reads the captured tensors' new values, and an index
    the kernel finds out of range at replay is an IndexError naming the kernel and the row, not a wild read."""
    from mini_platform.ops.cpu import compiled
    gen = torch.Generator().manual_seed(5)
    nb, bs, nkv, nh, hd = 12, 4, 2, 4, 8
    kc, vc = torch.randn(nb, bs, nkv, hd, generator=gen), torch.randn(nb, bs, nkv, hd, generator=gen)
    tables = torch.stack([torch.randperm(nb, generator=gen)[:3] for _ in range(3)]).int()
    lens, q = torch.tensor([5, 12, 0], dtype=torch.int32), torch.randn(3, nh, hd, generator=gen)   # row 2: padding
    g = cpu_graph.Graph()
    with cpu_graph.graph(g):
        out = cpu_attention.paged_decode_attention(q, kc, vc, tables, lens, 0.3)
    assert [repr(n) for n in g.nodes] == ["KernelNode(decode)"] and not out[2].any()
    q.copy_(torch.randn(3, nh, hd, generator=gen))
    lens.copy_(torch.tensor([7, 1, 3]))
    g.replay()
    torch.testing.assert_close(out, cpu_attention.static_paged_decode_attention(q, kc, vc, tables, lens, 0.3))
    lens[1] = 3 * bs + 1   # past the 3 blocks of its table row
    with pytest.raises(IndexError, match="compiled decode kernel found an index out of range at row 1"):
        g.replay()
    # Guard: without its own node the numba call is not in the graph at all (the aten recorder cannot see it), and a
    # replay leaves the capture's numbers in its output.
    stale, add_node = cpu_graph.Graph(), cpu_graph.Graph.add_node
    monkeypatch.setattr(cpu_graph.Graph, "add_node",
                        lambda self, node: None if isinstance(node, compiled.KernelNode) else add_node(self, node))
    lens = torch.tensor([7, 1, 3], dtype=torch.int32)
    with cpu_graph.graph(stale):
        frozen = cpu_attention.paged_decode_attention(q, kc, vc, tables, lens, 0.3)
    before = frozen.clone()
    q.mul_(2)
    stale.replay()
    assert stale.nodes == [] and torch.equal(frozen, before)
    monkeypatch.undo()
    monkeypatch.setenv(envs.CPU_COMPILED, "0")   # the torch kernels: the fixed-shape form, aten calls only
    g2 = cpu_graph.Graph()
    with cpu_graph.graph(g2):
        cpu_attention.paged_decode_attention(q, kc, vc, tables, lens, 0.3)
    assert g2.nodes and not any(isinstance(n, compiled.KernelNode) for n in g2.nodes)


# -- persistent buffers -----------------------------------------------------------------------------------

def test_buffers_are_filled_in_place_and_sliced():
    buf = InputBuffers(max_num_tokens=8, max_num_seqs=4, max_blocks_per_seq=3)
    assert buf.slot_mapping.tolist() == [-1] * 8          # no row writes KV until it is filled
    pointers = [getattr(buf, name).data_ptr() for name in InputBuffers.FIELDS]
    buf.fill([5, 6, 0, 0], [9, 3, 0, 0], [17, 40, -1, -1], [[1, 2], [5, 6, 7], [], []], seq_lens=[10, 4, 0, 0],
             query_lens=[1, 1, 1, 1])
    md = buf.metadata(4, 4, max_query_len=1)
    assert buf.input_ids[:4].tolist() == [5, 6, 0, 0] and buf.positions[:4].tolist() == [9, 3, 0, 0]
    assert md.slot_mapping.tolist() == [17, 40, -1, -1]
    assert md.seq_lens.tolist() == [10, 4, 0, 0] and md.query_start_loc.tolist() == [0, 1, 2, 3, 4]
    assert md.block_tables[:2].tolist() == [[1, 2, 0], [5, 6, 7]]
    assert md.slot_mapping.data_ptr() == buf.slot_mapping.data_ptr()  # views, not copies
    assert [getattr(buf, name).data_ptr() for name in InputBuffers.FIELDS] == pointers
    with pytest.raises(ValueError, match="does not fit"):
        buf.fill([1] * 9, [0] * 9, [0] * 9, [[1]], [9], [9])
    with pytest.raises(ValueError, match="max_blocks_per_seq=3"):
        buf.fill([1], [0], [0], [[1, 2, 3, 4]], [1], [1])


# -- the engine -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch, kernels", [("llama", "compiled"), ("qwen2", "compiled"), ("llama", "torch")])
def test_cpu_graph_mode_equals_eager_token_for_token(checkpoints, arch, kernels, monkeypatch):
    """Each decode graph holds the compiled kernels as nodes (the torch kernels' fixed-shape forms without numba)."""
    from mini_platform.ops.cpu import compiled
    if kernels == "torch":
        monkeypatch.setenv(envs.CPU_COMPILED, "0")
    batch = prompts(1, 6)
    eager = LLM(checkpoints[arch], max_num_seqs=8)
    assert eager.engine.stats()["cudagraph_capture_sizes"] == []       # the CPU platform is eager by default
    graphed = LLM(checkpoints[arch], max_num_seqs=8, enforce_eager=False)
    assert type(graphed.engine.runner.graphs) is CPUGraphWrapper
    assert tokens(graphed.generate(batch, GREEDY)) == tokens(eager.generate(batch, GREEDY))
    nodes = {n.name for g, _ in graphed.engine.runner.graphs.entries.values() for n in g.nodes
             if isinstance(n, compiled.KernelNode)}
    assert nodes == (set() if kernels == "torch" else {"rms_norm", "rotary", "reshape_and_cache", "decode",
                                                        "silu_and_mul"})
    stats = graphed.engine.stats()
    assert stats["cudagraph_capture_sizes"] == [1, 2, 4, 8] and stats["graph_capture_seconds"] > 0
    assert stats["num_graph_steps"] == GREEDY.max_tokens - 1 and stats["num_eager_steps"] == 1


def test_bf16_decode_at_batch_1_replays_the_compiled_gemv(checkpoints):
    """One bf16 token per step: every matmul of the size-1 graph is the compiled GEMV's node, and the graph gives the
    eager engine's tokens (the same kernels, replayed)."""
    from mini_platform.ops.cpu import compiled
    options = dict(dtype="bfloat16", max_num_seqs=1)
    prompt, params = prompts(3, 1), SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    graphed = LLM(checkpoints["qwen2"], enforce_eager=False, **options)
    eager = LLM(checkpoints["qwen2"], **options)
    assert tokens(graphed.generate(prompt, params)) == tokens(eager.generate(prompt, params))
    (graph, _), = graphed.engine.runner.graphs.entries.values()
    layers = graphed.engine.model_config.num_hidden_layers
    gemvs = [n for n in graph.nodes if isinstance(n, compiled.KernelNode) and n.name == "gemv_bf16"]
    assert len(gemvs) == 4 * layers and graphed.engine.stats()["num_graph_steps"] == params.max_tokens - 1


def test_decode_steps_pad_up_to_a_capture_size_and_larger_ones_run_eagerly(checkpoints):
    llm = LLM(checkpoints["llama"], max_num_seqs=8, enforce_eager=False, cudagraph_capture_sizes=[4, 2])
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (2, 3, 4, 5, 6)]
    out = llm.generate(prompts(2, 5), params)
    reference = LLM(checkpoints["llama"], max_num_seqs=8).generate(prompts(2, 5), params)
    assert tokens(out) == tokens(reference)
    # Decode batches 5, 4, 3, 2, 1: 5 runs eagerly (with the prefill); 3 pads to 4 and 1 pads to 2.
    stats = llm.engine.stats()
    assert (stats["num_graph_steps"], stats["num_padded_tokens"], stats["num_eager_steps"]) == (4, 2, 2)


def test_graph_options_are_checked(checkpoints):
    with pytest.raises(ValueError, match="enforce_eager"):
        LLM(checkpoints["llama"], enforce_eager="no")
    with pytest.raises(ValueError, match="cudagraph_capture_sizes"):
        LLM(checkpoints["llama"], enforce_eager=False, cudagraph_capture_sizes=[0])
    with pytest.raises(ValueError, match="NVIDIA GPU"):   # the Triton interpreter cannot be captured
        LLM(checkpoints["llama"], backend="triton", enforce_eager=False)


@pytest.mark.parametrize("flag", [0, 1, "no"])
def test_enforce_eager_must_be_a_bool(checkpoints, flag):
    # 0 == False in Python, but `enforce_eager is not False` would run it eagerly: refuse non-bools.
    with pytest.raises(ValueError, match="enforce_eager"):
        LLM(checkpoints["llama"], enforce_eager=flag)


def test_capture_sizes_above_the_token_budget_are_refused(checkpoints):
    # A graph of size S holds S tokens; a step never has more than max_num_batched_tokens, so such a graph
    # could never replay, and its persistent buffers would be sized by it (a huge size ran out of memory).
    with pytest.raises(ValueError, match=r"cudagraph_capture_sizes.*max_num_batched_tokens=64"):
        LLM(checkpoints["llama"], enforce_eager=False, max_num_batched_tokens=64, cudagraph_capture_sizes=[8, 65])
    with pytest.raises(ValueError, match="cudagraph_capture_sizes"):
        LLM(checkpoints["llama"], enforce_eager=False, cudagraph_capture_sizes=[10**12])


def test_uncapturable_kernels_fall_back_to_eager_with_a_warning(checkpoints, monkeypatch):
    from mini_platform.ops.cpu import activation

    real = activation.silu_and_mul

    def host_syncing(x):  # what a MoE kernel looping over experts does: read counts on the host
        int(x.shape[0] + (x[..., 0] > 1e9).sum())
        return real(x)

    monkeypatch.setattr(activation, "silu_and_mul", host_syncing)
    refusal = r"cannot be captured in a graph on the 'cpu' backend.*aten\.(item|_local_scalar_dense)"
    with pytest.warns(RuntimeWarning, match=refusal):
        llm = LLM(checkpoints["llama"], max_num_seqs=4, enforce_eager=False)
    assert llm.engine.runner.graphs is None
    want = tokens(LLM(checkpoints["llama"]).generate(prompts(3, 2), GREEDY))
    assert tokens(llm.generate(prompts(3, 2), GREEDY)) == want


def test_platforms_name_their_graph_wrappers():
    from mini_platform.ascend.platform import NPUPlatform
    from mini_platform.platforms.cpu import CpuPlatform
    from mini_platform.platforms.cuda import CudaPlatform
    from mini_platform.platforms.interface import UnspecifiedPlatform
    from mini_platform.utils import resolve_obj_by_qualname

    assert resolve_obj_by_qualname(NPUPlatform.get_static_graph_wrapper_cls()) is ACLGraphWrapper
    assert resolve_obj_by_qualname(CpuPlatform.get_static_graph_wrapper_cls()) is CPUGraphWrapper
    assert resolve_obj_by_qualname(CudaPlatform.get_static_graph_wrapper_cls()).__name__ == "CUDAGraphWrapper"
    assert UnspecifiedPlatform.get_static_graph_wrapper_cls() is None

    class Config:
        block_size, enforce_eager = 16, None
    for platform, eager in ((CpuPlatform, True), (NPUPlatform, False), (UnspecifiedPlatform, True)):
        config = Config()
        platform.check_and_update_config(config)
        assert config.enforce_eager is eager


# -- the ACL graph on the emulated NPU --------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_acl_graph_equals_eager_with_per_replay_attention_updates(checkpoints, arch, emulated_npu, monkeypatch):
    batch = prompts(4, 5)
    eager = LLM(checkpoints[arch], max_num_seqs=8, backend="npu").generate(batch, GREEDY)
    updates = []
    real_update = acl_graph.update_attn_params

    def spy(stream, params, size, seq_lens):
        updates.append((size, seq_lens.tolist()))
        real_update(stream, params, size, seq_lens)

    monkeypatch.setattr(acl_graph, "update_attn_params", spy)
    llm = LLM(checkpoints[arch], max_num_seqs=8, backend="npu", enforce_eager=False)
    wrapper = llm.engine.runner.graphs
    assert type(wrapper) is ACLGraphWrapper
    layers = llm.engine.model_config.num_hidden_layers
    for size in wrapper.entries:   # each layer's attention is a task group with its event
        assert len(wrapper.params.handles[size]) == len(wrapper.params.events[size]) == layers
        assert type(wrapper.entries[size][0]).__name__ == "NPUGraph"
    assert tokens(llm.generate(batch, GREEDY)) == tokens(eager)
    assert len(updates) == llm.engine.stats()["num_graph_steps"] == GREEDY.max_tokens - 1
    first_size, first_lens = updates[0]
    assert first_size == 8 and first_lens[5:] == [0, 0, 0] and min(first_lens[:5]) >= 3  # 5 padded to 8


def test_acl_graph_without_the_attention_update_gives_wrong_tokens(checkpoints, emulated_npu, monkeypatch):
    batch = prompts(5, 3)
    eager = LLM(checkpoints["qwen2"], max_num_seqs=4, backend="npu").generate(batch, GREEDY)

    def release_only(stream, params, size, seq_lens):  # lets the graph run, but with the capture's lengths
        for event in params.events[size]:
            event.record(stream)

    monkeypatch.setattr(acl_graph, "update_attn_params", release_only)
    stale = LLM(checkpoints["qwen2"], max_num_seqs=4, backend="npu", enforce_eager=False).generate(batch, GREEDY)
    assert [t[0] for t in tokens(stale)] == [t[0] for t in tokens(eager)]   # the first token comes from prefill
    assert tokens(stale) != tokens(eager)


def test_full_decode_acl_graphs_are_not_pruned_and_replay_waits_for_its_events(checkpoints, emulated_npu,
                                                                               monkeypatch):
    # vllm-ascend v0.11.0 prunes by the stream budget in PIECEWISE mode only; its FULL_DECODE_ONLY graphs
    # are the sizes up to max_num_seqs: [1, 2] of the default [1, 2, 4] here, and a graph for each.
    monkeypatch.setattr(acl_graph, "update_attn_params", lambda *args: None)  # events never recorded
    llm = LLM(checkpoints["llama"], max_num_seqs=2, backend="npu", enforce_eager=False)
    assert llm.engine.stats()["cudagraph_capture_sizes"] == [1, 2]
    assert sorted(llm.engine.runner.graphs.entries) == [1, 2]
    with pytest.raises(RuntimeError, match="never recorded"):
        llm.generate(prompts(6, 1), GREEDY)


def test_emulated_task_group_keeps_capture_lengths_until_updated(emulated_npu):
    npu = emulated_npu.npu
    gen = torch.Generator().manual_seed(7)
    kc, vc = torch.randn(4, 16, 1, 8, generator=gen), torch.randn(4, 16, 1, 8, generator=gen)
    q, out = torch.randn(1, 2, 8, generator=gen), torch.zeros(1, 2, 8)
    table = torch.tensor([[2, 0]], dtype=torch.int32)

    def attend(lens: torch.Tensor, into: torch.Tensor) -> None:
        emulated_npu._npu_paged_attention(query=q, key_cache=kc, value_cache=vc, num_kv_heads=1, num_heads=2,
                                          scale_value=0.5, block_table=table, context_lens=lens, out=into)

    want = {n: torch.zeros(1, 2, 8) for n in (5, 20)}
    for n, w in want.items():
        attend(torch.tensor([n], dtype=torch.int32), w)
    lens = torch.tensor([5], dtype=torch.int32)
    g, event, stream = npu.NPUGraph(), npu.ExternalEvent(), npu.current_stream()
    with npu.graph(g):
        event.wait(stream)
        event.reset(stream)
        npu.graph_task_group_begin(stream)
        attend(lens, out)
        handle = npu.graph_task_group_end(stream)
    out.zero_()
    lens.fill_(20)                      # a host-side input: the captured task keeps the 5 it saw
    g.replay()                          # launched; waits on the event
    with pytest.raises(RuntimeError, match="never recorded"):
        npu.synchronize()
    assert torch.equal(out, torch.zeros(1, 2, 8))
    update = npu.Stream()               # the host releases and updates from another stream than the replay's
    event.record(update)                # released without an update: capture-time length
    torch.testing.assert_close(out, want[5])
    g.replay()
    with npu.stream(update):
        npu.graph_task_update_begin(update, handle)
        attend(lens, out)               # not run now: replaces the task, with the new length
        npu.graph_task_update_end(update)
        torch.testing.assert_close(out, want[5])
        event.record(update)
    npu.synchronize()
    torch.testing.assert_close(out, want[20])


def test_emulated_streams_refuse_what_would_hang_on_the_device(emulated_npu):
    npu = emulated_npu.npu
    gen = torch.Generator().manual_seed(3)
    kc, vc = torch.randn(2, 16, 1, 8, generator=gen), torch.randn(2, 16, 1, 8, generator=gen)
    q, out, table = torch.randn(1, 2, 8, generator=gen), torch.zeros(1, 2, 8), torch.tensor([[1]], dtype=torch.int32)

    def attend(n: int) -> None:
        emulated_npu._npu_paged_attention(query=q, key_cache=kc, value_cache=vc, num_kv_heads=1, num_heads=2,
                                          scale_value=0.5, block_table=table,
                                          context_lens=torch.tensor([n], dtype=torch.int32), out=out)

    g, event, update = npu.NPUGraph(), npu.ExternalEvent(), npu.Stream()
    with npu.graph(g):
        event.wait(npu.current_stream())
        event.reset(npu.current_stream())
        npu.graph_task_group_begin(npu.current_stream())
        attend(4)
        handle = npu.graph_task_group_end(npu.current_stream())
    g.replay()
    with pytest.raises(RuntimeError, match="stream that launched"):
        event.record()                  # the default stream: behind the replay that waits for it
    npu.graph_task_update_begin(update, handle)
    with pytest.raises(RuntimeError, match="another stream"):
        attend(9)                       # issued on the default stream, not the update stream
    with npu.stream(update):
        attend(9)
        with pytest.raises(RuntimeError, match="graph_task_update_end first"):
            event.record(update)        # inside the update: it would never run
        npu.graph_task_update_end(update)
        event.record()                  # the current stream is the update stream
    npu.synchronize()


# -- MoE models -------------------------------------------------------------------------------------------

def test_moe_model_on_the_cpu_graph_warns_and_runs_eagerly(tmp_path):
    # The cpu MoE kernel loops over experts and reads their token counts on the host: not capturable.
    model = make_tiny_checkpoint(tmp_path / "mixtral", "mixtral", max_position_embeddings=128)
    with pytest.warns(RuntimeWarning, match="cannot be captured in a graph on the 'cpu' backend"):
        llm = LLM(model, max_num_seqs=4, enforce_eager=False)
    assert llm.engine.runner.graphs is None and llm.engine.stats()["num_graph_steps"] == 0
    batch = prompts(8, 3)
    assert tokens(llm.generate(batch, GREEDY)) == tokens(LLM(model, max_num_seqs=4).generate(batch, GREEDY))


@pytest.mark.parametrize("arch", ["mixtral", "qwen2_moe"])
def test_moe_model_in_acl_graphs_equals_eager(tmp_path, arch, emulated_npu):
    # The torch_npu MoE routing ops are device kernels: an ACL graph holds them (vllm-ascend captures MoE too).
    model = make_tiny_checkpoint(tmp_path / arch, arch, max_position_embeddings=128)
    batch = prompts(9, 3)
    eager = LLM(model, max_num_seqs=4, backend="npu").generate(batch, GREEDY)
    llm = LLM(model, max_num_seqs=4, backend="npu", enforce_eager=False)
    assert tokens(llm.generate(batch, GREEDY)) == tokens(eager)
    assert llm.engine.stats()["num_graph_steps"] == GREEDY.max_tokens - 1
