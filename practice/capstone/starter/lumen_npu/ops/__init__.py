"""The ``lumen`` kernel backend: one module per kernel family, as ``mini_platform.ops.KERNEL_MODULES`` names them.

It serves dense models (no MoE module: asking for a MoE kernel raises KernelUnavailableError).
"""
# Block sizes Lumen's attention kernel accepts (the engine checks them before it loads anything).
SUPPORTED_BLOCK_SIZES = None  # TODO(stage 262): the same sizes as LumenPlatform
# The platform these kernels belong to (its graph wrapper is used when they run).
PLATFORM = "lumen_npu.platform.LumenPlatform"
