# Correct: validates in another order with its own messages, sums the ranks' outputs with zip(*parts).
from __future__ import annotations


def vocab_range(vocab_size: int, tp_size: int, tp_rank: int, padding: int = 64) -> tuple[int, int, int]:
    if not (isinstance(tp_size, int) and tp_size >= 1):
        raise ValueError(f"bad tp_size {tp_size}")
    if tp_rank not in range(tp_size):
        raise ValueError(f"bad tp_rank {tp_rank} for {tp_size} ranks")
    if tp_size == 1:
        return 0, vocab_size, vocab_size
    padded = (vocab_size + padding - 1) // padding * padding
    rows, left = divmod(padded, tp_size)
    if left:
        raise ValueError(f"{padded} rows do not split over {tp_size} ranks")
    start = tp_rank * rows
    return start, rows, sorted((0, vocab_size - start, rows))[1]


def local_lookup(input_ids, shard, start):
    width = len(shard[0]) if shard else 0
    return [shard[i - start][:] if i in range(start, start + len(shard)) else [0.0] * width for i in input_ids]


def parallel_embedding(input_ids, table, tp_size, padding=64):
    vocab, dim = len(table), len(table[0])
    if any(i < 0 or i >= vocab for i in input_ids):
        raise ValueError("an id is outside the vocabulary")
    parts = []
    for rank in range(tp_size):
        start, rows, real = vocab_range(vocab, tp_size, rank, padding)
        shard = [table[start + j] if j < real else [0.0] * dim for j in range(rows)]
        parts.append(local_lookup(input_ids, shard, start))
    return [[sum(vals) for vals in zip(*rows)] for rows in zip(*parts)]
