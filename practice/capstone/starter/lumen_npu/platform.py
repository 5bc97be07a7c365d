"""LumenPlatform: what the engine asks the Lumen plugin, answered with attributes and qualified names."""
from __future__ import annotations

from mini_platform.platforms import Platform, PlatformEnum


class LumenPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "lumen"
    # Lumen computes on the CPU underneath, so its tensors are CPU tensors. A real device would register
    # its own type under PrivateUse1 (torch.utils.rename_privateuse1_backend("lumen")) and use that.
    device_type = "cpu"
    # TODO(stage 264): device_type "lumen", with "from . import device" at the top of this module (it makes
    #                  torch.device("lumen") valid); graph wrapper lumen_npu.graph.LumenGraphWrapper and communicator
    #                  lumen_npu.communicator.LumenCommunicator.
    dist_backend = "gloo"
    # TODO(stage 261): the dispatch key an out-of-tree device registers under, the visible-devices
    # variable (LUMEN_VISIBLE_DEVICES), the Ray resource name (LUMEN), the kernel backend ("lumen") and
    # the block sizes Lumen's attention kernel accepts (32, 64, 128).

    # TODO(stage 261): get_attn_backend_cls -> "lumen_npu.attention.LumenAttention";
    #                  get_static_graph_wrapper_cls -> the CPU graph wrapper of mini_platform.compilation.

    # TODO(stage 261): get_device_communicator_cls -> the communicator whose collectives run over
    #                  dist_backend on Lumen's (host-memory) tensors: mini_platform.distributed.communicator.

    # TODO(stage 261): device_module(), so that current_platform.<name> forwards to lumen_npu.device
    #                  (the Lumen runtime), not to torch.cpu.
