# Mistake: Checks only the upper bound of expert ids, so -1 silently picks the last expert.
from __future__ import annotations


def dispatch_plan(topk_ids: list[list[list[int]]], expert_owner: list[int]) -> dict:
    n = len(topk_ids)
    if any(not 0 <= owner < n for owner in expert_owner):
        raise ValueError(f"expert_owner {expert_owner} names a rank outside [0, {n})")
    send, order = [], []
    for r, rows in enumerate(topk_ids):
        flat = [e for row in rows for e in row]
        for e in flat:
            if e >= len(expert_owner):
                raise ValueError(f"rank {r}: expert id {e} is outside [0, {len(expert_owner)})")
        dest = [expert_owner[e] for e in flat]
        send.append([dest.count(j) for j in range(n)])
        order.append(sorted(range(len(flat)), key=lambda p: dest[p]))   # sorted() is stable
    recv = [[send[i][j] for i in range(n)] for j in range(n)]
    return {"send": send, "recv": recv, "order": order}
