# Mistake: The learner records the event first and then updates, releasing the task before its new lengths are in.
from __future__ import annotations


def update_attention_tasks(tasks: list, seq_lens: list[int]) -> None:
    for task in tasks:
        if len(seq_lens) > task.num_rows:
            raise ValueError(f"{len(seq_lens)} requests do not fit a graph captured for {task.num_rows} rows")
    for task in tasks:
        task.event.record()
        task.seq_lens = list(seq_lens) + [0] * (task.num_rows - len(seq_lens))
