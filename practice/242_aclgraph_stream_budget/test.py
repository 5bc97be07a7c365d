"""Tests of exercise 242: the ACL-graph stream budget."""
import math
import random

import pytest

from submission import limit_capture_sizes, max_graph_sizes

DEFAULT_256 = [1, 2, 4] + list(range(8, 513, 8))   # vLLM's default list for max_num_seqs=256


def test_example_budget():
    assert max_graph_sizes(28) == 62
    assert max_graph_sizes(48, tensor_parallel_size=4) == 11


def test_example_sampling():
    assert limit_capture_sizes([1, 2, 4, 8, 16, 24], 599) == [1, 8, 24]


def test_communication_groups():
    assert max_graph_sizes(48, data_parallel_size=2) == 11
    assert max_graph_sizes(48, tensor_parallel_size=2, data_parallel_size=2) == math.floor(1720 / 49 / 5)
    assert max_graph_sizes(48, tensor_parallel_size=1, data_parallel_size=1) == math.floor(1800 / 49)


def test_fitting_sizes_come_back_unchanged_as_a_new_list():
    sizes = [1, 2, 4, 8]
    out = limit_capture_sizes(sizes, 28)
    assert out == sizes and out is not sizes


def test_exactly_fitting_sizes_are_not_sampled():
    sizes = list(range(1, 63))      # 62 sizes, budget 62
    assert limit_capture_sizes(sizes, 28) == sizes


def test_smallest_and_largest_always_stay():
    out = limit_capture_sizes(DEFAULT_256, 60)            # m = floor(1800 / 61) = 29
    assert len(out) == 29 and out[0] == 1 and out[-1] == 512 and out == sorted(out)


def test_too_many_layers_is_an_error():
    with pytest.raises(ValueError):
        limit_capture_sizes([1, 2, 4], 2000)              # m = 0
    with pytest.raises(ValueError):
        limit_capture_sizes([8], 1800, tensor_parallel_size=2)   # m = floor(1760 / 1801 / 3) = 0
    with pytest.raises(ValueError):
        limit_capture_sizes([], 2000)                     # rule 1 comes first: even no sizes at all "fit" nothing
    assert limit_capture_sizes([], 28) == []              # m = 62 >= 0: nothing to sample


def test_one_graph_keeps_the_largest_size():
    assert limit_capture_sizes([1, 2, 4], 1000) == [4]     # m = 1


def test_ties_follow_python_round_on_the_largest_first_list():
    # n = 4, m = 3: step 1.5, indices 0, round(1.5) = 2, 3 on [8, 4, 2, 1]
    assert limit_capture_sizes([1, 2, 4, 8], 599) == [1, 2, 8]
    # n = 8, m = 5: step 1.75, indices 0, 2, round(3.5) = 4, round(5.25) = 5, 7
    assert limit_capture_sizes([1, 2, 3, 4, 5, 6, 7, 8], 359) == [1, 3, 4, 6, 8]


def reference(sizes, layers, tp, dp):
    g = (tp > 1) + (dp > 1)
    m = math.floor((1800 - 40 * g) / (layers + 1) / (1 + 2 * g))
    if m >= len(sizes):
        return list(sizes)
    if m == 1:
        return [max(sizes)]
    desc = sorted(sizes, reverse=True)
    step = (len(sizes) - 1) / (m - 1)
    idx = [round(i * step) for i in range(m)]
    idx[0], idx[-1] = 0, len(sizes) - 1
    return sorted(desc[i] for i in idx)


@pytest.mark.parametrize("seed", range(6))
def test_random_models(seed):
    rng = random.Random(seed)
    for _ in range(60):
        layers, tp, dp = rng.randint(1, 200), rng.choice([1, 1, 2, 4, 8]), rng.choice([1, 1, 2])
        sizes = sorted(rng.sample(range(1, 1025), rng.randint(1, 90)))
        g = (tp > 1) + (dp > 1)
        m = math.floor((1800 - 40 * g) / (layers + 1) / (1 + 2 * g))
        case = f"seed={seed}: layers={layers}, tensor_parallel_size={tp}, data_parallel_size={dp}"
        assert max_graph_sizes(layers, tp, dp) == m, case
        if m < 1:
            with pytest.raises(ValueError):   # m < 1
                limit_capture_sizes(sizes, layers, tp, dp)
        else:
            assert limit_capture_sizes(list(sizes), layers, tp, dp) == reference(sizes, layers, tp, dp), \
                f"{case}, sizes={sizes}"


def test_one_size_fits_a_budget_of_one():
    assert limit_capture_sizes([8], 1000) == [8]          # m = 1 = n: nothing to sample, no error
