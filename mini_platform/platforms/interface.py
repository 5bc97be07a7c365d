"""The Platform base class: what an engine needs to know about one kind of hardware.

A platform describes a device family with a handful of attributes (device type, dispatch key,
collective library, visible-devices variable, Ray resource name) and answers the engine's questions
with *qualified class names as strings* (the attention backend, the static graph wrapper; the communicator arrives with its
chapter), so that a platform module imports on any machine and the heavy
component is imported only when first used.

Unknown attributes are forwarded to ``torch.<device_type>``: ``current_platform.synchronize()``
becomes ``torch.cuda.synchronize()`` on NVIDIA and ``torch.npu.synchronize()`` on Ascend.
"""
from __future__ import annotations

import enum
import importlib
from typing import Any, ClassVar, MutableMapping


class PlatformEnum(enum.Enum):
    CPU = enum.auto()
    CUDA = enum.auto()
    OOT = enum.auto()  # out of tree: registered through the platform plugin entry point group
    UNSPECIFIED = enum.auto()


class Platform:
    """Base class of every platform. Subclasses override class attributes and classmethods."""

    _enum: ClassVar[PlatformEnum]
    device_name: ClassVar[str]
    # torch's name of the device (`torch.device(device_type)`) and the module attributes forward to.
    device_type: ClassVar[str]
    # The dispatcher key torch registers the device's kernels under (out-of-tree devices use PrivateUse1).
    dispatch_key: ClassVar[str] = "CPU"
    # torch.distributed backend of the device's collective library.
    dist_backend: ClassVar[str] = "gloo"
    # Variable that selects the visible devices; must be set before the device runtime starts.
    device_control_env_var: ClassVar[str] = ""
    # Ray resource name that schedules a worker onto one device.
    ray_device_key: ClassVar[str] = ""
    # Which kernel backend of `mini_platform.ops` serves this platform.
    kernel_backend: ClassVar[str] = "cpu"
    # KV-cache block sizes the platform's attention kernels accept; None accepts any.
    supported_block_sizes: ClassVar[tuple[int, ...] | None] = None
    _global_graph_pool: ClassVar[Any] = None

    # -- identity ---------------------------------------------------------------------------
    def is_cpu(self) -> bool:
        return self._enum is PlatformEnum.CPU

    def is_cuda(self) -> bool:
        return self._enum is PlatformEnum.CUDA

    def is_out_of_tree(self) -> bool:
        return self._enum is PlatformEnum.OOT

    def is_npu(self) -> bool:
        return self.device_type == "npu"

    # -- components, named as strings ---------------------------------------------------------
    @classmethod
    def get_attn_backend_cls(cls) -> str:
        """Qualified name of the attention backend the model runner should use."""
        return "mini_platform.model.paged_attention.PagedAttention"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str | None:
        """Qualified name of the wrapper that captures and replays decode graphs; None = eager only.
        The interface it implements is described in :mod:`mini_platform.compilation`."""
        return None

    @classmethod
    def get_global_graph_pool(cls) -> Any:
        """One graph memory pool shared by every graph of the process (``torch.<device>.graph_pool_handle()``)."""
        if cls._global_graph_pool is None:
            cls._global_graph_pool = cls.device_module().graph_pool_handle()
        return cls._global_graph_pool

    # -- capabilities -------------------------------------------------------------------------
    @classmethod
    def supports_block_size(cls, block_size: int) -> bool:
        return cls.supported_block_sizes is None or block_size in cls.supported_block_sizes

    @classmethod
    def check_and_update_config(cls, config: Any) -> None:
        """Validate or adjust an engine config for this platform (block size, graph mode, ...).

        ``config`` is any object with a ``block_size`` attribute. The base rule rejects a block
        size the platform's kernels cannot serve, before any work is done; and an ``enforce_eager``
        left at None becomes True exactly when the platform has no graph wrapper.
        """
        if getattr(config, "enforce_eager", False) is None:
            config.enforce_eager = cls.get_static_graph_wrapper_cls() is None
        block_size = getattr(config, "block_size", None)
        if block_size is not None and not cls.supports_block_size(block_size):
            raise ValueError(
                f"block_size={block_size} is not supported on the {cls.device_name} platform; "
                f"use one of {list(cls.supported_block_sizes or [])}"
            )

    @classmethod
    def prepare_process_env(cls, env: MutableMapping[str, str]) -> None:
        """Fix up the process environment before the device runtime starts (called once, on selection)."""

    # -- forwarding to torch.<device_type> ---------------------------------------------------------
    @classmethod
    def device_module(cls) -> Any:
        """The torch module of this device (``torch.cuda``, ``torch.npu``, ...); imports torch."""
        torch = importlib.import_module("torch")
        try:
            return getattr(torch, cls.device_type)
        except AttributeError:
            raise AttributeError(
                f"torch has no device module 'torch.{cls.device_type}' for the {cls.device_name} platform"
            ) from None

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails. Dunder names are never forwarded: pickle, copy and
        # friends probe them and must get a plain AttributeError.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        # Read through the class: `self.device_type` would come back here when a subclass lacks it.
        device_type = getattr(type(self), "device_type", "")
        if not device_type:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r} and no device to forward it to")
        try:
            module = self.device_module()
        except AttributeError as exc:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}: {exc}") from None
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}, and neither has torch.{device_type}"
            ) from None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} device_type={self.device_type!r}>"


class UnspecifiedPlatform(Platform):
    """No platform was detected: nothing can run. Forwarding has no device to go to."""

    _enum = PlatformEnum.UNSPECIFIED
    device_name = "unspecified"
    device_type = ""
