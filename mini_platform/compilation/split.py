"""Splitting the compiled model's FX graph at the splitting ops (vLLM's ``split_graph``, ``vllm/compilation/
backends.py``; read at commit 009eec3b).

Each splitting op (attention) becomes a sub-graph of its own, run eagerly; the nodes between two of them form one
piece, captured as a graph per size. A model of ``L`` attention layers with work before the first attention and
after the last one (embedding; o_proj, MLP and the final norm) has ``L + 1`` pieces and ``L`` attention sub-graphs,
numbered in order: piece 0, attention 1, piece 2, ... (``piece_ids``; exercise 247, called through this module so a
learner's version stands in).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

import torch
from torch import fx
from torch.fx.passes.split_module import split_module


def piece_ids(node_ops: list[str], splitting_ops: Collection[str]) -> list[int]:
    """The sub-graph of each node, in graph order (``node_ops`` has each node's op name; placeholders and the
    output are left out). A node whose name is in ``splitting_ops`` (exact match) gets a new id of its own; the nodes
    after it get the next id, until the next splitting op. Ids start at 0 and never decrease; an id with no node
    (before a leading splitting op, between two adjacent ones) is skipped."""
    ids, current = [], 0
    for op in node_ops:
        if op in splitting_ops:
            ids.append(current + 1)
            current += 2
        else:
            ids.append(current)
    return ids


def node_op_name(node: fx.Node) -> str:
    """``namespace::name`` for a call of a torch op (``mini_platform::unified_attention_with_output``), else the
    called function's name or the node's kind."""
    target = node.target
    if node.op == "call_function" and isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return target._qualified_op_name if isinstance(target, torch._ops.OpOverloadPacket) else target.name()
    if node.op == "call_function":
        return getattr(target, "__name__", str(target))
    return node.op


@dataclass
class SplitItem:
    """One sub-graph of the split: its attribute name on the split module (``submod_<id>``) and whether it is a
    splitting op (run eagerly) or a piece (captured)."""
    name: str
    graph_id: int
    is_splitting_op: bool
    module: fx.GraphModule


def split_graph(gm: fx.GraphModule, splitting_ops: Collection[str]) -> tuple[fx.GraphModule, list[SplitItem]]:
    """``gm`` split at ``splitting_ops``: the split module (it calls ``submod_<id>`` in order) and its sub-graphs."""
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    ids = piece_ids([node_op_name(n) for n in nodes], splitting_ops)
    if len(ids) != len(nodes):
        raise ValueError(f"piece_ids gave {len(ids)} ids for {len(nodes)} nodes")
    of_node = dict(zip(nodes, ids))
    splitting = {i for n, i in of_node.items() if node_op_name(n) in splitting_ops}
    split_gm = split_module(gm, None, lambda node: of_node[node], keep_original_order=True)
    items = [SplitItem(name, int(name.rpartition("_")[2]), int(name.rpartition("_")[2]) in splitting, module)
             for name, module in split_gm.named_children()]
    return split_gm, sorted(items, key=lambda item: item.graph_id)
