"""The CPU platform: plain torch kernels, gloo collectives. The fallback and the specification."""
from __future__ import annotations

from typing import Any

from .interface import Platform, PlatformEnum


class CpuPlatform(Platform):
    _enum = PlatformEnum.CPU
    device_name = "cpu"
    device_type = "cpu"
    dispatch_key = "CPU"
    dist_backend = "gloo"
    kernel_backend = "cpu"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        return "mini_platform.distributed.communicator.CpuCommunicator"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        return "mini_platform.compilation.cpu_graph.CPUGraphWrapper"

    @classmethod
    def check_and_update_config(cls, config: Any) -> None:
        # Graphs only when asked for (enforce_eager=False): a replay saves the model's Python at each decode step
        # (compilation/cpu_graph.py), but capturing every size costs start-up time, which short runs would not repay.
        if getattr(config, "enforce_eager", False) is None:
            config.enforce_eager = True
        super().check_and_update_config(config)
