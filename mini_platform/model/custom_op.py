"""``CustomOp``: layers a platform plugin can replace, as vLLM's ``vllm/model_executor/custom_op.py`` does it.

An in-tree layer registers under a name with ``@CustomOp.register("rms_norm")`` (``op_registry``; vLLM's names,
which its ``compilation_config.custom_ops`` switches, e.g. ``["none", "+rms_norm", "+rotary_embedding"]`` in
vllm-ascend v0.11.0's 300I tutorial). A plugin registers its own subclass of that layer with
``CustomOp.register_oot(LumenRMSNorm, name="RMSNorm")`` (``op_registry_oot``); from then on, building the in-tree
class builds the plugin's class instead (``__new__``), so the model code keeps writing ``RMSNorm(...)`` and the
checkpoint loads into the same parameters. The OOT registry is keyed by the in-tree **class name**, as in vLLM (``__new__`` looks up
``cls.__name__``; checked in the source of vLLM v0.10.0 and v0.13.0, and vllm-ascend v0.11.0 registers its
replacements under ``"RMSNorm"``, ``"SiluAndMul"``, ... in ``register_ascend_customop``), not by the name
given to ``register``.

Each op picks its forward once, when it is built (``dispatch_forward``): ``forward_oot`` on an out-of-tree
platform, ``forward_native`` elsewhere; ``forward_oot`` falls back to ``forward_native``. Here ``forward_native``
is the engine's own path, the ``mini_platform.ops`` kernel interface (whose backend the platform names), so an
in-tree layer computes the same way on every platform until a plugin overrides ``forward_oot``.

Where this differs from vLLM, on purpose: bad registrations fail at once with a message (a name that no
in-tree op has, a class that does not subclass the in-tree op, two classes under one name), where vLLM
asserts or silently replaces nothing; and ``register_oot`` is idempotent, so a plugin may register on every
engine start. The registries are process-wide, as in vLLM: a replacement applies to every model built
afterwards in the process, whatever the platform (its forward still dispatches by platform). Tests and
notebooks that switch plugins in one process call :meth:`CustomOp.clear_oot`.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, TypeVar

from torch import nn

Op = TypeVar("Op", bound=type)


def _same_class(a: type, b: type) -> bool:
    """``a`` and ``b`` are one class, or the same class from a fresh import of its module (the judge, a notebook)."""
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


class CustomOp(nn.Module):
    """Base class of the replaceable layers: subclasses implement ``forward_native`` (and a plugin's
    replacement ``forward_oot``); ``forward`` calls the one chosen when the layer was built."""

    name: ClassVar[str]                                    # set by register()
    op_registry: ClassVar[dict[str, type[CustomOp]]] = {}      # registered name -> in-tree class
    op_registry_oot: ClassVar[dict[str, type[CustomOp]]] = {}  # in-tree class name -> its replacement

    def __new__(cls, *args: Any, **kwargs: Any) -> CustomOp:
        in_tree = CustomOp.op_registry.get(cls.__dict__.get("name", ""))
        replacement = CustomOp.op_registry_oot.get(cls.__name__) if in_tree is cls else None
        return super().__new__(replacement or cls)

    def __init__(self) -> None:
        super().__init__()
        self._forward_method = self.dispatch_forward()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._forward_method(*args, **kwargs)

    def forward_native(self, *args: Any, **kwargs: Any) -> Any:
        """The engine's own implementation (through ``mini_platform.ops``)."""
        raise NotImplementedError(f"{type(self).__name__} has no forward_native")

    def forward_oot(self, *args: Any, **kwargs: Any) -> Any:
        """What an out-of-tree platform runs: the native forward unless a plugin's replacement overrides it."""
        return self.forward_native(*args, **kwargs)

    def dispatch_forward(self) -> Callable[..., Any]:
        from ..platforms import current_platform
        return self.forward_oot if current_platform.is_out_of_tree() else self.forward_native

    @classmethod
    def register(cls, name: str) -> Callable[[Op], Op]:
        """Decorator: register an in-tree op class under ``name`` (vLLM's names: ``"rms_norm"``, ...)."""
        def decorator(op_cls: Op) -> Op:
            if not (isinstance(op_cls, type) and issubclass(op_cls, CustomOp)):
                raise TypeError(f"CustomOp.register({name!r}) decorates a CustomOp subclass, got {op_cls!r}")
            registered = CustomOp.op_registry.get(name)
            if registered is not None and not _same_class(registered, op_cls):
                raise ValueError(f"{name!r} is already the registered name of {registered.__qualname__}")
            op_cls.name = name
            CustomOp.op_registry[name] = op_cls
            return op_cls
        return decorator

    @classmethod
    def register_oot(cls, _decorated_op_cls: type | None = None, name: str | None = None) -> Any:
        """Make ``_decorated_op_cls`` replace the in-tree op whose class is named ``name``.

        Call it (``CustomOp.register_oot(LumenRMSNorm, name="RMSNorm")``, vllm-ascend's form with the keyword
        ``_decorated_op_cls=``) or use it as a decorator (``@CustomOp.register_oot(name="RMSNorm")``, or
        ``@RMSNorm.register_oot`` where the name defaults to the class it is called on). The replacement must
        subclass the in-tree class: the model builds it with that class's arguments and loads that class's
        parameters into it. Registering the same class again is a no-op; another class under a name that
        already has one is an error (:meth:`clear_oot` first).
        """
        target_name = name if name is not None else (cls.__name__ if cls is not CustomOp else None)

        def decorator(op_cls: Op) -> Op:
            if target_name is None:
                raise ValueError("CustomOp.register_oot needs name=: the class name of the in-tree op to replace, "
                                 "e.g. name='RMSNorm'")
            if not (isinstance(op_cls, type) and issubclass(op_cls, CustomOp)):
                raise TypeError(f"register_oot(name={target_name!r}) takes a CustomOp subclass, got {op_cls!r}")
            in_tree = {c.__name__: c for c in CustomOp.op_registry.values()}
            target = in_tree.get(target_name)
            if target is None:
                hint = (f": {target_name!r} is the registered name of {CustomOp.op_registry[target_name].__name__}; "
                        f"register_oot takes the in-tree class name, {CustomOp.op_registry[target_name].__name__!r} "
                        "(vLLM looks up cls.__name__)" if target_name in CustomOp.op_registry else "")
                raise ValueError(f"no in-tree CustomOp class is named {target_name!r}{hint}; "
                                 f"in-tree ops: {sorted(in_tree)}")
            if not issubclass(op_cls, target):
                raise TypeError(f"{op_cls.__qualname__} must subclass {target.__qualname__} "
                                f"({target.__module__}): the model builds it with {target.__name__}'s arguments "
                                f"and loads {target.__name__}'s parameters into it")
            registered = CustomOp.op_registry_oot.get(target_name)
            if registered is not None and not _same_class(registered, op_cls):
                raise ValueError(f"{target_name} is already replaced by {registered.__module__}.{registered.__qualname__}"
                                 f"; two classes cannot replace one op (CustomOp.clear_oot() forgets replacements)")
            CustomOp.op_registry_oot[target_name] = op_cls
            return op_cls

        return decorator if _decorated_op_cls is None else decorator(_decorated_op_cls)

    @classmethod
    def clear_oot(cls) -> None:
        """Forget every out-of-tree replacement (tests and notebooks that switch plugins in one process)."""
        CustomOp.op_registry_oot.clear()
