"""The model runner: turn one scheduled step into tensors, run the model over the paged KV cache,
and return the logits of the positions that produce a token.

All requests of a step are packed along one token axis (no padding): request ``b`` owns rows
``query_start_loc[b]:query_start_loc[b+1]``, whatever mix of prompt chunks and decodes they are.
"""
from __future__ import annotations

import itertools

import torch

from . import ops, platforms
from .kv_cache import KVCacheManager
from .model import CausalLM
from .model.paged_attention import AttentionMetadata, allocate_kv_caches
from .scheduler import SchedulerOutput
from .utils import resolve_obj_by_qualname


class ModelRunner:
    """Runs the model over a paged KV cache. ``backend`` (None = the current one) serves every kernel of
    the forward, attention and the rest alike."""

    def __init__(self, model: CausalLM, num_blocks: int, block_size: int, backend: str | None = None) -> None:
        self.model, self.device, self.backend = model, model.device, backend
        c = model.config
        self.kv_caches = allocate_kv_caches(c.num_hidden_layers, num_blocks, block_size, c.num_key_value_heads,
                                            c.head_dim, model.dtype, self.device)
        attention_cls = resolve_obj_by_qualname(platforms.current_platform.get_attn_backend_cls())
        self.attention = attention_cls(self.kv_caches, backend=backend)

    def prepare(self, batch: SchedulerOutput, kv: KVCacheManager) -> tuple[torch.Tensor, torch.Tensor, AttentionMetadata]:
        """``(input_ids, positions, metadata)`` for the step."""
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

        def tensor(values: list, dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=self.device)

        metadata = AttentionMetadata(
            slot_mapping=tensor(slots, torch.int32), block_tables=tensor(padded, torch.int32),
            query_start_loc=tensor(query_start, torch.int32), seq_lens=tensor(seq_lens, torch.int32),
            max_query_len=max(s.num_new_tokens for s in batch.scheduled))
        return tensor(input_ids, torch.long), tensor(positions, torch.long), metadata

    @torch.inference_mode()
    def execute(self, batch: SchedulerOutput, kv: KVCacheManager) -> torch.Tensor:
        """Run the step; returns fp32 logits ``[R, V]``, one row per scheduled request that samples."""
        input_ids, positions, metadata = self.prepare(batch, kv)
        self.attention.metadata = metadata
        # Resolved once per step: the forward's kernel calls then find it on the use_backend stack.
        with ops.use_backend(self.backend or ops.current_backend()):
            hidden = self.model(input_ids, positions, self.attention)
        ends = itertools.accumulate(s.num_new_tokens for s in batch.scheduled)
        last_rows = [end - 1 for end, s in zip(ends, batch.scheduled) if s.samples]
        return self.model.compute_logits(hidden[torch.tensor(last_rows, dtype=torch.long, device=self.device)])
