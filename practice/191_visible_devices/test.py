"""Tests of exercise 191: parsing visible-device lists, reconciling the two variables, logical ids."""
import random
import re

import pytest

from submission import ASCEND_VAR, CUDA_VAR, VisibleDevicesMismatchError, parse_visible, physical_id, reconcile


def test_example():
    assert parse_visible("2, 3,0", total=4) == [2, 3, 0]
    assert parse_visible("1,7,2", total=4) == [1]
    assert parse_visible("0,0,1", total=4) == [0]
    env = {CUDA_VAR: "4,5"}
    reconcile(env)
    assert env[ASCEND_VAR] == "4,5"
    with pytest.raises(VisibleDevicesMismatchError):
        reconcile({CUDA_VAR: "0,1", ASCEND_VAR: "1,0"})
    assert physical_id(1, {ASCEND_VAR: "6,2"}, ASCEND_VAR, total=8) == 2
    assert physical_id(3, {}, CUDA_VAR, total=4) == 3


@pytest.mark.parametrize("value,expected", [
    ("", []), ("   ", []), ("0", [0]), (" 3 ", [3]), ("0,1,2,3", [0, 1, 2, 3]), ("3,2,1,0", [3, 2, 1, 0]),
    ("-1", []), ("1,-1,2", [1]), ("x", []), ("1,,2", [1]), ("1.0", []), ("2,1.5", [2]), ("0,4", [0]),
    ("01", [1]), ("1,2,", [1, 2]), ("\t2\n,1", [2, 1]), ("+1", []), ("0x1", []), ("GPU-1234", []), ("2,2", [2]), ("１", []),
    ("0 1", []), ("2, 0 3,1", [2]),   # a space inside an item makes it invalid ("0 1" is not "01")
])
def test_parse_rule(value, expected):
    assert parse_visible(value, total=4) == expected


def test_mismatch_message_names_both_variables_and_values():
    with pytest.raises(VisibleDevicesMismatchError) as info:
        reconcile({CUDA_VAR: "0,1", ASCEND_VAR: "2,3"})
    message = str(info.value)
    assert all(part in message for part in (CUDA_VAR, ASCEND_VAR, "0,1", "2,3"))
    assert issubclass(VisibleDevicesMismatchError, RuntimeError)


def test_reconcile_copies_unchanged_and_ignores_spaces():
    env = {ASCEND_VAR: "0, 1"}
    reconcile(env)
    assert env == {ASCEND_VAR: "0, 1", CUDA_VAR: "0, 1"}
    env = {ASCEND_VAR: "0, 1", CUDA_VAR: "0,1 "}
    reconcile(env)  # equal once spaces are removed: nothing to do
    assert env == {ASCEND_VAR: "0, 1", CUDA_VAR: "0,1 "}
    env = {ASCEND_VAR: "0,\t1", CUDA_VAR: "0,1\n"}
    reconcile(env)  # tabs and newlines are whitespace too
    assert env == {ASCEND_VAR: "0,\t1", CUDA_VAR: "0,1\n"}
    env = {"OTHER": "1"}
    reconcile(env)
    assert env == {"OTHER": "1"}
    env = {CUDA_VAR: ""}
    reconcile(env)  # an empty value is a value: no devices for anyone
    assert env[ASCEND_VAR] == ""
    for env in ({CUDA_VAR: "", ASCEND_VAR: "0"}, {CUDA_VAR: "1", ASCEND_VAR: " "}):
        with pytest.raises(VisibleDevicesMismatchError):
            reconcile(env)  # an empty value is set too: it differs from "0"


def test_physical_id_errors():
    with pytest.raises(ValueError) as info:
        physical_id(2, {CUDA_VAR: "5,6"}, CUDA_VAR, total=8)
    assert "2" in str(info.value)                          # logical 2, and 2 devices are visible
    with pytest.raises(ValueError) as info:
        physical_id(4, {CUDA_VAR: "5,6,7"}, CUDA_VAR, total=8)
    message = str(info.value)
    assert re.search(r"(?<!\d)4(?!\d)", message) and re.search(r"(?<!\d)3(?!\d)", message)
    with pytest.raises(ValueError):
        physical_id(-1, {}, CUDA_VAR, total=4)
    with pytest.raises(ValueError):
        physical_id(0, {CUDA_VAR: ""}, CUDA_VAR, total=4)
    assert physical_id(0, {CUDA_VAR: "3,9,1"}, CUDA_VAR, total=8) == 3


def _reference(value, total):
    seen = []
    for item in value.split(","):
        item = item.strip()
        if not item or any(c not in "0123456789" for c in item) or int(item) >= total or int(item) in seen:
            return seen
        seen.append(int(item))
    return seen


@pytest.mark.parametrize("seed", range(40))
def test_random_lists(seed):
    rng = random.Random(seed)
    total = rng.randint(1, 16)
    items = [rng.choice([str(rng.randint(0, 20)), f" {rng.randint(0, total - 1)} ", "-1", "a", ""])
             for _ in range(rng.randint(0, 6))]
    value = ",".join(items)
    repro = {"value": value, "total": total}  # noqa: F841 - shown on failure: parse_visible(value, total)
    expected = _reference(value, total)
    assert parse_visible(value, total) == expected
    for logical, physical in enumerate(expected):
        assert physical_id(logical, {CUDA_VAR: value}, CUDA_VAR, total) == physical
    with pytest.raises(ValueError):
        physical_id(len(expected), {CUDA_VAR: value}, CUDA_VAR, total)
