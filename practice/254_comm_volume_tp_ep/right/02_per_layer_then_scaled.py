# Correct: computes one layer's bytes per scheme from a table of functions, then multiplies by the layers; ints where exact.
from __future__ import annotations

PER_LAYER = {
    "tp": lambda h, k: {"MLP / experts all-reduce": 2 * h},
    "ep-alltoall": lambda h, k: {"all-to-all out + back": k * (2 * h + 4), "slice all-gather": h},
    "ep-allgather": lambda h, k: {"all-gather + reduce-scatter": 2 * h + 8 * k, "slice all-gather": h},
}


def decode_comm_bytes(config: dict, n: int, scheme: str, elem_bytes: int = 2) -> dict:
    layer = PER_LAYER.get(scheme)
    if layer is None:
        raise ValueError(f"unknown scheme {scheme!r}")
    if n <= 0:
        raise ValueError(f"n={n}: need a positive number of ranks")
    if scheme != "tp" and not (config.get("num_local_experts") or config.get("num_experts")):
        raise ValueError("expert parallelism needs num_local_experts or num_experts")
    share = (n - 1) / n
    h = config["hidden_size"] * elem_bytes
    layers = config["num_hidden_layers"]
    out = {"embedding all-reduce": share * 2 * h,
           "attention all-reduce": share * 2 * h * layers,
           "logits all-gather (fp32)": share * 4 * config["vocab_size"]}
    for name, value in layer(h, config.get("num_experts_per_tok", 0)).items():
        out[name] = share * value * layers
    return out
