# Mistake: Sends the int32 expert id both ways in the all-to-all (2 h + 8), though the combine needs no id coming back.
from __future__ import annotations

SCHEMES = ("tp", "ep-alltoall", "ep-allgather")


def decode_comm_bytes(config: dict, n: int, scheme: str, elem_bytes: int = 2) -> dict[str, float]:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {SCHEMES}")
    if n < 1:
        raise ValueError(f"need at least one rank, got n={n}")
    experts = config.get("num_local_experts") or config.get("num_experts") or 0
    if scheme != "tp" and not experts:
        raise ValueError(f"scheme {scheme!r} needs an MoE config (num_local_experts or num_experts)")
    layers, vocab = config["num_hidden_layers"], config["vocab_size"]
    h, ring = config["hidden_size"] * elem_bytes, (n - 1) / n
    out = {"embedding all-reduce": 2 * ring * h, "logits all-gather (fp32)": ring * vocab * 4,
           "attention all-reduce": layers * 2 * ring * h}
    if scheme == "tp":
        out["MLP / experts all-reduce"] = layers * 2 * ring * h
    elif scheme == "ep-alltoall":
        out["all-to-all out + back"] = layers * config["num_experts_per_tok"] * ring * (2 * h + 8)
        out["slice all-gather"] = layers * ring * h
    else:
        out["all-gather + reduce-scatter"] = layers * ring * (2 * h + 8 * config["num_experts_per_tok"])
        out["slice all-gather"] = layers * ring * h
    return out
