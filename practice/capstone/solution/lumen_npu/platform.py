"""LumenPlatform: what the engine asks the Lumen plugin, answered with attributes and qualified names."""
from __future__ import annotations

import importlib
from types import ModuleType

from mini_platform.platforms import Platform, PlatformEnum

# Importing the runtime's device module makes "lumen" a torch device (torch.device("lumen:0"), torch.lumen)
# before the engine or a worker names it; the runtime itself starts on first use.
from . import device as _runtime  # noqa: F401


class LumenPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "lumen"
    # Lumen is a PyTorch device: its runtime (lumen_npu.device) renames PrivateUse1 to "lumen" (stage 264).
    device_type = "lumen"
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
        # The CPU graph's recorder, accepting Lumen tensors: it records the aten calls above Lumen's kernels.
        return "lumen_npu.graph.LumenGraphWrapper"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        # Lumen memory is host memory: gloo runs on CPU views of it (the CPU communicator underneath).
        return "lumen_npu.communicator.LumenCommunicator"

    @classmethod
    def device_module(cls) -> ModuleType:
        """The Lumen runtime's device module: ``current_platform.<name>`` forwards here, not to torch.cpu."""
        return importlib.import_module("lumen_npu.device")
