"""The Ascend platform, shipped in this repository but registered like an out-of-tree plugin.

``pyproject.toml`` declares ``ascend = "mini_platform.ascend:register"`` in the
``mini_platform.platform_plugins`` group, exactly as vllm-ascend declares itself to vLLM, so the
core never names this package: discovery finds it through installed metadata.
"""
from __future__ import annotations

import importlib.util
import logging
import sys

from .. import hardware

logger = logging.getLogger(__name__)


def _torch_npu_installed() -> bool:
    # find_spec raises ValueError for a module in sys.modules without __spec__ (an emulation), so look there first.
    return sys.modules.get("torch_npu") is not None or importlib.util.find_spec("torch_npu") is not None


def register() -> str | None:
    """Detector: the NPU platform when torch_npu is installed and an NPU device node (/dev/davinciN) exists.

    A card seen only in PCI config space does not count: without its device node (a container started
    without ``--device /dev/davinciN``, or no driver) CANN cannot open it.
    """
    if not _torch_npu_installed():
        return None
    count, evidence = hardware.ascend_device_count()
    if not count:
        logger.info("torch_npu is installed but no Ascend device was found under /dev or /sys")
        return None
    if evidence == hardware.PCI_DEVICES:
        logger.warning("Found %d Ascend NPU(s) in %s but no /dev/davinci* device node; not using the NPU",
                       count, evidence)
        return None
    return "mini_platform.ascend.platform.NPUPlatform"
