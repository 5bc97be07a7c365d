# Correct: checks for the dev folder with os.path.isdir first (no try/except) and matches each name with re.fullmatch and [0-9]+.
"""The reference Lumen project with device_count written another way in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '''    try:
        return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))
    except OSError:  # no /dev under the root: no device
        return 0''',
                 '''    folder = os.path.join(device_root(), "dev")
    if not os.path.isdir(folder):
        return 0
    count = 0
    for name in os.listdir(folder):
        if re.fullmatch(r"lumen[0-9]+", name):
            count += 1
    return count''')
