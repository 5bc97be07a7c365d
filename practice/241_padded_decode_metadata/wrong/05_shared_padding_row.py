# Mistake: The learner repeats one zero list for all padding rows, so writing one row changes them all.
from __future__ import annotations

DecodeRequest = tuple[int, int, list[int]]  # (token_id, position, block_table)


def pad_decode_metadata(requests: list[DecodeRequest], padded_size: int, block_size: int,
                        max_blocks: int) -> dict[str, list]:
    num_reqs = len(requests)
    if num_reqs == 0:
        raise ValueError("a decode batch needs at least one request")
    if num_reqs > padded_size:
        raise ValueError(f"{num_reqs} requests do not fit a graph of size {padded_size}")
    pad = padded_size - num_reqs
    out: dict[str, list] = {"input_ids": [], "positions": [], "slot_mapping": [], "seq_lens": [],
                            "block_tables": []}
    for token_id, position, table in requests:
        if len(table) > max_blocks:
            raise ValueError(f"block table {table} is longer than max_blocks={max_blocks}")
        if position // block_size >= len(table):
            raise ValueError(f"position {position} is outside block table {table} (block_size {block_size})")
        out["input_ids"].append(token_id)
        out["positions"].append(position)
        out["slot_mapping"].append(table[position // block_size] * block_size + position % block_size)
        out["seq_lens"].append(position + 1)
        out["block_tables"].append(table + [0] * (max_blocks - len(table)))
    out["input_ids"] += [0] * pad
    out["positions"] += [0] * pad
    out["slot_mapping"] += [-1] * pad
    out["seq_lens"] += [0] * pad
    out["block_tables"] += [[0] * max_blocks] * pad
    out["query_start_loc"] = list(range(num_reqs + 1)) + [num_reqs] * pad
    return out
