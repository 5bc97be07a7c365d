"""MC2 on the emulated Ascend path: the emulated ``npu_moe_distribute_dispatch`` / ``_combine`` (v1 and v2) against a
plain reference over 2 gloo ranks, the MC2 dispatcher equal to the all-to-all and all-gather exchanges, the engine's
``moe_comm="mc2"`` and ``"auto"`` at TP=2 + EP equal to one process, vllm-ascend v0.11.0's per-step rule, and the
errors. Two multi-process tests (spawning is the slow part). Results are verified against an emulation of torch_npu
semantics; not run on Ascend hardware here.
"""
from __future__ import annotations

import multiprocessing

import pytest
import torch

from mini_platform import LLM, SamplingParams
from mini_platform.ascend.moe_comm import (is_prefill_step, mc2_tokens_capacity, moe_comm_for_step,
                                           select_moe_comm_method)
from mini_platform.executor.multiproc import free_port
from mini_platform.model import make_tiny_checkpoint

GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
E, K, H, BS = 6, 2, 8, 5     # experts (3 per rank), choices, hidden, tokens per rank


def _rank_data(rank: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rank ``rank``'s tokens, distinct expert ids per token and fp32 weights (any rank can rebuild any rank's)."""
    g = torch.Generator().manual_seed(10 + rank)
    x = torch.randn(BS, H, generator=g)
    ids = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(BS)]).to(torch.int32)
    return x, ids, torch.rand(BS, K, generator=g)


def _expert(rows: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
    """A stand-in expert that depends on which expert it is: ``(e + 1) * row + e``."""
    return rows * (experts + 1).unsqueeze(1).float() + experts.unsqueeze(1).float()


def _ops_worker(rank: int, world: int, port: int) -> None:
    import torch.distributed as dist

    from mini_platform.ascend import mc2
    from mini_platform.ascend.emulation import emulated_torch_npu, npu
    from mini_platform.distributed import parallel_state
    from mini_platform.distributed.moe_dispatch import ExpertParallelDispatcher
    from mini_platform.model.moe import expert_map_for_rank, expert_owners
    from mini_platform import ops

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        with emulated_torch_npu() as torch_npu:
            name = mc2.hccl_comm_name(dist.group.WORLD)
            x, ids, w = _rank_data(rank)
            local = E // world
            for v2 in (False, True):
                dispatch = torch_npu.npu_moe_distribute_dispatch_v2 if v2 else torch_npu.npu_moe_distribute_dispatch
                combine = torch_npu.npu_moe_distribute_combine_v2 if v2 else torch_npu.npu_moe_distribute_combine
                mask = torch.tensor([True, True, False, True, True]) if v2 else None    # token 2 does not take part
                extra = {"x_active_mask": mask} if v2 else {}
                expand_x, scales, assist, nums, recv_counts, tp_counts, expand_scales = dispatch(
                    x, ids, name, world, rank, E, expert_token_nums_type=0, **extra)
                # The reference: every rank's active pairs for my experts, by expert, then source rank, then token.
                want_rows, want_experts = [], []
                for e in range(rank * local, (rank + 1) * local):
                    for src in range(world):
                        sx, sids, _ = _rank_data(src)
                        for t in range(BS):
                            if (mask is None or mask[t]) and e in sids[t].tolist():
                                want_rows.append(sx[t])
                                want_experts.append(e)
                n = len(want_rows)
                assert expand_x.shape == (BS * world * min(local, K), H) and expand_x.dtype == x.dtype
                assert torch.equal(expand_x[:n], torch.stack(want_rows)) and not expand_x[n:].any()
                counts = torch.bincount(torch.tensor(want_experts) - rank * local, minlength=local)
                assert nums.dtype == torch.int64 and nums.tolist() == torch.cumsum(counts, 0).tolist()
                assert recv_counts.dtype == torch.int32 and int(recv_counts.sum()) == n
                assert tp_counts.numel() == 0 and expand_scales.numel() == 0 and scales.dtype == torch.float32
                assert assist.numel() == (max(BS * K, expand_x.shape[0] * 128) if v2 else BS * K)
                out = combine(_expert(expand_x, torch.tensor(want_experts + [0] * (expand_x.shape[0] - n))),
                              ids, assist, recv_counts, w, name, world, rank, E, **extra)
                want = sum(w[:, k:k + 1] * _expert(x, ids[:, k].long()) for k in range(K))
                if mask is not None:
                    want[~mask] = 0
                torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6, msg=f"combine v2={v2}")
            with pytest.raises(ValueError, match="no HCCL communicator named 'nope'"):
                torch_npu.npu_moe_distribute_dispatch_v2(x, ids, "nope", world, rank, E)
            # The MC2 dispatcher (A3 and A2 calls) equals both token exchanges on one MoE layer with 7 tokens
            # (padded to 8: rank 1's last token is padding).
            parallel_state.init_model_parallel(world, True, torch.device("cpu"))
            ep = parallel_state.get_ep_group()
            g = torch.Generator().manual_seed(0)
            w13, w2 = torch.randn(4, 12, H, generator=g), torch.randn(4, H, 6, generator=g)
            tokens, router = torch.randn(7, H, generator=g), torch.randn(H, 4, generator=g)
            route = lambda h: ops.moe_topk_softmax(h @ router, K, True)  # noqa: E731
            expert_map = expert_map_for_rank(4, world, rank)
            owned = (expert_map >= 0).nonzero().flatten()
            experts = lambda h, wt, i: ops.fused_experts(h, w13[owned], w2[owned], wt, i, expert_map)  # noqa: E731
            with ops.use_backend("npu"):
                exchange = ExpertParallelDispatcher(ep, expert_owners(4, world))
                alltoall, allgather = (exchange(tokens, route, experts, m) for m in ("alltoall", "allgather"))
                for soc in (250, 220):                                       # A3, then A2
                    npu.EMULATED_SOC_VERSION = soc
                    got = mc2.MC2Dispatcher(ep, 4)(tokens, route, w13[owned], w2[owned])
                    torch.testing.assert_close(got, alltoall, rtol=1e-5, atol=1e-5, msg=f"soc {soc}")
            torch.testing.assert_close(alltoall, allgather, rtol=1e-5, atol=1e-5)
    finally:
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()


def test_emulated_dispatch_combine_and_the_mc2_dispatcher_over_two_ranks():
    torch.multiprocessing.spawn(_ops_worker, args=(2, free_port()), nprocs=2, join=True)


def test_mc2_and_auto_through_the_engine_equal_one_process(tmp_path, emulated_npu):
    """TP=2 + EP on the emulated npu: ``mc2`` every step, and ``auto`` (A3: MC2 up to the capacity of 4 tokens,
    all-to-all above it) give one process's greedy tokens; the engine counts auto's choices per step."""
    checkpoint = make_tiny_checkpoint(tmp_path / "mixtral", "mixtral", seed=5)
    batch = [[5, 17, 42, 8, 61, 33, 12], [44, 3, 28], [9, 9, 70, 2, 31]]
    options = dict(backend="npu", block_size=16, max_num_seqs=4, max_num_batched_tokens=16)
    want = [o.token_ids for o in LLM(checkpoint, **options).generate(batch, GREEDY)]
    for method in ("mc2", "auto"):
        with LLM(checkpoint, tensor_parallel_size=2, enable_expert_parallel=True, moe_comm=method, **options) as llm:
            got = [o.token_ids for o in llm.generate(batch, GREEDY)]
            steps = llm.engine.stats()["moe_comm_steps"]
        assert got == want, method
        if method == "auto":    # the prefill steps (15 tokens, then 3 + ...) above 4 tokens, decode steps at or below
            assert set(steps) == {"mc2", "alltoall"} and steps["mc2"] >= GREEDY.max_tokens - 1, steps
        else:
            assert steps == {}
    assert not multiprocessing.active_children()


def test_the_rule_of_vllm_ascend_v0_11_0():
    rule = lambda n, prefill, soc, **kw: select_moe_comm_method(  # noqa: E731
        n, prefill, soc, **{"expert_parallel": True, "mc2_tokens_capacity": 8, "world_size": 16, **kw})
    assert rule(8, False, "A3") == "mc2" and rule(9, False, "A3") == "alltoall"
    assert rule(8, True, "A3", world_size=2) == "mc2"                      # A3: no world-size condition
    assert rule(8, False, "A2") == "mc2" and rule(8, False, "A2", world_size=8) == "allgather"
    assert rule(9, False, "A2") == "allgather" and rule(9, False, "A2", quant_type="w4a8_dynamic") == "alltoall"
    assert rule(9, True, "A2") == "naive_multicast" and rule(9, True, "A2", sequence_parallel=True) == "allgather"
    assert rule(3, True, "310P", expert_parallel=False) == "naive_multicast"   # no EP: all-gather, whatever the chip
    with pytest.raises(ValueError, match="310P"):
        rule(3, False, "310P")
    assert mc2_tokens_capacity(64, [], 2) == 64 and mc2_tokens_capacity(600, [], 1) == 512
    assert mc2_tokens_capacity(5, [], 2) == 6 and mc2_tokens_capacity(64, [1, 2, 4, 8, 16], 3) == 18
    assert is_prefill_step([1, 1], [1, 1]) and is_prefill_step([1, 3], [5, 9]) and not is_prefill_step([1, 1], [4, 1])


def test_the_per_step_choice_follows_the_emulated_chip(emulated_npu):
    from mini_platform.ascend.emulation import npu

    step = dict(tensor_parallel_size=2, expert_parallel=True, max_num_seqs=4, capture_sizes=[])
    assert moe_comm_for_step([1] * 4, [5] * 4, None, **step) == "mc2"            # A3 (the default): 4 <= 4
    assert moe_comm_for_step([5], [5], None, **step) == "alltoall"
    assert moe_comm_for_step([1] * 4, [5] * 4, 8, **step) == "alltoall"           # a graph of 8 counts as 8 tokens
    npu.EMULATED_SOC_VERSION = 220                                                # A2 with 2 ranks: all-gather
    try:
        assert moe_comm_for_step([1] * 4, [5] * 4, None, **step) == "allgather"
    finally:
        npu.EMULATED_SOC_VERSION = 250


def test_clear_errors(tmp_path, emulated_npu):
    checkpoint = make_tiny_checkpoint(tmp_path / "mixtral", "mixtral", seed=5)
    for method in ("mc2", "auto"):
        with pytest.raises(ValueError, match=rf"moe_comm='{method}' is Ascend's .*needs backend='npu'"):
            LLM(checkpoint, backend="cpu", tensor_parallel_size=2, enable_expert_parallel=True, moe_comm=method)
    with pytest.raises(ValueError, match=r"moe_comm='deepep' is not one of \('alltoall', 'allgather', 'mc2', 'auto'\)"):
        LLM(checkpoint, backend="npu", block_size=16, moe_comm="deepep")
    with pytest.raises(ValueError, match="use enforce_eager=True"):
        LLM(checkpoint, backend="npu", block_size=16, moe_comm="mc2", enforce_eager=False)
    with pytest.raises(ValueError, match="no compilation_config graph mode"):
        LLM(checkpoint, backend="npu", block_size=16, moe_comm="auto", compilation_config={"cudagraph_mode": "PIECEWISE"})
    assert not multiprocessing.active_children()
