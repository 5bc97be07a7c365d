"""The Ascend device communicator: HCCL through torch_npu's process-group backend.

The collectives are the base class's ``torch.distributed`` calls; torch_npu registers the ``hccl``
backend when it is imported, and each rank drives one NPU (``npu:<local rank>``), as vllm-ascend's
``NPUCommunicator`` does (v0.11.0 ``vllm_ascend/distributed/communicator.py``; the class here is spelt
like this project's ``CudaCommunicator`` and ``CpuCommunicator``). Not run here: no Ascend hardware
(tests marked ``npu`` run it on one).
"""
from __future__ import annotations

import importlib

import torch
import torch.distributed as dist

from ..distributed.communicator import DeviceCommunicator


class NpuCommunicator(DeviceCommunicator):
    def __init__(self, group: dist.ProcessGroup, device: torch.device) -> None:
        importlib.import_module("torch_npu")  # registers torch.npu and the hccl backend
        super().__init__(group, device)
        torch.npu.set_device(device)
