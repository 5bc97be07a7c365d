# Mistake: Lumen's tensors are CPU tensors (device_type 'cpu', as before stage 264) and device_module is not overridden, so forwarding goes to torch.cpu instead of the Lumen runtime.
"""The reference Lumen project with two changes in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/platform.py', '    device_type = "lumen"', '    device_type = "cpu"'),
                 'lumen_npu/platform.py',
                 '    @classmethod\n    def device_module(cls) -> ModuleType:\n        """The Lumen runtime\'s device module: ``current_platform.<name>`` forwards here, not to torch.cpu."""\n        return importlib.import_module("lumen_npu.device")\n',
                 '')
