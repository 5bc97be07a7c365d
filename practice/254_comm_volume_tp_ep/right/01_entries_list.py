# Correct: builds the entries as (name, value) pairs per scheme, checks the experts with `in`, validates n first.
from __future__ import annotations


def decode_comm_bytes(config, n, scheme, elem_bytes=2):
    if n < 1:
        raise ValueError("n must be at least 1")
    if scheme not in ("tp", "ep-alltoall", "ep-allgather"):
        raise ValueError(f"scheme must be tp, ep-alltoall or ep-allgather, not {scheme}")
    if "num_local_experts" in config and config["num_local_experts"]:
        experts = config["num_local_experts"]
    else:
        experts = config.get("num_experts", 0)
    if scheme.startswith("ep") and experts < 1:
        raise ValueError("this config has no experts")
    L, V = config["num_hidden_layers"], config["vocab_size"]
    h = config["hidden_size"] * elem_bytes
    r = 1 - 1 / n
    entries = [("embedding all-reduce", 2 * r * h), ("attention all-reduce", L * 2 * r * h),
               ("logits all-gather (fp32)", r * V * 4)]
    if scheme == "tp":
        entries.append(("MLP / experts all-reduce", L * 2 * r * h))
    else:
        K = config["num_experts_per_tok"]
        if scheme == "ep-alltoall":
            entries.append(("all-to-all out + back", L * K * r * (2 * h + 4)))
        else:
            entries.append(("all-gather + reduce-scatter", L * r * (2 * h + 8 * K)))
        entries.append(("slice all-gather", L * r * h))
    return {name: float(value) for name, value in entries}
