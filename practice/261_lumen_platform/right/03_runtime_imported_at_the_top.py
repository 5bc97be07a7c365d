# Correct: platform.py imports the runtime module at its top (from . import device) and device_module returns it; the block sizes are a list.
"""The reference Lumen project with two changes in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(mutate(REFERENCE, 'lumen_npu/platform.py',
                               'from mini_platform.platforms import Platform, PlatformEnum\n',
                               'from mini_platform.platforms import Platform, PlatformEnum\n\nfrom . import device\n'),
                        'lumen_npu/platform.py',
                        '        return importlib.import_module("lumen_npu.device")',
                        '        return device'),
                 'lumen_npu/platform.py',
                 '    supported_block_sizes = (32, 64, 128)',
                 '    supported_block_sizes = [32, 64, 128]')
