"""Continuous batching: every step, decide which requests run and how many of their tokens.

One rule covers prefill, chunked prefill and decode (as in vLLM's V1 scheduler): a request has
``num_tokens`` tokens (prompt + output so far) of which ``num_computed_tokens`` are in the KV cache;
a step computes some of the rest. A decoding request needs 1 token, a new prompt needs all of it.

Each step, under a budget of ``max_num_batched_tokens`` tokens:

1. running requests first, oldest first; when the KV pool has no block left for one, the newest
   running request is **preempted**: its blocks are freed and it goes back to the head of the waiting
   queue, to be recomputed later (prefix caching usually gives most of it back);
2. then, if nothing was preempted, waiting requests in arrival order (FCFS), while fewer than
   ``max_num_seqs`` run. With chunked prefill a prompt larger than the budget left gets a chunk of
   it; without, it waits for a step with room for all of it. Waiting stops at the first request that
   does not fit, so no later request overtakes it.

The policy is three pure functions of plain values, which the :class:`Scheduler` applies to real requests
and KV blocks: :func:`schedule_step` (the token plan), :func:`allocate_with_preemption` (who gets blocks and
who is preempted) and :func:`check_stop` (when a request is finished). They are looked up in this module at
call time, so a replacement with the same contract (``setattr(scheduler, name, fn)``) runs the engine.

After the model ran, :meth:`Scheduler.update` advances the counters, appends sampled tokens,
registers newly full blocks in the prefix cache, and finishes requests that hit a stop condition.
Pure Python, no torch.
"""
from __future__ import annotations

import enum
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from .kv_cache import KVCacheManager

if TYPE_CHECKING:  # only read here, never built: importing the scheduler does not import torch
    from .sampler import SamplingParams


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


_arrivals = itertools.count()


@dataclass(eq=False)
class Request:
    request_id: str
    prompt_token_ids: list[int]
    sampling_params: SamplingParams
    generator: Any = None  # the request's torch.Generator when it has a seed
    arrival: int = field(default_factory=lambda: next(_arrivals))
    output_token_ids: list[int] = field(default_factory=list)
    status: RequestStatus = RequestStatus.WAITING
    num_computed_tokens: int = 0
    num_cached_tokens: int = 0  # prompt tokens served from the prefix cache at the first admission
    num_preemptions: int = 0
    finish_reason: str | None = None  # "stop", "length" or "abort"
    # Prompt then outputs, kept up to date by append_output: read every step, never rebuilt.
    all_token_ids: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.all_token_ids = self.prompt_token_ids + self.output_token_ids

    def append_output(self, token: int) -> None:
        self.output_token_ids.append(token)
        self.all_token_ids.append(token)

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)

    @property
    def is_finished(self) -> bool:
        return self.status is RequestStatus.FINISHED


@dataclass
class ScheduledRequest:
    """``num_new_tokens`` tokens of ``request``, from position ``start``, run in this step."""
    request: Request
    start: int
    num_new_tokens: int
    # Whether this step reaches the request's last token, so that its logits give a new token.
    samples: bool = field(init=False)

    def __post_init__(self) -> None:
        self.samples = self.end == self.request.num_tokens

    @property
    def end(self) -> int:
        return self.start + self.num_new_tokens


@dataclass
class SchedulerOutput:
    scheduled: list[ScheduledRequest]
    preempted: list[Request]

    @property
    def num_tokens(self) -> int:
        return sum(s.num_new_tokens for s in self.scheduled)


def schedule_step(running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int]], budget: int,
                  max_num_seqs: int, chunked: bool = True) -> list[tuple[str, int]]:
    """The step's token plan: ``(request_id, tokens this step)`` in scheduling order (exercise 220).

    Requests are ``(request_id, num_tokens, num_computed)``. ``running`` first, in order, each taking
    ``min(what it wants, budget left)``; then ``waiting`` FCFS while the budget lasts and fewer than
    ``max_num_seqs`` run; a prompt larger than the budget left gets a chunk (``chunked``) or stops the queue.
    """
    plan: list[tuple[str, int]] = []
    for request_id, num_tokens, num_computed in running:
        if budget == 0:
            break
        n = min(num_tokens - num_computed, budget)
        if n > 0:
            plan.append((request_id, n))
            budget -= n
    num_running = len(running)
    for request_id, num_tokens, num_computed in waiting:
        if budget == 0 or num_running >= max_num_seqs:
            break
        n = num_tokens - num_computed
        if n > budget:
            if not chunked:
                break
            n = budget
        plan.append((request_id, n))
        budget -= n
        num_running += 1
    return plan


def allocate_with_preemption(running: list[tuple[str, int, int]], free_blocks: int) -> tuple[list[str], list[str]]:
    """Give each running request ``(request_id, held, need)`` (oldest first) its ``need`` new blocks, preempting
    the newest request left (its ``held`` blocks return to the pool) until it fits (exercise 221).
    Returns ``(scheduled ids, preempted ids)`` in the order it happened; a request that preempts itself ends it."""
    queue = list(running)
    scheduled: list[str] = []
    preempted: list[str] = []
    i = 0
    while i < len(queue):
        request_id, _, need = queue[i]
        while free_blocks < need:
            victim_id, held, _ = queue.pop()
            free_blocks += held
            preempted.append(victim_id)
            if victim_id == request_id:
                return scheduled, preempted
        free_blocks -= need
        scheduled.append(request_id)
        i += 1
    return scheduled, preempted


def check_stop(output_token_ids: Sequence[int], prompt_len: int, max_tokens: int, stop_token_ids: Sequence[int],
               eos_token_ids: Sequence[int], ignore_eos: bool, max_model_len: int) -> str | None:
    """Why a request must finish after its latest output token (exercise 222): "stop" for a stop token, or
    EOS unless ``ignore_eos``; else "length" at ``max_tokens`` outputs or ``max_model_len`` tokens; else None."""
    last = output_token_ids[-1]
    if last in stop_token_ids or (not ignore_eos and last in eos_token_ids):
        return "stop"
    if len(output_token_ids) >= max_tokens or prompt_len + len(output_token_ids) >= max_model_len:
        return "length"
    return None


class Scheduler:
    def __init__(self, kv: KVCacheManager, max_num_seqs: int, max_num_batched_tokens: int, max_model_len: int,
                 enable_chunked_prefill: bool = True, eos_token_ids: Sequence[int] = ()) -> None:
        self.kv = kv
        self.max_num_seqs, self.max_num_batched_tokens = max_num_seqs, max_num_batched_tokens
        self.max_model_len, self.enable_chunked_prefill = max_model_len, enable_chunked_prefill
        self.eos_token_ids = tuple(eos_token_ids)
        self.waiting: deque[Request] = deque()  # arrival order; preempted requests go back to the head
        self.running: list[Request] = []        # arrival order, so the newest is last
        self.num_preemptions = 0
        self.num_prefix_hit_tokens = 0  # tokens served from the prefix cache, over all admissions

    def add(self, request: Request) -> None:
        self.waiting.append(request)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def abort(self, request_id: str) -> Request | None:
        """Finish the request now with reason "abort", freeing its blocks; None if it is not queued."""
        for queue in (self.waiting, self.running):
            for request in queue:
                if request.request_id == request_id:
                    queue.remove(request)
                    self._finish(request, "abort")
                    return request
        return None

    # -- the step ------------------------------------------------------------------------------------
    def schedule(self) -> SchedulerOutput:
        """Plan the step's tokens with :func:`schedule_step`, give the running requests their blocks with
        :func:`allocate_with_preemption`, then, if nobody was preempted, admit the planned waiting requests
        (FCFS) while the KV pool has room for them."""
        kv = self.kv
        candidates = self._admission_candidates()
        plan = schedule_step([(r.request_id, r.num_tokens, r.num_computed_tokens) for r in self.running],
                             [(r.request_id, r.num_tokens, len(prefix) * kv.block_size) for r, prefix in candidates],
                             self.max_num_batched_tokens, self.max_num_seqs, self.enable_chunked_prefill)
        tokens = dict(plan)

        # Blocks for the running requests. Preempting a request returns the blocks no older request shares:
        # the newest goes first, so every newer sharer is gone by then.
        running = {r.request_id: r for r in self.running}
        demands, older_blocks, shared = [], set(), kv.enable_prefix_caching  # only cached blocks are shared
        for r in self.running:
            table = kv.block_tables[r.request_id]
            held = len(table)
            if shared:
                num_older = len(older_blocks)
                older_blocks.update(table)
                held = len(older_blocks) - num_older  # its blocks that no older request holds
            need = kv.blocks_needed(r.num_computed_tokens + tokens.get(r.request_id, 0)) - len(table)
            demands.append((r.request_id, held, max(need, 0)))
        kept, preempted_ids = allocate_with_preemption(demands, kv.num_free_blocks)
        preempted = [self._preempt(running[request_id]) for request_id in preempted_ids]
        needs = {request_id: need for request_id, _, need in demands}
        scheduled: list[ScheduledRequest] = []
        for request_id in kept:
            request, n = running[request_id], tokens.get(request_id, 0)
            if n == 0:
                continue
            if needs[request_id] and not kv.allocate(request_id, request.num_computed_tokens + n):
                raise RuntimeError(f"allocate_with_preemption scheduled request {request_id!r}, but the KV pool "
                                   "has too few free blocks for it: it must preempt the newest requests until it fits")
            scheduled.append(ScheduledRequest(request, request.num_computed_tokens, n))
        if preempted:
            return SchedulerOutput(scheduled, preempted)

        for request, prefix in candidates:
            n = tokens.get(request.request_id)
            if n is None:
                break
            # An allocation above may have evicted part of the prefix looked up before it: then wait a step.
            if kv.lookup_prefix(request.all_token_ids) != prefix:
                break
            num_cached = len(prefix) * kv.block_size
            if not kv.allocate(request.request_id, num_cached + n, prefix):
                break
            self.waiting.remove(request)
            if request.num_preemptions == 0:
                request.num_cached_tokens = num_cached
            request.num_computed_tokens = num_cached
            self.num_prefix_hit_tokens += num_cached
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            scheduled.append(ScheduledRequest(request, num_cached, n))
        return SchedulerOutput(scheduled, preempted)

    def _admission_candidates(self) -> list[tuple[Request, list[int]]]:
        """The head of the waiting queue that this step's budget and ``max_num_seqs`` can reach, each with its
        cached prefix blocks (its prefix-cache hit counts as computed)."""
        if not self.waiting or len(self.running) >= self.max_num_seqs:
            return []
        budget = self.max_num_batched_tokens - sum(r.num_tokens - r.num_computed_tokens for r in self.running)
        candidates = []
        for request in itertools.islice(self.waiting, self.max_num_seqs - len(self.running)):
            if budget <= 0:
                break
            prefix = self.kv.lookup_prefix(request.all_token_ids)
            candidates.append((request, prefix))
            budget -= request.num_tokens - len(prefix) * self.kv.block_size
        return candidates

    def _preempt(self, request: Request) -> Request:
        """Free the running request's blocks and put it back at the head of the waiting queue, to recompute."""
        self.running.remove(request)
        self.kv.free(request.request_id)
        request.status, request.num_computed_tokens = RequestStatus.WAITING, 0
        request.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(request)
        return request

    def update(self, output: SchedulerOutput, sampled_tokens: Sequence[int]) -> list[Request]:
        """Apply a finished step: ``sampled_tokens`` holds one token per scheduled request that
        :attr:`~ScheduledRequest.samples`, in order. Returns the requests that got a token."""
        tokens = iter(sampled_tokens)
        updated = []
        for s in output.scheduled:
            request = s.request
            request.num_computed_tokens = s.end
            self.kv.cache_full_blocks(request.request_id, request.all_token_ids, s.end)
            if not s.samples:
                continue
            request.append_output(next(tokens))
            updated.append(request)
            params = request.sampling_params
            reason = check_stop(request.output_token_ids, len(request.prompt_token_ids), params.max_tokens,
                                params.stop_token_ids, self.eos_token_ids, params.ignore_eos, self.max_model_len)
            if reason is not None:
                self.running.remove(request)
                self._finish(request, reason)
        return updated

    def _finish(self, request: Request, reason: str) -> None:
        self.kv.free(request.request_id)
        request.status, request.finish_reason = RequestStatus.FINISHED, reason
