"""Tests of exercise 225: pack one scheduled step into model-runner tensors."""
import random

import pytest
import torch

from submission import prepare_inputs

DTYPES = {"input_ids": torch.int64, "positions": torch.int64, "slot_mapping": torch.int32,
          "query_start_loc": torch.int32, "seq_lens": torch.int32, "block_tables": torch.int32,
          "logits_indices": torch.int64}


def check(out, want):
    assert set(out) == set(want), sorted(out)
    for key, values in want.items():
        assert out[key].dtype == DTYPES[key], f"{key}: dtype {out[key].dtype}, want {DTYPES[key]}"
        assert out[key].tolist() == values, f"{key}: {out[key].tolist()} != {values}"


def test_example():
    scheduled = [([7, 8, 9, 10, 11], 4, 1, [3, 0]), ([1, 2, 3, 4, 5, 6], 0, 3, [5, 2])]
    check(prepare_inputs(scheduled, 4), {
        "input_ids": [11, 1, 2, 3], "positions": [4, 0, 1, 2], "slot_mapping": [0, 20, 21, 22],
        "query_start_loc": [0, 1, 4], "seq_lens": [5, 3], "block_tables": [[3, 0], [5, 2]], "logits_indices": [0]})


def test_last_chunk_after_a_prefix_hit_samples():
    scheduled = [(list(range(10)), 8, 2, [6, 1, 4]), ([5], 0, 1, [2])]
    check(prepare_inputs(scheduled, 4), {
        "input_ids": [8, 9, 5], "positions": [8, 9, 0], "slot_mapping": [16, 17, 8],
        "query_start_loc": [0, 2, 3], "seq_lens": [10, 1], "block_tables": [[6, 1, 4], [2, 0, 0]],
        "logits_indices": [1, 2]})


def test_empty_step():
    out = prepare_inputs([], 4)
    check(out, {"input_ids": [], "positions": [], "slot_mapping": [], "query_start_loc": [0], "seq_lens": [],
                "block_tables": [], "logits_indices": []})
    assert tuple(out["block_tables"].shape) == (0, 0)


def test_inputs_are_not_modified():
    scheduled = [([7, 8, 9, 10, 11], 4, 1, [3, 0]), ([1, 2, 3, 4, 5, 6], 0, 3, [5])]
    prepare_inputs(scheduled, 4)
    assert scheduled == [([7, 8, 9, 10, 11], 4, 1, [3, 0]), ([1, 2, 3, 4, 5, 6], 0, 3, [5])]


def reference(scheduled, bs):
    out = {k: [] for k in DTYPES}
    out["query_start_loc"] = [0]
    for ids, start, n, table in scheduled:
        for p in range(start, start + n):
            out["input_ids"].append(ids[p])
            out["positions"].append(p)
            out["slot_mapping"].append(table[p // bs] * bs + p % bs)
        out["query_start_loc"].append(out["query_start_loc"][-1] + n)
        out["seq_lens"].append(start + n)
        if start + n == len(ids):
            out["logits_indices"].append(out["query_start_loc"][-1] - 1)
    width = max(len(t) for *_, t in scheduled)
    out["block_tables"] = [t + [0] * (width - len(t)) for *_, t in scheduled]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_steps_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(30):
        bs = rng.choice([1, 2, 4, 16])
        free = list(range(200))
        rng.shuffle(free)
        scheduled = []
        for _ in range(rng.randint(1, 6)):
            ids = [rng.randrange(1000) for _ in range(rng.randint(1, 40))]
            start = rng.randint(0, len(ids) - 1)
            n = rng.randint(1, len(ids) - start)
            table = [free.pop() for _ in range(-(-(start + n) // bs))]
            scheduled.append((ids, start, n, table))
        check(prepare_inputs(scheduled, bs), reference(scheduled, bs))
