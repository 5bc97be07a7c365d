# Mistake: register_ops registers the replacement whatever the platform, so a CPU engine in a process where the plugin is installed gets Lumen's layers too.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py', '''    if current_platform.device_name != "lumen":
        return
''', '')
