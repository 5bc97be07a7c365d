# Correct: reads the root with os.getenv(name, "/"), lists the folder with os.scandir and tests names with startswith and str.isdigit instead of a regex.
"""The reference Lumen project with the root and device_count written another way in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/__init__.py',
                        'return Path(os.environ.get(DEVICE_ROOT_ENV) or "/")',
                        'return Path(os.getenv(DEVICE_ROOT_ENV, "/"))'),
                 'lumen_npu/__init__.py',
                 '''    try:
        return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))
    except OSError:  # no /dev under the root: no device
        return 0''',
                 '''    try:
        with os.scandir(device_root() / "dev") as entries:
            names = [entry.name for entry in entries]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return len([n for n in names if n.startswith("lumen") and n[len("lumen"):].isdigit()])''')
