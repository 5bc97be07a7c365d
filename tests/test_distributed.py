"""More than one process: communicators over gloo, tensor parallelism equal to one process, failures.

Multi-process tests are few and each starts its workers once (spawn is the slow part). Every test that
starts processes stops them in a ``finally`` / fixture, and the last check of the module asserts that
no child process is left. The CUDA (NCCL) and Ascend (HCCL) tests run only on such machines.
"""
from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import pickle
import signal
import warnings

import pytest
import torch
from safetensors.torch import load_file, save_file

from mini_platform import LLM, LLMEngine, SamplingParams
from mini_platform.distributed import parallel_state
from mini_platform.distributed.shm_allreduce import leaked_segments
from mini_platform.executor.multiproc import MultiprocExecutor, WorkerError, free_port
from mini_platform.model import load_model, make_tiny_checkpoint
from mini_platform.model.sharding import HeadShard, check_tensor_parallel, head_shard, kv_split, vocab_range
from mini_platform.model.config import ModelConfig
from mini_platform.model_runner import GraphStats

GREEDY = SamplingParams(temperature=0, max_tokens=10, ignore_eos=True)
# Small blocks, a small cache and a small token budget: preemption and chunked prefill both happen.
STRESS = dict(block_size=4, num_kv_blocks=14, max_num_batched_tokens=16, max_num_seqs=4)


def prompts(seed: int, lengths: list[int], vocab: int = 257) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (n,), generator=g).tolist() for n in lengths]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("dist")
    # biases on Q/K/V, O and the MLP: the row-parallel bias is added once, the column-parallel one is split
    return {"llama": make_tiny_checkpoint(root / "llama", "llama", seed=3, attention_bias=True, mlp_bias=True),
            # tied embeddings: the vocabulary-parallel embedding is the LM head too
            "qwen2": make_tiny_checkpoint(root / "qwen2", "qwen2", seed=4, tie_word_embeddings=True),
            "mixtral": make_tiny_checkpoint(root / "mixtral", "mixtral", seed=5),
            "qwen2_moe": make_tiny_checkpoint(root / "qwen2_moe", "qwen2_moe", seed=6)}


# -- the shard arithmetic, in one process -------------------------------------------------------------
def test_head_shards_split_or_replicate_kv_heads():
    assert head_shard(8, 4, 2, 1) == HeadShard(4, 2, 4, 2, 1)   # 2 of the 4 KV heads, no replication
    assert head_shard(8, 2, 4, 3) == HeadShard(2, 1, 6, 1, 2)   # TP > KV heads: ranks 2 and 3 share KV head 1
    assert head_shard(8, 2, 8, 5) == HeadShard(1, 1, 5, 1, 4)
    with pytest.raises(ValueError, match="num_attention_heads=6"):
        head_shard(6, 2, 4, 0)
    with pytest.raises(ValueError, match="num_key_value_heads=4"):
        head_shard(12, 4, 6, 0)


def test_vocab_is_padded_to_64_and_split():
    assert vocab_range(257, 1, 0) == (0, 257, 257)
    assert [vocab_range(257, 2, r) for r in range(2)] == [(0, 160, 160), (160, 160, 97)]
    assert vocab_range(257, 4, 3) == (240, 80, 17)
    assert vocab_range(100, 4, 3) == (96, 32, 4)


def test_impossible_splits_are_rejected_before_any_process_starts(checkpoints):
    config = ModelConfig.from_pretrained(checkpoints["llama"])
    with pytest.raises(ValueError, match="intermediate_size=102"):
        check_tensor_parallel(dataclasses.replace(config, intermediate_size=102), 4)
    with pytest.raises(ValueError, match="num_attention_heads=4"):
        LLM(checkpoints["llama"], tensor_parallel_size=3)
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        LLM(checkpoints["llama"], tensor_parallel_size=0)
    with pytest.raises(ValueError, match="moe_comm='all2all'"):
        LLM(checkpoints["mixtral"], tensor_parallel_size=2, enable_expert_parallel=True, moe_comm="all2all")
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("tp", [2, 4])
def test_each_rank_loads_only_its_shard(checkpoints, monkeypatch, tp):
    """Build rank r of a TP group (no collectives run while loading) and compare with the full tensors."""
    full = load_file(str(checkpoints["llama"] / "model.safetensors"))
    config = ModelConfig.from_pretrained(checkpoints["llama"])
    hd, nkv = config.head_dim, config.num_key_value_heads
    for rank in range(tp):
        monkeypatch.setattr(parallel_state, "_TP", parallel_state.GroupCoordinator("tp", tp, rank))
        model = load_model(checkpoints["llama"])
        attn, mlp = model.model.layers[1].self_attn, model.model.layers[1].mlp
        shard = head_shard(config.num_attention_heads, nkv, tp, rank)
        q, k, v = attn.qkv_proj.weight.split([shard.num_heads * hd, shard.num_kv_heads * hd,
                                              shard.num_kv_heads * hd])
        w = "model.layers.1.self_attn."
        kv_rows = slice(shard.kv_start * hd, (shard.kv_start + shard.num_kv_heads) * hd)
        assert torch.equal(q, full[w + "q_proj.weight"][rank * shard.num_heads * hd:][:shard.num_heads * hd])
        assert torch.equal(k, full[w + "k_proj.weight"][kv_rows])
        assert torch.equal(v, full[w + "v_proj.weight"][kv_rows])
        k_bias = attn.qkv_proj.bias[shard.num_heads * hd:(shard.num_heads + shard.num_kv_heads) * hd]
        assert torch.equal(k_bias, full[w + "k_proj.bias"][kv_rows])
        assert torch.equal(attn.o_proj.bias, full[w + "o_proj.bias"])  # whole on every rank, added by rank 0
        cols = config.q_size // tp
        assert torch.equal(attn.o_proj.weight, full[w + "o_proj.weight"][:, rank * cols:(rank + 1) * cols])
        inter = config.intermediate_size // tp
        gate = full["model.layers.1.mlp.gate_proj.weight"][rank * inter:(rank + 1) * inter]
        assert torch.equal(mlp.gate_up_proj.weight[:inter], gate)
        start, rows, real = vocab_range(config.vocab_size, tp, rank)
        emb = model.model.embed_tokens.weight
        assert emb.shape[0] == rows and torch.equal(emb[:real], full["model.embed_tokens.weight"][start:start + real])
        assert not emb[real:].any()  # padding rows are zeros
        assert model.num_kv_heads == shard.num_kv_heads


@pytest.mark.parametrize("expert_parallel", [False, True], ids=["tp", "ep"])
def test_moe_ranks_load_split_or_whole_experts(checkpoints, monkeypatch, expert_parallel):
    """TP splits every expert's intermediate dim; EP gives each rank whole experts (linear placement)."""
    full = load_file(str(checkpoints["mixtral"] / "model.safetensors"))
    inter = ModelConfig.from_pretrained(checkpoints["mixtral"]).moe.intermediate_size
    prefix = "model.layers.0.block_sparse_moe.experts"
    for rank in range(2):
        group = parallel_state.GroupCoordinator("tp", 2, rank)
        monkeypatch.setattr(parallel_state, "_TP", group)
        monkeypatch.setattr(parallel_state, "_EP", group if expert_parallel else None)
        block = load_model(checkpoints["mixtral"]).model.layers[0].block_sparse_moe
        if expert_parallel:   # 4 experts: rank 0 owns 0-1, rank 1 owns 2-3, whole
            assert block.local_experts == [2 * rank, 2 * rank + 1] and block.w13.shape[1] == 2 * inter
            for local, expert in enumerate(block.local_experts):
                assert torch.equal(block.w2[local], full[f"{prefix}.{expert}.w2.weight"])
        else:                 # every expert, half of its intermediate rows / columns
            half = slice(rank * inter // 2, (rank + 1) * inter // 2)
            assert block.local_experts == [0, 1, 2, 3] and block.w13.shape[1] == inter
            assert torch.equal(block.w13[3, :inter // 2], full[f"{prefix}.3.w1.weight"][half])
            assert torch.equal(block.w13[3, inter // 2:], full[f"{prefix}.3.w3.weight"][half])
            assert torch.equal(block.w2[3], full[f"{prefix}.3.w2.weight"][:, half])


# -- collectives over gloo ------------------------------------------------------------------------------
def _collectives_worker(rank: int, world: int, port: int) -> None:
    import torch.distributed as dist

    from mini_platform.distributed.communicator import CpuCommunicator
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        parallel_state.init_model_parallel(world, True, torch.device("cpu"))
        tp, ep = parallel_state.get_tp_group(), parallel_state.get_ep_group()
        assert type(tp.communicator) is CpuCommunicator and tp.rank_in_group == rank and ep.world_size == world
        assert tp.communicator.shm is not None  # small all-reduces below go through shared memory (the default)
        x = torch.arange(6.0).view(2, 3) + 10 * rank                       # rank r: [[0,1,2],[3,4,5]] + 10r
        assert torch.equal(tp.all_reduce(x.clone()), 2 * torch.arange(6.0).view(2, 3) + 10)
        assert torch.equal(tp.all_gather(x, dim=0), torch.cat([x - 10 * rank, x - 10 * rank + 10], 0))
        assert torch.equal(tp.all_gather(x, dim=-1), torch.cat([x - 10 * rank, x - 10 * rank + 10], 1))
        total = 2 * torch.arange(6.0).view(2, 3) + 10
        assert torch.equal(tp.reduce_scatter(x.clone(), dim=0), total[rank:rank + 1])
        wide = torch.arange(8.0).view(2, 4) * (rank + 1)
        assert torch.equal(tp.reduce_scatter(wide, dim=1), (3 * torch.arange(8.0).view(2, 4))[:, 2 * rank:2 * rank + 2])
        # uneven all-to-all: rank 0 sends 1 row to itself and 3 to rank 1; rank 1 sends 2 and 0
        send = {0: [1, 3], 1: [2, 0]}[rank]
        recv = {0: [1, 2], 1: [3, 0]}[rank]
        rows = torch.arange(float(sum(send))).unsqueeze(1) + 100 * rank
        got = ep.all_to_all(rows, send, recv)
        want = {0: [[0.0], [100.0], [101.0]], 1: [[1.0], [2.0], [3.0]]}[rank]
        assert torch.equal(got, torch.tensor(want)), (rank, got)
        b = torch.full((3,), float(rank + 7))
        assert torch.equal(tp.broadcast(b, src=1), torch.full((3,), 8.0))
        _check_collective_custom_ops(tp, x)
        _check_expert_parallel_exchange(ep)
    finally:
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()


def _check_collective_custom_ops(tp, x: torch.Tensor) -> None:
    """The custom ops a compiled model's pieces call, directly and inside a CPU graph: every replay sums that
    replay's values with the peer's (the op is one node that runs the communicator again), replay after replay."""
    from mini_platform.ops import graph as cpu_graph
    rank = tp.rank_in_group
    y = x.clone()
    torch.ops.mini_platform.all_reduce_(y, tp.unique_name)
    assert torch.equal(y, 2 * torch.arange(6.0).view(2, 3) + 10)
    gathered = torch.ops.mini_platform.all_gather(x, 1, tp.world_size, tp.unique_name)
    assert torch.equal(gathered, torch.cat([x - 10 * rank, x - 10 * rank + 10], 1))
    buf, piece = torch.zeros(4), cpu_graph.Graph()
    with torch.inference_mode(), cpu_graph.graph(piece):
        summed = buf * 2
        torch.ops.mini_platform.all_reduce_(summed, tp.unique_name)
        out = summed + 1
    assert [str(n.func) for n in piece.nodes] == ["aten.mul.Tensor", "mini_platform.all_reduce_.default",
                                                  "aten.add.Tensor"]
    for step in (1, 2, 3):
        buf.copy_(torch.arange(4.0) * step + rank)       # rank r: step * i + r
        piece.replay()
        assert torch.equal(out, 4 * torch.arange(4.0) * step + 3), (rank, step, out)  # 2 * (sum over ranks) + 1


def _check_expert_parallel_exchange(ep) -> None:
    """Both token exchanges, with each rank owning half of 5 experts (3 and 2), equal one process that owns all."""
    from mini_platform import ops
    from mini_platform.distributed.moe_dispatch import ExpertParallelDispatcher
    from mini_platform.model.moe import expert_map_for_rank, expert_owners
    g = torch.Generator().manual_seed(0)  # the same data on both ranks
    num_experts, hidden, inter, tokens = 5, 8, 6, 7
    w13 = torch.randn(num_experts, 2 * inter, hidden, generator=g)
    w2 = torch.randn(num_experts, hidden, inter, generator=g)
    x, router = torch.randn(tokens, hidden, generator=g), torch.randn(hidden, num_experts, generator=g)
    route = lambda h: ops.moe_topk_softmax(h @ router, 2, True)  # noqa: E731
    want = ops.fused_experts(x, w13, w2, *route(x))
    expert_map = expert_map_for_rank(num_experts, ep.world_size, ep.rank_in_group)
    owned = (expert_map >= 0).nonzero().flatten()
    for method in ("alltoall", "allgather"):
        dispatcher = ExpertParallelDispatcher(ep, expert_owners(num_experts, ep.world_size), method)
        got = dispatcher(x, route, lambda h, w, i: ops.fused_experts(h, w13[owned], w2[owned], w, i, expert_map))
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=method)


def test_collectives_over_gloo_with_uneven_all_to_all():
    torch.multiprocessing.spawn(_collectives_worker, args=(2, free_port()), nprocs=2, join=True)


def test_single_rank_groups_are_no_ops():
    group = parallel_state.get_tp_group()
    x = torch.ones(2, 3)
    assert group.world_size == 1 and parallel_state.get_ep_group() is None
    assert group.all_reduce(x) is x and group.all_gather(x) is x and group.all_to_all(x) is x


# -- tensor parallelism end to end ----------------------------------------------------------------------
@pytest.mark.parametrize("arch, tp, parallel", [
    ("llama", 2, {}),                 # the 2 KV heads split
    ("qwen2", 4, {}),                 # Q/K/V bias, tied embeddings; the 2 KV heads replicated on 4 ranks
    ("mixtral", 2, {"enable_expert_parallel": True, "moe_comm": "alltoall"}),
    ("qwen2_moe", 2, {"enable_expert_parallel": True, "moe_comm": "allgather"}),  # + a TP-split shared expert
    # no EP: every expert's intermediate dim split. Graphs asked for, but the CPU MoE kernels cannot be captured
    ("qwen2_moe", 2, {"enforce_eager": False}),
    ("llama", 2, {"enforce_eager": False}),  # decode graphs in the workers, the all-reduces inside them
], ids=["llama-tp2", "qwen2-tp4", "mixtral-ep2-alltoall", "qwen2_moe-ep2-allgather", "qwen2_moe-tp2-graphs",
        "llama-tp2-graphs"])
def test_parallel_greedy_equals_one_process(checkpoints, arch, tp, parallel):
    """Under preemption and chunked prefill, equal to one process token for token (which runs eagerly)."""
    batch = prompts(tp, [5, 23, 9, 17, 2, 30])
    one = LLM(checkpoints[arch], **STRESS)
    want = [o.token_ids for o in one.generate(batch, GREEDY)]
    assert one.engine.stats()["num_preemptions"] > 0  # the cache really was too small
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        llm = LLM(checkpoints[arch], tensor_parallel_size=tp, **parallel, **STRESS)
    pids = llm.engine.runner.pids
    try:
        got = [o.token_ids for o in llm.generate(batch, GREEDY)]
        stats = llm.engine.stats()
        assert stats["num_preemptions"] == one.engine.stats()["num_preemptions"]
        kv_heads = one.engine.model_config.num_key_value_heads   # a rank caches only its KV heads (split or one copy)
        assert stats["kv_cache_bytes_per_rank"] * kv_heads == \
            one.engine.stats()["kv_cache_bytes_per_rank"] * kv_split(kv_heads, tp)[0]
        fallback = [str(w.message) for w in caught if "cannot be captured" in str(w.message)]
        if arch == "qwen2_moe" and parallel.get("enforce_eager") is False:  # said once, not once per rank
            assert len(fallback) == 1 and fallback[0].startswith("tensor-parallel worker rank 0: ")
            assert stats["cudagraph_capture_sizes"] == [] and stats["num_graph_steps"] == 0
        elif parallel.get("enforce_eager") is False:  # vLLM's default schedule, up to STRESS's max_num_seqs
            assert not fallback
            want_sizes = [s for s in [1, 2, 4, 8] if s <= STRESS["max_num_seqs"]]
            assert stats["cudagraph_capture_sizes"] == want_sizes and stats["num_graph_steps"] > 0
    finally:
        if arch == "llama":  # dropping the last reference stops the workers as close() does
            del llm
            gc.collect()
        else:
            llm.close()
    assert got == want
    assert not multiprocessing.active_children() and not _alive(pids)
    assert not leaked_segments(pids + [os.getpid()])  # the all-reduce's and the step queue's shared memory


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    return alive


def test_killed_worker_gives_a_clear_error_and_no_leftover_process(checkpoints):
    engine = LLMEngine(checkpoints["llama"], tensor_parallel_size=2)
    pids = engine.runner.pids
    try:
        engine.add_request(prompts(0, [6])[0], GREEDY)
        assert engine.step()  # the first token came back
        os.kill(pids[1], signal.SIGKILL)
        with pytest.raises(WorkerError, match=r"worker rank 1 .*died unexpectedly with signal SIGKILL"):
            engine.step()
        with pytest.raises(WorkerError, match="earlier failure"):
            engine.step()
    finally:
        engine.close()
    assert not _alive(pids) and not multiprocessing.active_children()
    assert not leaked_segments(pids + [os.getpid()])


def test_a_failing_worker_names_its_rank(checkpoints, tmp_path):
    """A checkpoint that lacks a tensor fails in every worker while loading: the error says which rank."""
    tensors = load_file(str(checkpoints["llama"] / "model.safetensors"))
    del tensors["model.layers.1.mlp.up_proj.weight"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((checkpoints["llama"] / "config.json").read_text())
    save_file(tensors, str(bad / "model.safetensors"))
    with pytest.raises(WorkerError, match=r"(?s)worker rank \d failed: .*CheckpointError.*up_proj"):
        LLM(bad, tensor_parallel_size=2)
    assert not multiprocessing.active_children()


def test_emulated_npu_backend_runs_in_the_workers_equal_to_one_process(checkpoints, emulated_npu):
    """The driver's torch_npu emulation is carried into each worker (a spawned interpreter would not have it),
    and the emulated ACL graphs replay with the all-reduces inside them."""
    batch = prompts(7, [5, 23, 9, 2])
    options = dict(backend="npu", block_size=16, max_num_seqs=4, max_num_batched_tokens=16)
    want = [o.token_ids for o in LLM(checkpoints["llama"], **options).generate(batch, GREEDY)]
    with LLM(checkpoints["llama"], tensor_parallel_size=2, enforce_eager=False, **options) as llm:
        got = [o.token_ids for o in llm.generate(batch, GREEDY)]
        assert llm.engine.stats()["num_graph_steps"] > 0
    assert got == want
    assert not multiprocessing.active_children()


RANK_ONE_BREAKS = """
import multiprocessing


def register():
    if multiprocessing.parent_process() is None:  # the driver (the test process) keeps its runner
        return
    import torch.distributed as dist
    from mini_platform.model_runner import ModelRunner

    def execute_step(self, *args):
        if dist.get_rank() == 1:
            raise ValueError("rank one broke")
        return run(self, *args)

    run, ModelRunner.execute_step = ModelRunner.execute_step, execute_step
"""


def test_the_failing_rank_comes_before_the_peers_it_cut_off(checkpoints, tmp_path, monkeypatch):
    """Rank 1 raises in a step while rank 0 waits in an all-reduce for it, which then fails with gloo's lost
    connection: the error must begin with rank 1's own error. Rank 1's failure is a general plugin the
    spawned workers load (they inherit sys.path); the driver's test process is left alone."""
    from mini_platform import plugins
    from mini_platform.executor import multiproc
    info = tmp_path / "rank_one_breaks-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rank_one_breaks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{plugins.GENERAL_PLUGINS_GROUP}]\nbreak = rank_one_breaks:register\n")
    (tmp_path / "rank_one_breaks.py").write_text(RANK_ONE_BREAKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("MINI_PLATFORM_PLUGINS", raising=False)
    monkeypatch.setattr(multiproc, "FAILURE_GRACE_S", 60.0)  # wait for rank 0's error, however busy the machine
    engine = LLMEngine(checkpoints["llama"], tensor_parallel_size=2)
    try:
        engine.add_request(prompts(0, [6])[0], GREEDY)
        with pytest.raises(WorkerError) as failure:
            engine.step()
    finally:
        engine.close()
    text = str(failure.value)
    first, second = text.index("worker rank 1 failed: ValueError: rank one broke"), text.index("worker rank 0 failed")
    assert first < second
    assert any(marker in text[second:].splitlines()[0] for marker in multiproc.PEER_LOST_MARKERS)
    assert not multiprocessing.active_children()


def test_silent_workers_time_out_instead_of_hanging(checkpoints):
    """A wait has a deadline: workers that cannot even start (a spawned interpreter imports torch first)
    within 0.5 s are stopped, and the error says nobody answered."""
    from mini_platform.executor.multiproc import MultiprocExecutor
    from mini_platform.executor.worker import WorkerConfig
    config = WorkerConfig(str(checkpoints["llama"]), 2, torch.float32, num_blocks=8, block_size=4, timeout_s=0.5)
    with pytest.raises(WorkerError, match=r"during start-up.*\n.*no worker answered within 0.5 s"):
        MultiprocExecutor(config)
    assert not multiprocessing.active_children()


# -- real devices: not run on this CPU machine ------------------------------------------------------------
def _single_rank_collectives(backend: str, device: torch.device, communicator_cls) -> None:
    """One rank: every collective runs through the device's library and returns its input (the one
    rank's contribution). One GPU cannot host two NCCL ranks, so a multi-rank check needs several devices."""
    import torch.distributed as dist
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        comm = communicator_cls(dist.group.WORLD, device)
        x = torch.arange(6.0, device=device).view(2, 3)
        assert torch.equal(comm.all_reduce(x.clone()), x)
        assert torch.equal(comm.all_gather(x, dim=-1), x)
        assert torch.equal(comm.reduce_scatter(x.clone(), dim=0), x)
        assert torch.equal(comm.all_to_all(x, [2], [2]), x)
        assert torch.equal(comm.broadcast(x.clone(), src=0), x)
    finally:
        dist.destroy_process_group()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (NCCL)")
def test_nccl_collectives_on_one_gpu():
    from mini_platform.distributed.communicator import CudaCommunicator
    _single_rank_collectives("nccl", torch.device("cuda", 0), CudaCommunicator)


@pytest.mark.npu
def test_hccl_collectives_on_one_npu():
    pytest.importorskip("torch_npu", reason="needs an Ascend NPU with torch_npu (HCCL)")
    from mini_platform.ascend.communicator import NpuCommunicator
    _single_rank_collectives("hccl", torch.device("npu", 0), NpuCommunicator)


def test_an_error_read_beside_a_normal_message_is_not_dropped():
    """Rank 0 reports an error while rank 1 reports "ready" in the same wait: the error (with its traceback)
    must reach the caller, not be dropped for rank 1's message. No process is started: pipes stand in."""
    from multiprocessing import Pipe
    from types import SimpleNamespace
    from mini_platform.executor.multiproc import MultiprocExecutor
    pipes = [Pipe() for _ in range(2)]
    executor = MultiprocExecutor.__new__(MultiprocExecutor)
    executor.timeout_s, executor.error = 1.0, None
    executor.conns = [parent for parent, _ in pipes]
    sentinels = [os.pipe() for _ in range(2)]  # never readable: both "processes" stay alive
    executor.procs = [SimpleNamespace(sentinel=read_end, pid=100 + r, exitcode=None, is_alive=lambda: False)
                      for r, (read_end, _) in enumerate(sentinels)]
    executor._finalizer = SimpleNamespace(alive=True)
    executor.close = lambda: None
    pipes[0][1].send_bytes(pickle.dumps(("error", "Traceback ...\nValueError: rank zero broke\n")))
    pipes[1][1].send_bytes(pickle.dumps(("ready",)))
    try:
        with pytest.raises(WorkerError, match=r"worker rank 0 failed: ValueError: rank zero broke"):
            executor._receive("start-up")
    finally:
        for fd in (fd for pair in sentinels for fd in pair):
            os.close(fd)
        for a, b in pipes:
            a.close(), b.close()


def test_an_interrupted_step_stops_the_workers_for_good(monkeypatch):
    """Ctrl+C while waiting for a step: its late answer must never be taken for the next step's."""
    executor = MultiprocExecutor.__new__(MultiprocExecutor)
    from types import SimpleNamespace
    executor.error, closed = None, []
    executor.conns, executor.graph_stats, executor.max_num_seqs = [], GraphStats([]), 4
    executor._finalizer = SimpleNamespace(alive=True)
    executor.close = lambda: closed.append(True)
    monkeypatch.setattr("mini_platform.executor.multiproc.step_input", lambda batch, kv: None)

    def interrupted(during):
        raise KeyboardInterrupt

    executor._receive = interrupted
    with pytest.raises(KeyboardInterrupt):
        executor.execute(None, None)
    assert closed == [True]
    with pytest.raises(WorkerError, match="interrupted"):
        executor.execute(None, None)


def test_enable_expert_parallel_must_be_a_bool(checkpoints):
    """A string such as "yes" (or "false") is truthy: it must be rejected, not read as True."""
    with pytest.raises(ValueError, match="enable_expert_parallel must be True or False"):
        LLM(checkpoints["mixtral"], tensor_parallel_size=2, enable_expert_parallel="false")
    assert not multiprocessing.active_children()


def test_a_script_without_a_main_guard_is_told_what_to_do(checkpoints, tmp_path):
    """Spawned workers re-import the driver's script; without ``if __name__ == "__main__":`` they die before
    they can report anything. The error must say so instead of only "exit code 1"."""
    import subprocess
    import sys
    script = tmp_path / "no_guard.py"
    script.write_text(f"from mini_platform import LLM\nLLM({str(checkpoints['llama'])!r}, tensor_parallel_size=2)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()
    assert "WorkerError" in done.stderr and 'if __name__ == "__main__":' in "\n".join(last[-3:])


def test_a_worker_killed_between_steps_is_named_at_the_next_step(checkpoints):
    """The dead worker's pipe is broken when the next step is sent: a WorkerError naming the rank, not a bare
    BrokenPipeError, and the surviving rank is stopped too."""
    engine = LLMEngine(checkpoints["llama"], tensor_parallel_size=2)
    pids = engine.runner.pids
    try:
        os.kill(pids[1], signal.SIGKILL)
        engine.runner.procs[1].join(10)  # dead (and its pipe closed) before the step is sent
        engine.add_request(prompts(0, [6])[0], GREEDY)
        with pytest.raises(WorkerError, match=r"worker rank 1 .*died unexpectedly with signal SIGKILL"):
            engine.step()
        assert not _alive(pids)
    finally:
        engine.close()
    assert not multiprocessing.active_children()
