"""Exercise 252: the send/receive counts and send order of an expert-parallel all-to-all. Keep the names."""
from __future__ import annotations


def dispatch_plan(topk_ids: list[list[list[int]]], expert_owner: list[int]) -> dict:
    """{"send": N x N, "recv": N x N, "order": per rank, flat pair indices in sending order}."""
    # TODO: validate expert ids and owners
    # TODO: per rank, the destination of each (token, choice) pair, counted per destination
    # TODO: recv is the transpose of send; order sorts the pairs by destination, stably
    raise NotImplementedError("dispatch_plan")
