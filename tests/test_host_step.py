"""benchmarks/host_step.py clocks every part of an engine step: each part is seen, none inside another (the clocks
raise if one is), and together they take less than the whole run."""
from __future__ import annotations

import time

from benchmarks import host_step
from mini_platform import LLM, model_runner
from mini_platform.model import make_tiny_checkpoint


def test_every_part_of_a_step_is_clocked_once(monkeypatch, tmp_path):
    monkeypatch.setattr(model_runner, "step_input", model_runner.step_input)   # install_clocks replaces it: restore
    llm = LLM(make_tiny_checkpoint(tmp_path / "tiny", "llama"), max_num_seqs=4, enable_prefix_caching=False)
    totals = dict.fromkeys(host_step.PARTS, 0.0)
    host_step.install_clocks(llm, totals)
    start = time.perf_counter()
    host_step.vs_transformers.ours_generate(llm, [[5, 6, 7], [8, 9]], [3, 4])
    whole = time.perf_counter() - start
    assert all(totals[part] > 0 for part in host_step.PARTS), totals
    assert sum(totals.values()) < whole
