"""LumenGraphWrapper: decode graphs on Lumen, recorded and replayed by the CPU graph of chapter 7.

The CPU graph records aten calls in a ``TorchDispatchMode``, above the device's kernels, so it records
Lumen ops as well as CPU ops; replay re-issues them on the same Lumen tensors, and each reaches Lumen's
kernels (or the fallback) again. Only the device check differs from ``CPUGraphWrapper``.
"""
from __future__ import annotations

from typing import Callable

import torch

from mini_platform.compilation.cpu_graph import CPUGraphWrapper


class LumenGraphWrapper(CPUGraphWrapper):
    def __init__(self, runnable: Callable[[int], torch.Tensor], device: str | torch.device) -> None:
        if torch.device(device).type != "lumen":
            raise ValueError(f"the Lumen graph records operations on Lumen tensors; the model is on {device}")
        self.runnable = runnable
        self.entries = {}
