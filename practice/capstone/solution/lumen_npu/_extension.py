"""Build and load the Lumen runtime's C++ part (``csrc/lumen.cpp``) once per machine.

The library is compiled with ``torch.utils.cpp_extension.load`` into a cache folder named after a hash of
the source, the torch version and the Python version (``$LUMEN_BUILD_DIR``, else
``~/.cache/mini-platform/lumen/``), so it is built the first time only and again only when one of them
changes; a finished build is marked ``ready`` and later processes load the ``.so`` directly (no compiler,
no ninja). Loading registers Lumen's allocator, device guard and kernels with torch.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sys
from pathlib import Path

import torch

SOURCE = Path(__file__).resolve().parent / "csrc" / "lumen.cpp"
NAME = "lumen_C"
BUILD_DIR_ENV = "LUMEN_BUILD_DIR"
_library: ctypes.CDLL | None = None


class LumenBuildError(RuntimeError):
    """The C++ part cannot be built on this machine; the message says what to install."""


def build_dir() -> Path:
    """The cache folder of this source, torch and Python."""
    root = os.environ.get(BUILD_DIR_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "mini-platform" / "lumen"
    key = hashlib.sha256(SOURCE.read_bytes() + torch.__version__.encode() + sys.version.encode()).hexdigest()[:16]
    return Path(root) / key


def missing_tools() -> list[str]:
    """What a build needs and this machine lacks, each with how to install it ([] = nothing missing)."""
    from torch.utils import cpp_extension

    missing = []
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        missing.append(f"a C++ compiler ({compiler!r} is not on PATH; set CXX to use another): "
                       "Debian/Ubuntu: sudo apt-get install g++; Fedora: sudo dnf install gcc-c++; "
                       "macOS: xcode-select --install; conda: conda install -c conda-forge cxx-compiler")
    if not cpp_extension.is_ninja_available():
        missing.append("ninja (the build tool torch.utils.cpp_extension uses): pip install ninja")
    return missing


def load() -> ctypes.CDLL:
    """Load the library (building it first if this machine has no build of this source); idempotent."""
    global _library
    if _library is not None:
        return _library
    folder = build_dir()
    built = folder / f"{NAME}.so"
    if (folder / "ready").is_file() and built.is_file():
        torch.ops.load_library(str(built))
    else:
        missing = missing_tools()
        if missing:
            raise LumenBuildError("the Lumen runtime's C++ part (lumen_npu/csrc/lumen.cpp) must be built once, "
                                  "and this machine lacks:\n  - " + "\n  - ".join(missing))
        from torch.utils import cpp_extension

        folder.mkdir(parents=True, exist_ok=True)
        cpp_extension.load(NAME, [str(SOURCE)], build_directory=str(folder), is_python_module=False,
                           extra_cflags=["-O2"], verbose=False)
        (folder / "ready").write_text(str(SOURCE) + "\n")
    _library = ctypes.CDLL(str(built))
    _library.lumen_memory_allocated.restype = ctypes.c_longlong
    return _library
