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

    @property
    def all_token_ids(self) -> list[int]:
        return self.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)

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


def check_stop(request: Request, eos_token_ids: Sequence[int], max_model_len: int) -> str | None:
    """Why the request must finish after its latest token ("stop" / "length"), or None."""
    params, last = request.sampling_params, request.output_token_ids[-1]
    if last in params.stop_token_ids or (not params.ignore_eos and last in eos_token_ids):
        return "stop"
    if len(request.output_token_ids) >= params.max_tokens or request.num_tokens >= max_model_len:
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
        budget = self.max_num_batched_tokens
        scheduled: list[ScheduledRequest] = []
        preempted: list[Request] = []

        i = 0
        while i < len(self.running) and budget > 0:
            request = self.running[i]
            n = min(request.num_tokens - request.num_computed_tokens, budget)
            if not self._allocate_or_preempt(request, request.num_computed_tokens + n, preempted):
                break  # it preempted itself, the newest left: everyone after it is gone too
            scheduled.append(ScheduledRequest(request, request.num_computed_tokens, n))
            budget -= n
            i += 1

        while not preempted and self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            request = self.waiting[0]
            prefix = self.kv.lookup_prefix(request.all_token_ids)
            num_cached = len(prefix) * self.kv.block_size
            n = request.num_tokens - num_cached
            if n > budget:
                if not self.enable_chunked_prefill:
                    break
                n = budget
            if not self.kv.allocate(request.request_id, num_cached + n, prefix):
                break
            self.waiting.popleft()
            if request.num_preemptions == 0:
                request.num_cached_tokens = num_cached
            request.num_computed_tokens = num_cached
            self.num_prefix_hit_tokens += num_cached
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            scheduled.append(ScheduledRequest(request, num_cached, n))
            budget -= n
        return SchedulerOutput(scheduled, preempted)

    def _allocate_or_preempt(self, request: Request, num_tokens: int, preempted: list[Request]) -> bool:
        """Make room for ``num_tokens`` of ``request``, preempting the newest running requests as needed.
        False when ``request`` itself had to go."""
        while not self.kv.allocate(request.request_id, num_tokens):
            victim = self.running.pop()
            self.kv.free(victim.request_id)
            victim.status, victim.num_computed_tokens = RequestStatus.WAITING, 0
            victim.num_preemptions += 1
            self.num_preemptions += 1
            self.waiting.appendleft(victim)
            preempted.append(victim)
            if victim is request:
                return False
        return True

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
            request.output_token_ids.append(next(tokens))
            updated.append(request)
            reason = check_stop(request, self.eos_token_ids, self.max_model_len)
            if reason is not None:
                self.running.remove(request)
                self._finish(request, reason)
        return updated

    def _finish(self, request: Request, reason: str) -> None:
        self.kv.free(request.request_id)
        request.status, request.finish_reason = RequestStatus.FINISHED, reason
