# Mistake: Checks that vocab_size (not the padded vocabulary) divides by tp_size, so an odd vocabulary is rejected.
from __future__ import annotations


def vocab_range(vocab_size: int, tp_size: int, tp_rank: int, padding: int = 64) -> tuple[int, int, int]:
    if tp_size < 1 or not 0 <= tp_rank < tp_size:
        raise ValueError(f"need tp_size >= 1 and 0 <= tp_rank < tp_size, got {tp_size}, {tp_rank}")
    if tp_size == 1:
        return 0, vocab_size, vocab_size
    padded = -(-vocab_size // padding) * padding
    if vocab_size % tp_size:
        raise ValueError(f"the padded vocabulary ({padded}) is not divisible by tp_size={tp_size}")
    rows = padded // tp_size
    start = tp_rank * rows
    return start, rows, max(0, min(rows, vocab_size - start))


def local_lookup(input_ids: list[int], shard: list[list[float]], start: int) -> list[list[float]]:
    dim = len(shard[0]) if shard else 0
    return [list(shard[i - start]) if start <= i < start + len(shard) else [0.0] * dim for i in input_ids]


def parallel_embedding(input_ids: list[int], table: list[list[float]], tp_size: int,
                       padding: int = 64) -> list[list[float]]:
    vocab_size, dim = len(table), len(table[0])
    bad = [i for i in input_ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"token ids {bad} are outside the vocabulary [0, {vocab_size})")
    out = [[0.0] * dim for _ in input_ids]
    for rank in range(tp_size):
        start, rows, real = vocab_range(vocab_size, tp_size, rank, padding)
        shard = [list(row) for row in table[start:start + real]] + [[0.0] * dim for _ in range(rows - real)]
        for row, part in zip(out, local_lookup(input_ids, shard, start)):   # the all-reduce: a sum
            for d in range(dim):
                row[d] += part[d]
    return out
