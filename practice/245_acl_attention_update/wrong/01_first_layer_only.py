# Mistake: The learner re-issues only the first layer's attention with the new lengths and just releases the others, which keep their captured lengths.
from __future__ import annotations


def update_attention_tasks(tasks: list, seq_lens: list[int]) -> None:
    for task in tasks:
        if len(seq_lens) > task.num_rows:
            raise ValueError(f"{len(seq_lens)} requests do not fit a graph captured for {task.num_rows} rows")
    first = tasks[0]
    first.begin_update()
    first.seq_lens = list(seq_lens) + [0] * (first.num_rows - len(seq_lens))
    first.end_update()
    for task in tasks:
        task.event.record()
