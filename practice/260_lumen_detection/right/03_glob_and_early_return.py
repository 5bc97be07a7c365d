# Correct: globs dev/lumen* and keeps the names the anchored pattern matches; register() returns early with an if instead of a conditional expression.
"""The reference Lumen project with device_count and register written another way in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/__init__.py',
                        '''    try:
        return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))
    except OSError:  # no /dev under the root: no device
        return 0''',
                        '''    dev = device_root() / "dev"
    if not dev.is_dir():
        return 0
    return len([p for p in dev.glob("lumen*") if re.fullmatch(r"lumen\\d+", p.name)])'''),
                 'lumen_npu/__init__.py',
                 '    return "lumen_npu.platform.LumenPlatform" if device_count() else None',
                 '''    if device_count() > 0:
        return "lumen_npu.platform.LumenPlatform"
    return None''')
