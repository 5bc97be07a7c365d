"""The model runner: turn one scheduled step into tensors, run the model over the paged KV cache,
and return the logits of the positions that produce a token.

All requests of a step are packed along one token axis (no padding): request ``b`` owns rows
``query_start_loc[b]:query_start_loc[b+1]``, whatever mix of prompt chunks and decodes they are.
The scheduler's output is first flattened into a :class:`StepInput` of plain lists, which is what a
tensor-parallel executor sends to every worker process.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from . import ops, platforms
from .kv_cache import KVCacheManager
from .model import CausalLM
from .model.paged_attention import AttentionMetadata, allocate_kv_caches
from .scheduler import SchedulerOutput
from .utils import resolve_obj_by_qualname


@dataclass
class StepInput:
    """One step's scheduler output as plain lists (picklable): the tokens to run, where their K/V go, which
    blocks each request reads, and which rows produce a token. See ``AttentionMetadata`` for the fields."""
    input_ids: list[int]
    positions: list[int]
    slot_mapping: list[int]
    block_tables: list[list[int]]  # padded to one width
    query_start_loc: list[int]
    seq_lens: list[int]
    max_query_len: int
    sample_rows: list[int]         # the last row of each request that samples


def step_input(batch: SchedulerOutput, kv: KVCacheManager) -> StepInput:
    input_ids, positions, slots, tables, query_start, seq_lens = [], [], [], [], [0], []
    for s in batch.scheduled:
        rid = s.request.request_id
        input_ids += s.request.all_token_ids[s.start:s.end]
        positions += range(s.start, s.end)
        slots += kv.slot_mapping(rid, s.start, s.end)
        tables.append(kv.block_tables[rid])
        query_start.append(query_start[-1] + s.num_new_tokens)
        seq_lens.append(s.end)
    width = max(len(t) for t in tables)
    padded = [t + [0] * (width - len(t)) for t in tables]  # entries past seq_len are never read
    sample_rows = [end - 1 for end, s in zip(query_start[1:], batch.scheduled) if s.samples]
    return StepInput(input_ids, positions, slots, padded, query_start, seq_lens,
                     max(s.num_new_tokens for s in batch.scheduled), sample_rows)


class ModelRunner:
    """Runs the model over a paged KV cache. ``backend`` (None = the current one) serves every kernel of
    the forward, attention and the rest alike."""

    def __init__(self, model: CausalLM, num_blocks: int, block_size: int, backend: str | None = None) -> None:
        self.model, self.device, self.backend = model, model.device, backend
        c = model.config
        self.kv_caches = allocate_kv_caches(c.num_hidden_layers, num_blocks, block_size, model.num_kv_heads,
                                            c.head_dim, model.dtype, self.device)
        attention_cls = resolve_obj_by_qualname(platforms.current_platform.get_attn_backend_cls())
        self.attention = attention_cls(self.kv_caches, backend=backend)

    def prepare(self, step: StepInput) -> tuple[torch.Tensor, torch.Tensor, AttentionMetadata]:
        """``(input_ids, positions, metadata)`` for the step, on the model's device."""
        def tensor(values: list, dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=self.device)

        metadata = AttentionMetadata(
            slot_mapping=tensor(step.slot_mapping, torch.int32), block_tables=tensor(step.block_tables, torch.int32),
            query_start_loc=tensor(step.query_start_loc, torch.int32), seq_lens=tensor(step.seq_lens, torch.int32),
            max_query_len=step.max_query_len)
        return tensor(step.input_ids, torch.long), tensor(step.positions, torch.long), metadata

    def execute(self, batch: SchedulerOutput, kv: KVCacheManager) -> torch.Tensor:
        """Run the step; returns fp32 logits ``[R, V]``, one row per scheduled request that samples."""
        return self.execute_step(step_input(batch, kv))

    @torch.inference_mode()
    def execute_step(self, step: StepInput) -> torch.Tensor:
        input_ids, positions, metadata = self.prepare(step)
        self.attention.metadata = metadata
        with ops.use_backend(self.backend) if self.backend else contextlib.nullcontext():
            hidden = self.model(input_ids, positions, self.attention)
        return self.model.compute_logits(hidden[torch.tensor(step.sample_rows, dtype=torch.long, device=self.device)])
