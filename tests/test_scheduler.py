"""Scheduler: token budget, max_num_seqs, chunked prefill, FCFS, preemption order, abort, stop conditions.

No model: a fake step samples a fixed token, so only the bookkeeping is under test.
"""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from mini_platform.kv_cache import KVCacheManager
from mini_platform.sampler import SamplingParams
from mini_platform import scheduler as scheduler_module
from mini_platform.scheduler import Request, RequestStatus, Scheduler, check_stop


def make(num_blocks=64, block_size=4, max_num_seqs=8, budget=16, chunked=True, max_model_len=1000, eos=(2,),
         prefix_caching=True) -> Scheduler:
    kv = KVCacheManager(num_blocks, block_size, prefix_caching)
    return Scheduler(kv, max_num_seqs, budget, max_model_len, chunked, eos)


def req(rid: str, n: int, max_tokens: int = 100, first: int = 10, **params) -> Request:
    return Request(rid, list(range(first, first + n)), SamplingParams(temperature=0, max_tokens=max_tokens, **params))


def greedy_params(max_tokens: int = 100) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=max_tokens)


def plan(out) -> list[tuple[str, int, int]]:
    return [(s.request.request_id, s.start, s.num_new_tokens) for s in out.scheduled]


def run_step(sched: Scheduler, token: int = 7):
    out = sched.schedule()
    sched.update(out, [token] * sum(s.samples for s in out.scheduled))
    return out


def test_token_budget_and_chunked_prefill_split_prompts():
    sched = make(budget=16)
    for rid in "abc":
        sched.add(req(rid, 10, first=100 * ord(rid)))
    assert plan(run_step(sched)) == [("a", 0, 10), ("b", 0, 6)]          # b's prompt is split
    assert plan(run_step(sched)) == [("a", 10, 1), ("b", 6, 4), ("c", 0, 10)]
    assert plan(run_step(sched)) == [("a", 11, 1), ("b", 10, 1), ("c", 10, 1)]
    a, b, c = sched.running
    assert (len(a.output_token_ids), len(b.output_token_ids), len(c.output_token_ids)) == (3, 2, 2)


def test_a_prompt_chunk_does_not_sample():
    sched = make(budget=4)
    sched.add(req("a", 10))
    outs = [run_step(sched) for _ in range(3)]
    assert [plan(o) for o in outs] == [[("a", 0, 4)], [("a", 4, 4)], [("a", 8, 2)]]
    assert [[s.samples for s in o.scheduled] for o in outs] == [[False], [False], [True]]
    assert sched.running[0].output_token_ids == [7]


def test_without_chunked_prefill_a_prompt_waits_for_room_and_nobody_overtakes():
    sched = make(budget=16, chunked=False)
    sched.add(req("a", 10, first=100))
    sched.add(req("b", 10, first=200))
    sched.add(req("c", 2, first=300))     # would fit, but FCFS keeps it behind b
    assert plan(run_step(sched)) == [("a", 0, 10)]
    assert plan(run_step(sched)) == [("a", 10, 1), ("b", 0, 10), ("c", 0, 2)]


def test_max_num_seqs_caps_the_running_set():
    sched = make(max_num_seqs=2, budget=100)
    for i in range(4):
        sched.add(req(f"r{i}", 3, max_tokens=2, first=10 * i))
    assert [r for r, _, _ in plan(run_step(sched))] == ["r0", "r1"]
    assert [r for r, _, _ in plan(run_step(sched))] == ["r0", "r1"]   # both finish here
    assert [r.request_id for r in sched.running] == []
    assert [r for r, _, _ in plan(run_step(sched))] == ["r2", "r3"]


def test_preemption_takes_the_newest_request_and_requeues_it_first():
    # 6 blocks of 4 tokens; three 7-token prompts take 2 blocks each; the 9th token needs a 3rd block.
    sched = make(num_blocks=6, block_size=4, budget=64)
    for rid in "abc":
        sched.add(req(rid, 7, first=100 * ord(rid)))
    run_step(sched)                       # prefill all three
    run_step(sched)                       # first decode: 8 tokens in 2 full blocks each
    out = run_step(sched)                 # a needs a 3rd block: c, the newest, is preempted
    assert [r.request_id for r in out.preempted] == ["c"]
    assert plan(out) == [("a", 8, 1), ("b", 8, 1)]
    c = sched.waiting[0]
    assert c.request_id == "c" and c.status is RequestStatus.WAITING and c.num_computed_tokens == 0
    assert c.output_token_ids == [7, 7] and sched.num_preemptions == 1 and c.num_preemptions == 1
    out = run_step(sched)                 # no room for c yet; a and b keep decoding
    assert plan(out) == [("a", 9, 1), ("b", 9, 1)] and not out.preempted


def test_a_request_preempts_itself_when_it_is_the_newest():
    sched = make(num_blocks=4, block_size=4, budget=64)
    sched.add(req("a", 5, first=100))          # 2 blocks with room to grow
    sched.add(req("b", 7, first=200))          # 2 blocks, full after its first decode
    run_step(sched)
    run_step(sched)
    out = run_step(sched)                      # b needs a 3rd block and nobody is newer than b
    assert [r.request_id for r in out.preempted] == ["b"] and plan(out) == [("a", 6, 1)]
    assert list(sched.waiting) == out.preempted and [r.request_id for r in sched.running] == ["a"]


def test_preempted_request_recomputes_prompt_and_outputs_with_prefix_hits():
    sched = make(num_blocks=5, block_size=4, budget=64)
    sched.add(req("a", 7, max_tokens=3, first=100))
    sched.add(req("b", 1, max_tokens=3, first=200))   # never needs a 2nd block
    sched.add(req("c", 7, max_tokens=3, first=300))
    run_step(sched)
    run_step(sched)
    out = run_step(sched)                   # a needs a block: c is preempted, a evicts c's last block
    assert [r.request_id for r in out.preempted] == ["c"] and not sched.running   # a and b finished
    out = run_step(sched)
    c = out.scheduled[0].request
    # c recomputes prompt + outputs (9 tokens); its first block is still cached.
    assert plan(out) == [("c", 4, 5)] and out.scheduled[0].samples and c.num_computed_tokens == 9
    assert c.output_token_ids == [7, 7, 7] and c.is_finished
    assert c.num_cached_tokens == 0 and sched.num_prefix_hit_tokens == 4


def test_prefix_hit_on_admission_skips_cached_tokens():
    sched = make(block_size=4, budget=64)
    sched.add(req("a", 10, first=0))
    run_step(sched)
    sched.add(req("b", 10, first=0))
    out = run_step(sched)
    assert plan(out) == [("a", 10, 1), ("b", 8, 2)]
    assert out.scheduled[1].request.num_cached_tokens == 8


def test_abort_frees_blocks_wherever_the_request_is():
    sched = make(num_blocks=8, budget=8, max_num_seqs=1)
    sched.add(req("a", 6))
    sched.add(req("b", 6))
    run_step(sched)
    assert sched.kv.num_free_blocks == 6
    a = sched.abort("a")
    assert a.finish_reason == "abort" and a.is_finished and sched.kv.num_free_blocks == 8
    assert sched.abort("b").finish_reason == "abort" and sched.abort("b") is None
    assert not sched.has_unfinished() and plan(sched.schedule()) == []


@pytest.mark.parametrize("params, tokens, max_len, reason", [
    (dict(max_tokens=3), [5, 6, 7], 100, "length"),
    (dict(max_tokens=4), [5, 6, 7], 100, None),
    (dict(max_tokens=9), [5, 2], 100, "stop"),                    # EOS from the model config
    (dict(max_tokens=9, ignore_eos=True), [5, 2], 100, None),
    (dict(max_tokens=9, ignore_eos=True, stop_token_ids=[6]), [5, 6], 100, "stop"),
    (dict(max_tokens=9), [5, 6], 5, "length"),                    # 3 prompt + 2 outputs reach max_model_len
])
def test_stop_conditions(params, tokens, max_len, reason):
    p = SamplingParams(**params)
    assert check_stop(tokens, 3, p.max_tokens, p.stop_token_ids, (2,), p.ignore_eos, max_len) == reason


def test_finished_requests_leave_and_free_their_blocks():
    sched = make(num_blocks=10, budget=64)
    sched.add(req("a", 5, max_tokens=2))
    sched.add(req("b", 5, stop_token_ids=[7]))
    run_step(sched)                       # b samples 7: stop at once
    assert [r.request_id for r in sched.running] == ["a"]
    run_step(sched)
    assert not sched.has_unfinished() and sched.kv.num_free_blocks == 10


def test_random_traces_finish_every_request_under_pressure():
    rng = random.Random(7)
    for trial in range(5):
        sched = make(num_blocks=10, block_size=4, budget=rng.choice([4, 8, 32]), max_num_seqs=rng.choice([2, 8]))
        requests = [req(f"r{i}", rng.randrange(1, 15), max_tokens=rng.randrange(1, 12), first=rng.randrange(50),
                        ignore_eos=True) for i in range(12)]
        for r in requests:
            sched.add(r)
        steps = 0
        while sched.has_unfinished():
            out = run_step(sched)
            assert out.num_tokens <= sched.max_num_batched_tokens and len(sched.running) <= sched.max_num_seqs
            assert out.scheduled or out.preempted
            steps += 1
            assert steps < 1000
        assert all(len(r.output_token_ids) == r.sampling_params.max_tokens for r in requests)
        assert sched.kv.num_free_blocks == 10


def test_preemption_counts_only_the_blocks_a_victim_gives_back(monkeypatch):
    seen = []

    def recording(running, free_blocks):
        seen.append((list(running), free_blocks))
        return allocate(running, free_blocks)

    allocate = scheduler_module.allocate_with_preemption
    monkeypatch.setattr(scheduler_module, "allocate_with_preemption", recording)   # looked up at call time
    sched = make(num_blocks=5, block_size=4, budget=64)
    shared = list(range(100, 108))                   # two full blocks
    sched.add(Request("a", shared + [1, 2], greedy_params()))
    run_step(sched)                                  # a: 10 tokens in 3 blocks, its first two now cached
    sched.add(Request("b", shared + [3, 4, 5], greedy_params()))
    out = run_step(sched)                            # b adopts a's two blocks and takes one of its own
    assert plan(out) == [("a", 10, 1), ("b", 8, 3)] and sched.kv.num_free_blocks == 1
    run_step(sched)                                  # a: 12 tokens, b: 12 tokens, 4 blocks in use
    out = run_step(sched)                            # a needs a 4th block: b goes, giving back only its own
    assert seen[-1] == ([("a", 3, 1), ("b", 1, 1)], 1)
    assert [r.request_id for r in out.preempted] == ["b"] and plan(out) == [("a", 12, 1)]


def test_a_waiting_request_whose_prefix_hit_was_just_evicted_waits_a_step():
    sched = make(num_blocks=5, block_size=4, budget=64)
    x = list(range(100, 108))
    sched.add(Request("a", [1, 2, 3], greedy_params()))
    sched.add(Request("x", x, greedy_params(max_tokens=1)))
    run_step(sched)                                  # x finishes: its 2 blocks are cached, least recent first
    sched.add(Request("w", list(range(200, 208)), greedy_params(max_tokens=1)))
    run_step(sched)                                  # w too: no empty block is left
    sched.add(Request("y", x + [9], greedy_params()))
    out = run_step(sched)                            # a's new block evicts x's 2nd block, which y counted on
    assert plan(out) == [("a", 4, 1)]
    out = run_step(sched)                            # y now gets the hit that is still there
    assert plan(out) == [("a", 5, 1), ("y", 4, 5)]
    tables = sched.kv.block_tables
    assert not set(tables["a"]) & set(tables["y"])


def test_a_preemption_function_that_overcommits_blocks_is_named(monkeypatch):
    monkeypatch.setattr(scheduler_module, "allocate_with_preemption", lambda running, free: ([r[0] for r in running], []))
    sched = make(num_blocks=2, block_size=4, budget=64)
    sched.add(req("a", 4))
    sched.add(req("b", 4, first=50))
    run_step(sched)
    with pytest.raises(RuntimeError, match="allocate_with_preemption scheduled request 'a'"):
        sched.schedule()


def test_the_policy_functions_are_looked_up_at_call_time(monkeypatch):
    calls = {name: 0 for name in ("schedule_step", "allocate_with_preemption", "check_stop")}
    for name in calls:
        original = getattr(scheduler_module, name)

        def counted(*args, _name=name, _original=original):
            calls[_name] += 1
            return _original(*args)
        monkeypatch.setattr(scheduler_module, name, counted)
    sched = make()
    sched.add(req("a", 5, max_tokens=2))
    while sched.has_unfinished():
        run_step(sched)
    assert calls == {"schedule_step": 2, "allocate_with_preemption": 2, "check_stop": 2}


def test_scheduler_and_kv_cache_import_without_torch():
    code = "import sys, mini_platform.scheduler, mini_platform.kv_cache; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
