# Mistake: device_module is not overridden, so forwarding goes to torch.cpu instead of the Lumen runtime.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    @classmethod\n    def device_module(cls) -> ModuleType:\n        """The Lumen runtime\'s device module: ``current_platform.<name>`` forwards here, not to torch.cpu."""\n        return importlib.import_module("lumen_npu.device")\n',
                 '')
