"""Exercise 254: bytes each rank sends per decode token, tensor versus expert parallelism. Keep the names."""
from __future__ import annotations


def decode_comm_bytes(config: dict, n: int, scheme: str, elem_bytes: int = 2) -> dict[str, float]:
    """Bytes one rank sends per decode token, by collective, for scheme in tp / ep-alltoall / ep-allgather."""
    # TODO: validate scheme, n, and that EP schemes get an MoE config
    # TODO: the three entries every scheme has, then the scheme's own entries (see problem.md)
    raise NotImplementedError("decode_comm_bytes")
