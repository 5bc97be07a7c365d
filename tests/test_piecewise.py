"""Piecewise graphs and the cudagraph modes (chapter 7): the model compiled with torch.compile and our backend, split
at attention (a torch.library custom op), each piece captured per size in the CPU graph, attention eager between.

Every mode equals eager and transformers token for token on a tiny Llama, in one process and (FULL_AND_PIECEWISE; also
PIECEWISE, marked slow) in two tensor-parallel workers, whose all-reduces are custom ops inside the pieces; a DeepSeek
model with latent attention (all layers dense) equals eager; MoE CPU kernels cannot be captured and leave the engine
eager with a warning. Compiled engines are shared per module: TorchDynamo's tracing is the slow part.
"""
from __future__ import annotations

import multiprocessing
import os
import warnings

import pytest
import torch

from mini_platform import LLM, SamplingParams, ops
from mini_platform.compilation.capture_sizes import capture_size_schedule, dispatch_cudagraph
from mini_platform.compilation.config import CUDAGRAPH_MODES, SPLITTING_OPS
from mini_platform.compilation.forward_context import ForwardContext
from mini_platform.compilation.split import node_op_name, piece_ids
from mini_platform.distributed import parallel_state
from mini_platform.distributed.shm_allreduce import leaked_segments
from mini_platform.model import make_tiny_checkpoint

MODES = list(CUDAGRAPH_MODES)
SIZES = [1, 2, 4, 8, 16]
OPTIONS = dict(max_num_seqs=4, max_num_batched_tokens=32, cudagraph_capture_sizes=SIZES, block_size=4)
GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
PROMPTS = [[(7 * i + 3 * j) % 250 + 3 for j in range(n)] for i, n in enumerate([5, 9, 3, 12, 7, 4])]


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("piecewise") / "llama", "llama", max_position_embeddings=128)


@pytest.fixture(scope="module")
def engines(llama):
    """One engine per cudagraph mode (FULL warns: it runs as FULL_AND_PIECEWISE)."""
    built = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for mode in MODES:
            built[mode] = LLM(llama, compilation_config={"cudagraph_mode": mode}, **OPTIONS)
    return built


@pytest.fixture(scope="module")
def expected(llama):
    """transformers' greedy tokens for PROMPTS, and the eager engine's."""
    import transformers as tf
    model = tf.AutoModelForCausalLM.from_pretrained(llama, attn_implementation="eager").eval()
    model.generation_config.eos_token_id = None
    config = tf.GenerationConfig(max_new_tokens=GREEDY.max_tokens, do_sample=False, eos_token_id=None, pad_token_id=0)
    with torch.no_grad():
        hf = [model.generate(torch.tensor([p]), generation_config=config)[0, len(p):].tolist() for p in PROMPTS]
    eager = [o.token_ids for o in LLM(llama, **{k: v for k, v in OPTIONS.items() if k != "cudagraph_capture_sizes"})
             .generate(PROMPTS, GREEDY)]
    return hf, eager


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_matches_eager_and_transformers(mode, engines, expected):
    hf, eager = expected
    assert eager == hf
    llm = engines[mode]
    assert [o.token_ids for o in llm.generate(PROMPTS, GREEDY)] == hf
    stats = llm.engine.stats()
    runtime = {"NONE": {"NONE"}, "PIECEWISE": {"PIECEWISE"}, "FULL": {"FULL", "PIECEWISE"},
               "FULL_DECODE_ONLY": {"FULL"}, "FULL_AND_PIECEWISE": {"FULL", "PIECEWISE"}}[mode]
    used = {m for m, n in stats["steps_by_mode"].items() if n and m != "NONE"}
    assert used == runtime - {"NONE"}, stats["steps_by_mode"]


@pytest.mark.parametrize("mode", ["FULL_AND_PIECEWISE", pytest.param("PIECEWISE", marks=pytest.mark.slow)])
def test_tensor_parallel_pieces_match_eager_and_transformers(llama, expected, mode):
    """Two workers compile their shards and capture the pieces with the all-reduces inside; captured on empty steps,
    the replays must sum each step's real values with the peer's. The stats are the workers'."""
    hf, eager = expected
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        llm = LLM(llama, tensor_parallel_size=2, compilation_config={"cudagraph_mode": mode}, **OPTIONS)
    pids = llm.engine.runner.pids
    with llm:
        got = [o.token_ids for o in llm.generate(PROMPTS, GREEDY)]
        stats = llm.engine.stats()
    assert not [str(w.message) for w in caught if "cannot be captured" in str(w.message)]
    assert got == hf == eager
    pieces = llm.engine.model_config.num_hidden_layers + 1
    assert stats["cudagraph_mode"] == mode and stats["num_pieces"] == pieces
    assert stats["piecewise_capture_sizes"] == SIZES and stats["splitting_ops"] == list(SPLITTING_OPS)
    full = [1, 2, 4] if mode == "FULL_AND_PIECEWISE" else []
    assert stats["graphs_captured"] == {"FULL": len(full), "PIECEWISE": len(SIZES) * pieces}
    assert stats["cudagraph_capture_sizes"] == full
    assert stats["steps_by_mode"]["PIECEWISE"] > 0 and (stats["steps_by_mode"]["FULL"] > 0) == bool(full)
    assert not multiprocessing.active_children() and not leaked_segments(pids + [os.getpid()])


class _DoublingCommunicator:
    """Stands in for a two-rank communicator whose peer holds the same values: a sum doubles."""

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        return x.mul_(2)

    def all_gather(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        return torch.cat([x, x + 1], dim)

    def close(self) -> None:
        pass


def test_collectives_are_custom_ops_dynamo_traces_as_one_node_each():
    """While TorchDynamo traces, a group's all_reduce and all_gather are one opaque node each (their fakes give the
    shapes), kept inside a piece (they are no splitting ops); the ops pass torch.library.opcheck."""
    group = parallel_state.GroupCoordinator("tp", 2, 0, _DoublingCommunicator())
    traced = []

    def backend(gm, example_inputs):
        traced.append(gm)
        return gm

    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(lambda x: group.all_gather(group.all_reduce(x @ w) + 1, dim=-1), backend=backend,
                             fullgraph=True)
    x = torch.randn(3, 4)
    with torch.inference_mode():
        out = compiled(x)
    torch.testing.assert_close(out, torch.cat([2 * (x @ w) + 1, 2 * (x @ w) + 2], dim=-1))
    calls = [node_op_name(n) for n in traced[0].graph.nodes if n.op == "call_function"]
    assert [c for c in calls if c.startswith("mini_platform::")] == ["mini_platform::all_reduce_",
                                                                     "mini_platform::all_gather"]
    assert not set(calls) & set(SPLITTING_OPS)
    for op, args in ((torch.ops.mini_platform.all_reduce_.default, (torch.randn(3, 4), group.unique_name)),
                     (torch.ops.mini_platform.all_gather.default, (torch.randn(3, 4), 1, 2, group.unique_name))):
        torch.library.opcheck(op, args)
    name = group.unique_name
    group.destroy()
    with pytest.raises(ValueError, match="no live process group"):
        torch.ops.mini_platform.all_reduce_(torch.zeros(2), name)


def test_full_runs_as_full_and_piecewise_with_a_warning(llama):
    with pytest.warns(RuntimeWarning, match="FULL_AND_PIECEWISE"):
        llm = LLM(llama, compilation_config={"cudagraph_mode": "FULL"}, **{**OPTIONS, "cudagraph_capture_sizes": [4]})
    assert llm.engine.stats()["cudagraph_mode"] == "FULL_AND_PIECEWISE"


def test_the_split_has_layers_plus_one_pieces(engines):
    piecewise = engines["PIECEWISE"].engine.runner.piecewise
    layers = engines["PIECEWISE"].engine.model_config.num_hidden_layers
    split = piecewise.backend.splits[0]
    assert [item.is_splitting_op for item in split] == [False, True] * layers + [False]
    assert [item.name for item in split] == [f"submod_{i}" for i in range(2 * layers + 1)]
    for item in split:   # an attention sub-graph holds the custom op and nothing else
        calls = [node_op_name(n) for n in item.module.graph.nodes if n.op == "call_function"]
        assert (calls in ([op] for op in SPLITTING_OPS)) == item.is_splitting_op, (item.name, calls)
    traced = [node_op_name(n) for n in piecewise.backend.graph_modules[0].graph.nodes]
    assert sum(op in SPLITTING_OPS for op in traced) == layers
    stats = engines["PIECEWISE"].engine.stats()
    assert stats["num_pieces"] == layers + 1 and stats["splitting_ops"] == list(SPLITTING_OPS)
    assert stats["graphs_captured"] == {"FULL": 0, "PIECEWISE": len(SIZES) * (layers + 1)}
    assert stats["piecewise_capture_sizes"] == SIZES


def test_three_layers_make_four_pieces(tmp_path):
    path = make_tiny_checkpoint(tmp_path / "l3", "llama", num_hidden_layers=3, max_position_embeddings=64)
    llm = LLM(path, compilation_config={"cudagraph_mode": "PIECEWISE"}, **{**OPTIONS, "cudagraph_capture_sizes": [8]})
    assert llm.engine.stats()["num_pieces"] == 4
    assert llm.engine.stats()["graphs_captured"]["PIECEWISE"] == 4


def test_full_and_piecewise_captures_full_graphs_up_to_max_num_seqs(engines):
    stats = engines["FULL_AND_PIECEWISE"].engine.stats()
    assert stats["cudagraph_capture_sizes"] == [1, 2, 4] and stats["piecewise_capture_sizes"] == SIZES
    assert stats["graphs_captured"] == {"FULL": 3, "PIECEWISE": len(SIZES) * stats["num_pieces"]}


def test_default_behaviour_is_unchanged(llama):
    eager = LLM(llama, max_num_seqs=4).engine.stats()
    assert eager["cudagraph_mode"] == "NONE" and eager["num_pieces"] == 0
    full = LLM(llama, max_num_seqs=4, enforce_eager=False).engine
    assert full.stats()["cudagraph_mode"] == "FULL_DECODE_ONLY" and full.runner.piecewise is None
    assert full.stats()["cudagraph_capture_sizes"] == [1, 2, 4]


def test_latent_attention_is_a_splitting_op_too(tmp_path):
    """DeepSeek-V3 with every layer dense: MLA's custom op splits the graph, output equals eager."""
    path = make_tiny_checkpoint(tmp_path / "dsv3", "deepseek_v3", first_k_dense_replace=2, max_position_embeddings=64)
    eager = [o.token_ids for o in LLM(path, block_size=4, max_num_seqs=4).generate(PROMPTS[:3], GREEDY)]
    llm = LLM(path, compilation_config={"cudagraph_mode": "PIECEWISE"}, **{**OPTIONS, "cudagraph_capture_sizes": [32]})
    assert [o.token_ids for o in llm.generate(PROMPTS[:3], GREEDY)] == eager
    split = llm.engine.runner.piecewise.backend.splits[0]
    assert sum(item.is_splitting_op for item in split) == 2 and llm.engine.stats()["num_pieces"] == 3
    assert llm.engine.stats()["steps_by_mode"]["PIECEWISE"] > 0


def test_moe_kernels_leave_the_engine_eager_with_a_warning(tmp_path):
    path = make_tiny_checkpoint(tmp_path / "mixtral", "mixtral", max_position_embeddings=64)
    with pytest.warns(RuntimeWarning, match="cannot be captured"):
        llm = LLM(path, compilation_config={"cudagraph_mode": "PIECEWISE"}, **OPTIONS)
    eager = LLM(path, block_size=4, max_num_seqs=4).generate(PROMPTS[:2], GREEDY)
    assert [o.token_ids for o in llm.generate(PROMPTS[:2], GREEDY)] == [o.token_ids for o in eager]
    assert llm.engine.stats()["cudagraph_mode"] == "NONE"


# -- the dispatch rule (vLLM's CudagraphDispatcher) ----------------------------------------------------------

@pytest.mark.parametrize("mode, decode, mixed, big_decode, too_big", [
    ("NONE", ("NONE", None), ("NONE", None), ("NONE", None), ("NONE", None)),
    ("PIECEWISE", ("PIECEWISE", 4), ("PIECEWISE", 8), ("PIECEWISE", 8), ("NONE", None)),
    ("FULL", ("FULL", 4), ("FULL", 8), ("FULL", 8), ("NONE", None)),
    ("FULL_DECODE_ONLY", ("FULL", 4), ("NONE", None), ("NONE", None), ("NONE", None)),
    ("FULL_AND_PIECEWISE", ("FULL", 4), ("PIECEWISE", 8), ("PIECEWISE", 8), ("NONE", None)),
])
def test_dispatch_rule(mode, decode, mixed, big_decode, too_big):
    sizes, max_num_seqs = [1, 2, 4, 8, 16], 4
    assert dispatch_cudagraph([1, 1, 1], mode, sizes, max_num_seqs) == decode          # 3 decodes -> 4
    assert dispatch_cudagraph([5, 1], mode, sizes, max_num_seqs) == mixed              # 6 tokens -> 8
    assert dispatch_cudagraph([1] * 6, mode, sizes, max_num_seqs) == big_decode        # > max_num_seqs full graphs
    assert dispatch_cudagraph([9, 9], mode, sizes, max_num_seqs) == too_big            # 18 tokens: no graph


def test_dispatch_rejects_bad_steps_and_modes():
    for bad in ([], [0], [1, -1]):
        with pytest.raises(ValueError):
            dispatch_cudagraph(bad, "PIECEWISE", SIZES, 4)
    with pytest.raises(ValueError, match="PARTIAL"):
        dispatch_cudagraph([1], "PARTIAL", SIZES, 4)


def test_piece_ids_follow_vllm_split_graph():
    assert piece_ids(["embed", "A", "mlp", "A", "norm"], {"A"}) == [0, 1, 2, 3, 4]
    assert piece_ids(["A", "x", "A", "A", "y"], ["A"]) == [1, 2, 3, 5, 6]   # empty pieces are skipped
    assert piece_ids(["x", "Ab", "y"], ("A",)) == [0, 0, 0]                 # exact names only


def test_piecewise_sizes_are_token_counts_up_to_twice_max_num_seqs():
    assert capture_size_schedule(2048, 8) == [1, 2, 4, 8, 16]
    assert capture_size_schedule(20, 8, [16, 2]) == [2, 16]
    assert capture_size_schedule(12, 8) == [1, 2, 4, 8]


# -- options --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config, words", [
    ("PIECEWISE", ["compilation_config", "dict"]),
    ({"cudagraph_mode": "PARTIAL"}, ["cudagraph_mode", "PARTIAL", "FULL_AND_PIECEWISE"]),
    ({"cudagraph_mode": 3}, ["cudagraph_mode", "3"]),
    ({"mode": "FULL"}, ["unknown", "mode"]),
])
def test_bad_option_values_name_what_is_wrong(llama, config, words):
    with pytest.raises(ValueError) as info:
        LLM(llama, compilation_config=config)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_contradicting_options_are_refused(llama):
    with pytest.raises(ValueError, match="enforce_eager=True.*PIECEWISE"):
        LLM(llama, enforce_eager=True, compilation_config={"cudagraph_mode": "PIECEWISE"})
    with pytest.raises(ValueError, match="enable_expert_parallel=True"):  # refused before any worker starts
        LLM(llama, tensor_parallel_size=2, enable_expert_parallel=True,
            compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE"})
    assert not multiprocessing.active_children()
    assert LLM(llama, enforce_eager=True, compilation_config={"cudagraph_mode": "NONE"}).engine.runner.piecewise is None
    assert LLM(llama, compilation_config={"cudagraph_mode": "piecewise"}, **OPTIONS).engine.stats()[
        "cudagraph_mode"] == "PIECEWISE"


def test_kernels_are_bound_before_tracing():
    table = ops.resolve_kernels("cpu")
    marker = lambda *args: "bound"  # noqa: E731
    with ops.use_resolved_kernels({**table, "silu_and_mul": marker}):
        assert ops.silu_and_mul(torch.zeros(2, 4)) == "bound"
        assert ops.silu_and_mul(torch.zeros(2, 4), backend="cpu").shape == (2, 2)   # backend= still looks up
    assert ops.silu_and_mul(torch.zeros(2, 4)).shape == (2, 2)


def test_a_piece_captures_only_in_the_capture_phase(engines):
    """A size no piece captured at start-up is refused at run time (a capture then would run the piece twice)."""
    runner = engines["PIECEWISE"].engine.runner
    assert 3 not in runner.piecewise_sizes
    context = ForwardContext(runner.attention, 3, 0, "PIECEWISE")
    with pytest.raises(RuntimeError, match="no graph of size 3 was captured at start-up"), torch.inference_mode():
        runner.piecewise.run(runner.buffers.input_ids[:3], runner.buffers.positions[:3], context)


def test_a_piece_refuses_inputs_it_was_not_captured_with(engines):
    """Replaying reads the captured tensors: new input tensors (not the persistent buffers) are refused."""
    runner = engines["PIECEWISE"].engine.runner
    context = ForwardContext(runner.attention, 8, 0, "PIECEWISE")
    # A view of a copy of the buffer: what Dynamo guards on (a view whose base has room) holds, so the same trace runs
    # and the pieces see other memory. (A plain clone has no base: Dynamo would trace again, and the new pieces have
    # no graphs to replay: test_a_piece_captures_only_in_the_capture_phase.)
    ids = runner.buffers.input_ids.clone()[:8]
    with pytest.raises(RuntimeError, match="captured with"), torch.inference_mode():
        runner.piecewise.run(ids, runner.buffers.positions[:8], context)
