# Correct: explicit loops, math.ceil for the padding, an if/elif ladder for real_rows, padding rows appended one by one.
from __future__ import annotations

import math


def vocab_range(vocab_size, tp_size, tp_rank, padding=64):
    if tp_size < 1:
        raise ValueError("tp_size must be at least 1")
    if tp_rank < 0 or tp_rank >= tp_size:
        raise ValueError("tp_rank out of range")
    if tp_size == 1:
        return (0, vocab_size, vocab_size)
    padded = math.ceil(vocab_size / padding) * padding
    if padded % tp_size != 0:
        raise ValueError("padded vocabulary does not split evenly")
    rows = padded // tp_size
    start = rows * tp_rank
    if vocab_size <= start:
        real = 0
    elif vocab_size >= start + rows:
        real = rows
    else:
        real = vocab_size - start
    return (start, rows, real)


def local_lookup(input_ids, shard, start):
    dim = len(shard[0]) if shard else 0
    out = []
    for token in input_ids:
        local = token - start
        if 0 <= local < len(shard):
            out.append([float(v) for v in shard[local]])
        else:
            out.append([0.0] * dim)
    return out


def parallel_embedding(input_ids, table, tp_size, padding=64):
    for token in input_ids:
        if not 0 <= token < len(table):
            raise ValueError(f"token id {token} is not in the vocabulary of {len(table)}")
    dim = len(table[0])
    total = [[0.0] * dim for _ in input_ids]
    for rank in range(tp_size):
        start, rows, real = vocab_range(len(table), tp_size, rank, padding)
        shard = [list(row) for row in table[start:start + real]]
        while len(shard) < rows:
            shard.append([0.0] * dim)
        part = local_lookup(input_ids, shard, start)
        total = [[a + b for a, b in zip(x, y)] for x, y in zip(total, part)]
    return total
