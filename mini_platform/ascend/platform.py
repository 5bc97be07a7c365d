"""NPUPlatform: what the Ascend plugin takes over from the engine core.

- device type ``npu`` under the ``PrivateUse1`` dispatch key (torch_npu registers its kernels there);
- HCCL collectives, ``ASCEND_RT_VISIBLE_DEVICES``, the Ray resource ``NPU``;
- the ``npu`` kernel backend (torch_npu ops called as vllm-ascend calls them);
- block sizes the ATB paged-attention kernel accepts (multiples of 16, at most 128);
- ACL graphs (``torch.npu.NPUGraph``) for decode, with per-replay attention updates (``acl_graph``).

Importing this module does not import torch_npu; forwarding (``current_platform.synchronize()``)
imports it first, since ``torch.npu`` exists only after ``import torch_npu``.
"""
from __future__ import annotations

import importlib
from typing import Any, MutableMapping

from ..hardware import reconcile_visible_devices
from ..platforms.interface import Platform, PlatformEnum


class NPUPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "npu"
    device_type = "npu"
    dispatch_key = "PrivateUse1"
    dist_backend = "hccl"
    device_control_env_var = "ASCEND_RT_VISIBLE_DEVICES"
    ray_device_key = "NPU"
    kernel_backend = "npu"
    supported_block_sizes = (16, 32, 48, 64, 80, 96, 112, 128)

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        return "mini_platform.ascend.acl_graph.ACLGraphWrapper"

    @classmethod
    def prepare_process_env(cls, env: MutableMapping[str, str]) -> None:
        # CUDA-minded libraries read CUDA_VISIBLE_DEVICES, CANN reads ASCEND_RT_VISIBLE_DEVICES.
        reconcile_visible_devices(env)

    @classmethod
    def device_module(cls) -> Any:
        importlib.import_module("torch_npu")  # registers torch.npu
        return super().device_module()
