"""LumenPlatform: what the engine asks the Lumen plugin, answered with attributes and qualified names."""
from __future__ import annotations

import importlib
from types import ModuleType

from mini_platform.platforms import Platform, PlatformEnum


class LumenPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "lumen"
    # Lumen computes on the CPU underneath, so its tensors are CPU tensors. A real device would register
    # its own type under PrivateUse1 (torch.utils.rename_privateuse1_backend("lumen")) and use that.
    device_type = "cpu"
    dispatch_key = "PrivateUse1"
    dist_backend = "gloo"
    device_control_env_var = "LUMEN_VISIBLE_DEVICES"
    ray_device_key = "LUMEN"
    kernel_backend = "lumen"
    # Lumen's attention kernel reads whole 32-token tiles.
    supported_block_sizes = (32, 64, 128)

    @classmethod
    def get_attn_backend_cls(cls) -> str:
        return "lumen_npu.attention.LumenAttention"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        # The Lumen kernels are plain torch, so the CPU graph can record and replay them.
        return "mini_platform.compilation.cpu_graph.CPUGraphWrapper"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        # Lumen tensors live in host memory, so its collectives are gloo's: the CPU communicator serves it.
        return "mini_platform.distributed.communicator.CpuCommunicator"

    @classmethod
    def device_module(cls) -> ModuleType:
        """The Lumen runtime's device module: ``current_platform.<name>`` forwards here, not to torch.cpu."""
        return importlib.import_module("lumen_npu.device")
