"""Install a plugin project into a throwaway site directory and run it, for the capstone stages (260-265).

:func:`install` does for a pure-Python project what ``pip install --no-deps --target SITE`` does with
its wheel: it puts the project's packages (their modules, and the files ``[tool.setuptools.package-data]``
names, such as Lumen's C++ source) into ``SITE`` and writes ``<name>-<version>.dist-info/``
with ``METADATA`` and ``entry_points.txt`` from ``pyproject.toml``. Each module is installed as a
link to the project's file (a copy where links cannot be made), so that a traceback's real path is
the learner's own file: the judge shows those frames as the learner's, and :func:`source_paths` turns
the paths another process printed into them. Nothing is built, nothing is
downloaded, and the learner's environment is never touched: the site directory lives in a temporary
folder and is put on ``sys.path`` only by whoever uses it.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import re
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Iterator

from judging.progress import workspace_dir  # practice/ is on sys.path wherever this module is imported

REPO = Path(__file__).resolve().parents[2]
SKELETON = REPO / "practice" / "capstone" / "starter"
REFERENCE = REPO / "practice" / "capstone" / "solution"
WORKSPACE_PROJECT = "practice/workspace/lumen-npu"
PACKAGE, KERNEL_BACKEND, SITE_PREFIX = "lumen_npu", "lumen", "lumen-site-"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info")


class ProjectError(AssertionError):
    """The project cannot be installed; the message says what to fix (a failed stage, not a crash)."""


def project_dir(project: str | os.PathLike) -> Path:
    """``project`` as a folder: absolute, or relative to the repository root."""
    path = Path(project)
    path = path if path.is_absolute() else REPO / path
    if not (path / "pyproject.toml").is_file():
        hint = (f"\n  make your copy of the skeleton once:  cp -r practice/capstone/starter {WORKSPACE_PROJECT}"
                if str(project) == WORKSPACE_PROJECT else "")
        raise ProjectError(f"no plugin project at {path} (no pyproject.toml there){hint}")
    return path


def learner_project() -> Path:
    """The learner's own project: ``lumen-npu/`` in their workspace (practice/workspace/, or the folder
    ``MINI_PLATFORM_WORKSPACE`` names)."""
    return workspace_dir(REPO / "practice") / Path(WORKSPACE_PROJECT).name


def _temp_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path


def _packages(root: Path, config: dict) -> list[str]:
    """The packages to install, as setuptools picks them: ``[tool.setuptools] packages`` when given (each
    listed package alone, its subpackages only if listed too), else every package found under the root."""
    listed = config.get("tool", {}).get("setuptools", {}).get("packages")
    if listed is not None:
        return list(listed)
    return sorted(".".join(p.parent.relative_to(root).parts) for p in root.glob("*/**/__init__.py")
                  if "__pycache__" not in p.parts)


def install(project: str | os.PathLike) -> Path:
    """Install ``project`` into a new temporary site directory; returns that directory."""
    root = project_dir(project)
    try:
        config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(f"{root / 'pyproject.toml'} is not valid TOML: {exc}") from None
    meta = config.get("project", {})
    if not meta.get("name") or not meta.get("version"):
        raise ProjectError("pyproject.toml needs [project] with a name and a version")
    site = _temp_dir(SITE_PREFIX)
    package_data = config.get("tool", {}).get("setuptools", {}).get("package-data", {})
    for package in _packages(root, config):
        source = root / package.replace(".", "/")
        if not (source / "__init__.py").is_file():
            raise ProjectError(f"pyproject.toml lists the package {package!r}, but {source} has no __init__.py")
        target = site / package.replace(".", "/")
        target.mkdir(parents=True, exist_ok=True)
        data = [path for pattern in package_data.get(package, []) for path in source.glob(pattern) if path.is_file()]
        for module in [*source.glob("*.py"), *data]:
            destination = target / module.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.symlink(module.resolve(), destination)
            except OSError:   # e.g. Windows without the privilege: tracebacks then name the copy
                shutil.copyfile(module, destination)
    name, version = meta["name"], meta["version"]
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    groups = meta.get("entry-points", {})
    lines = []
    for group, entries in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in entries.items()]
        lines.append("")
    (dist_info / "entry_points.txt").write_text("\n".join(lines))
    return site


def source_paths(text: str) -> str:
    """``text`` (a traceback printed by a process that ran an installed site) with the path of each
    installed module replaced by the project file it was installed from."""
    def real(match: re.Match) -> str:
        path = match.group(1)
        return f'File "{os.path.realpath(path)}"' if SITE_PREFIX in path else match.group(0)
    return re.sub(r'File "([^"]+)"', real, text)


def activate(site: Path) -> None:
    """Make ``site`` this process's installed plugin, as if the process had just started with it there.

    The judge may run several submissions in one process (``judge.py check``), so whatever an earlier
    project left behind is forgotten first: its site directory and ``lumen_npu`` modules, the resolved
    platform, the ``lumen`` kernel backend, the layers it replaced (``CustomOp.register_oot``), the ``lumen::``
    custom ops it defined (:func:`forget_custom_ops`) and the record that the general plugins ran.
    """
    from mini_platform import ops, platforms, plugins
    from mini_platform.model.custom_op import CustomOp

    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not Path(p).name.startswith(SITE_PREFIX)]
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    platforms.clear_current_platform()
    plugins.clear_general_plugins()
    ops.unregister_backend(KERNEL_BACKEND)
    CustomOp.clear_oot()
    forget_custom_ops()


def forget_custom_ops(namespace: str = KERNEL_BACKEND) -> None:
    """Undefine the ``namespace::`` ops that Python code defined with ``torch.library`` (``custom_op``, or ``define``
    / ``impl`` / ``register_fake`` without a library of their own), so that the next project defines its own; the
    ops of the C++ runtime (``lumen::cpu_view``) stay.

    Each library is destroyed now, and its finalizer is left nothing to undo: run later, when the old project's
    modules are collected, it would drop ``torch.ops.<namespace>.<op>`` from torch's cache while the next project's
    op of that name is in use, and a model compiled with it would recompile mid-run (torch 2.13's
    ``torch.library._del_library``). Uses torch's registries of those libraries (``torch._library.custom_ops``,
    ``torch.library._keep_alive``), which the torch this project pins has.
    """
    import torch
    from torch._library import custom_ops

    prefix = namespace + "::"
    libraries = [lib for lib in (*custom_ops.OPDEF_TO_LIB.values(), *torch.library._keep_alive) if lib.ns == namespace]
    for qualname in [q for q in custom_ops.OPDEF_TO_LIB if q.startswith(prefix)]:
        del custom_ops.OPDEF_TO_LIB[qualname]
        custom_ops.OPDEFS.pop(qualname, None)
    torch.library._keep_alive[:] = [lib for lib in torch.library._keep_alive if lib.ns != namespace]
    for lib in libraries:
        lib._destroy()
        lib._op_defs.clear()   # the sets the finalizer captured
        lib._op_impls.clear()


def fake_device_root(*nodes: str) -> Path:
    """A folder with ``dev/<node>`` files, for the detector's ``LUMEN_DEVICE_ROOT``."""
    root = _temp_dir("lumen-root-")
    (root / "dev").mkdir()
    for node in nodes:
        (root / "dev" / node).touch()
    return root


@contextlib.contextmanager
def lumen_selected(*nodes: str) -> Iterator[None]:
    """This process as a machine with the Lumen devices ``nodes`` (:func:`fake_device_root`) that asks for the Lumen
    platform by name (``MINI_PLATFORM=lumen``; no plugin allow-list, target device, kernel backend or visible-devices
    override; one torch thread), with no platform resolved yet. Undone on exit, the platform forgotten again."""
    import pytest
    import torch
    from mini_platform import platforms

    patch = pytest.MonkeyPatch()
    for name in ("MINI_PLATFORM_PLUGINS", "MINI_PLATFORM_TARGET_DEVICE", "MINI_PLATFORM_KERNEL_BACKEND",
                 "LUMEN_VISIBLE_DEVICES"):
        patch.delenv(name, raising=False)
    patch.setenv("LUMEN_DEVICE_ROOT", str(fake_device_root(*nodes)))
    patch.setenv("MINI_PLATFORM", "lumen")
    platforms.clear_current_platform()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        platforms.clear_current_platform()
        patch.undo()


def mutate(project: str | os.PathLike, file: str, old: str, new: str) -> str:
    """A copy of ``project`` with ``old`` replaced by ``new`` (exactly once) in ``file``: a wrong solution."""
    copy = _temp_dir("lumen-wrong-") / "project"
    shutil.copytree(project_dir(project), copy, ignore=_IGNORED)
    target = copy / file
    text = target.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise ValueError(f"{old!r} occurs {text.count(old)} times in {file}, not once")
    target.write_text(text.replace(old, new), encoding="utf-8")
    return str(copy)


@functools.cache
def tiny_llama(prompts: tuple[tuple[int, ...], ...], max_tokens: int) -> tuple[Path, list[list[int]]]:
    """A tiny random Llama saved as a checkpoint, and transformers' greedy continuations of ``prompts``
    (``max_tokens`` each, EOS ignored): the reference the engine on Lumen must match. Built once per process."""
    import torch
    import transformers as tf

    tf.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    config = tf.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                            initializer_range=0.1, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    model = tf.LlamaForCausalLM(config).eval()
    path = _temp_dir("tiny-llama-")
    model.save_pretrained(path)
    with torch.no_grad():
        expected = [model.generate(torch.tensor([list(p)]), max_new_tokens=max_tokens, min_new_tokens=max_tokens,
                                   do_sample=False, pad_token_id=0)[0, len(p):].tolist() for p in prompts]
    return path, expected
