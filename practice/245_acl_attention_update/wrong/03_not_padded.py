# Mistake: The learner passes the real lengths only, forgetting that the captured graph has num_rows rows.
from __future__ import annotations


def update_attention_tasks(tasks: list, seq_lens: list[int]) -> None:
    for task in tasks:
        if len(seq_lens) > task.num_rows:
            raise ValueError(f"{len(seq_lens)} requests do not fit a graph captured for {task.num_rows} rows")
    for task in tasks:
        task.begin_update()
        task.seq_lens = list(seq_lens)
        task.end_update()
        task.event.record()
