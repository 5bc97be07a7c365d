"""The NVIDIA platform: Triton kernels, NCCL collectives."""
from __future__ import annotations

from .interface import Platform, PlatformEnum


class CudaPlatform(Platform):
    _enum = PlatformEnum.CUDA
    device_name = "cuda"
    device_type = "cuda"
    dispatch_key = "CUDA"
    dist_backend = "nccl"
    device_control_env_var = "CUDA_VISIBLE_DEVICES"
    ray_device_key = "GPU"
    kernel_backend = "triton"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        return "mini_platform.compilation.cuda_graph.CUDAGraphWrapper"

    @classmethod
    def get_device_capability(cls, device_id: int = 0) -> tuple[int, int]:
        major, minor = cls.device_module().get_device_capability(device_id)
        return major, minor
