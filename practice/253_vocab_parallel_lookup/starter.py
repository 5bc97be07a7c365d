"""Exercise 253: a vocabulary-parallel embedding lookup. Keep the names."""
from __future__ import annotations


def vocab_range(vocab_size: int, tp_size: int, tp_rank: int, padding: int = 64) -> tuple[int, int, int]:
    """(start, rows, real_rows) of this rank's slice of the padded vocabulary."""
    # TODO: validate; one rank: no padding; else pad to a multiple of `padding`, split evenly
    raise NotImplementedError("vocab_range")


def local_lookup(input_ids: list[int], shard: list[list[float]], start: int) -> list[list[float]]:
    """shard[id - start] for ids this rank holds, a zero row for the others."""
    # TODO
    raise NotImplementedError("local_lookup")


def parallel_embedding(input_ids: list[int], table: list[list[float]], tp_size: int,
                       padding: int = 64) -> list[list[float]]:
    """Every rank's masked lookup, summed (the all-reduce); equals table[id] row by row."""
    # TODO: validate the ids; build each rank's shard (zero padding rows), look up, add
    raise NotImplementedError("parallel_embedding")
