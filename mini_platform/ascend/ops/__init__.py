"""The npu kernel backend: torch_npu ops called with the signatures vllm-ascend uses."""
from ..platform import NPUPlatform

# Block sizes these kernels serve (ATB paged attention: multiples of 16, at most 128). The engine checks
# them whenever this backend runs, whether the platform chose it or the user did (backend="npu").
SUPPORTED_BLOCK_SIZES = NPUPlatform.supported_block_sizes

# The platform these kernels belong to: its graph wrapper (ACL graph) captures them.
PLATFORM = "mini_platform.ascend.platform.NPUPlatform"
