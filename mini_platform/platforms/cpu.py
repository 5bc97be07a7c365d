"""The CPU platform: plain torch kernels, gloo collectives. The fallback and the specification."""
from __future__ import annotations

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
