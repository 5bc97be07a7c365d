"""Exercise 245: update the attention tasks of an ACL graph before each replay runs. Keep the names."""
from __future__ import annotations


def update_attention_tasks(tasks: list, seq_lens: list[int]) -> None:
    # TODO 1: refuse more requests than the captured rows, before touching any task
    # TODO 2: for every task: begin_update, set seq_lens (padded with 0 to num_rows), end_update, record the event
    raise NotImplementedError("update_attention_tasks")
