"""Tests of exercise 247: the sub-graph id of each node, as vLLM's split_graph numbers them."""
import random

from submission import piece_ids

ATTN = "mini_platform::unified_attention_with_output"
MLA = "mini_platform::unified_mla_attention_with_output"


def layer_ops(num_layers: int, attention: str = ATTN) -> list[str]:
    """The op names of a traced decoder of ``num_layers`` layers (embedding ... final norm)."""
    ops = ["embedding"]
    for _ in range(num_layers):
        ops += ["rms_norm", "linear", "rotary", "new_empty", attention, "linear", "add", "rms_norm", "linear",
                "silu", "mul", "linear", "add"]
    return ops + ["rms_norm"]


def test_example():
    ops = ["embedding", "rms_norm", "linear", ATTN, "linear", "silu", "linear", ATTN, "linear", "rms_norm"]
    assert piece_ids(ops, {ATTN}) == [0, 0, 0, 1, 2, 2, 2, 3, 4, 4]
    assert piece_ids([ATTN, "x"], [ATTN]) == [1, 2]
    assert piece_ids(["x", ATTN, ATTN, "y"], [ATTN]) == [0, 1, 3, 4]
    assert piece_ids(["x", ATTN + "_v2"], [ATTN]) == [0, 0]


def test_no_splitting_op_is_one_piece():
    assert piece_ids(["a", "b", "c"], [ATTN]) == [0, 0, 0]
    assert piece_ids([], [ATTN]) == []
    assert piece_ids(["a", ATTN], []) == [0, 0]


def test_a_trailing_splitting_op_gets_its_own_id():
    assert piece_ids(["a", ATTN], [ATTN]) == [0, 1]
    assert piece_ids([ATTN], (ATTN,)) == [1]


def test_adjacent_splitting_ops_skip_the_empty_piece():
    assert piece_ids([ATTN, ATTN], [ATTN]) == [1, 3]
    assert piece_ids(["a", ATTN, ATTN, ATTN, "b", "c"], {ATTN}) == [0, 1, 3, 5, 6, 6]


def test_names_must_be_equal():
    assert piece_ids(["unified_attention_with_output", "mini_platform::unified_attention", ATTN.upper()], [ATTN]) \
        == [0, 0, 0]
    assert piece_ids(["x", MLA, "y", ATTN, "z"], [ATTN, MLA]) == [0, 1, 2, 3, 4]
    assert piece_ids(["x", MLA, "y"], [ATTN]) == [0, 0, 0]


def test_every_collection_of_splitting_ops():
    ops = ["a", ATTN, "b"]
    for splitting in ([ATTN], (ATTN,), {ATTN}, frozenset({ATTN, MLA}), {ATTN: True}):
        repro = {"node_ops": ops, "splitting_ops": splitting}  # noqa: F841
        assert piece_ids(ops, splitting) == [0, 1, 2]


def test_layer_i_runs_in_pieces_2i_and_2i_plus_2():
    for num_layers in (1, 2, 5, 32):
        ops = layer_ops(num_layers)
        repro = {"node_ops": ops, "splitting_ops": [ATTN]}  # noqa: F841
        ids = piece_ids(ops, [ATTN])
        attention = [i for op, i in zip(ops, ids) if op == ATTN]
        assert attention == [2 * i + 1 for i in range(num_layers)]
        pieces = sorted(set(ids) - set(attention))
        assert pieces == [2 * i for i in range(num_layers + 1)]      # layers + 1 pieces: the stream budget's L + 1
        assert ids[-1] == 2 * num_layers and ids[0] == 0


def test_inputs_are_not_modified():
    ops, splitting = ["a", ATTN, "b"], [ATTN]
    piece_ids(ops, splitting)
    assert ops == ["a", ATTN, "b"] and splitting == [ATTN]


def test_random_graphs():
    for seed in range(8):
        rng = random.Random(seed)
        ops = [rng.choice(["linear", "add", ATTN, MLA, "silu", ATTN + "x"]) for _ in range(rng.randint(0, 40))]
        splitting = rng.choice([[ATTN], [ATTN, MLA], [MLA]])
        repro = {"node_ops": ops, "splitting_ops": splitting}  # noqa: F841
        expected, current = [], 0
        for op in ops:
            if op in splitting:
                expected.append(current + 1)
                current += 2
            else:
                expected.append(current)
        assert piece_ids(ops, splitting) == expected, f"seed={seed}"
