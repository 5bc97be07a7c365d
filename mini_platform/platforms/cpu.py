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
    def get_static_graph_wrapper_cls(cls) -> str:
        return "mini_platform.compilation.cpu_graph.CPUGraphWrapper"

    @classmethod
    def check_and_update_config(cls, config: Any) -> None:
        # A CPU gains little from graphs, so they are used only when asked for (enforce_eager=False).
        if getattr(config, "enforce_eager", False) is None:
            config.enforce_eager = True
        super().check_and_update_config(config)
