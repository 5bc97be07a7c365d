# Mistake: The learner pads the caller's list in place, so the caller's lengths change.
from __future__ import annotations


def update_attention_tasks(tasks: list, seq_lens: list[int]) -> None:
    for task in tasks:
        if len(seq_lens) > task.num_rows:
            raise ValueError(f"{len(seq_lens)} requests do not fit a graph captured for {task.num_rows} rows")
    for task in tasks:
        task.begin_update()
        seq_lens += [0] * (task.num_rows - len(seq_lens))
        task.seq_lens = seq_lens
        task.end_update()
        task.event.record()
