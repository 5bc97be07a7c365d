"""The torch_npu calls the engine makes, collected from the code, and checked against the wheel (tests/npu_wheel.py).

Two collectors, so that nothing is hand-listed:

- :func:`recording`: inside ``emulated_torch_npu()``, every op of the emulated ``torch_npu`` module (and of its
  ``torch_npu.atb`` namespace) and every
  function of its ``torch.npu`` namespace is replaced by a recorder in front of it, and the methods of the
  emulated graph classes (``NPUGraph``, ``ExternalEvent``, ``Stream``, ``graph``) are wrapped the same way. A call is
  kept when its direct caller is engine code (``mini_platform/`` outside the emulation, or ``practice/capstone/``),
  with its call site, its arguments (tensors as shape, dtype and strides) and what it returned.
- :func:`scan_sources`: an :mod:`ast` scan of ``mini_platform/ascend`` (without the emulation) and
  ``practice/capstone`` for calls ``torch_npu.X(...)``, ``torch_npu.npu.X(...)``, ``npu.X(...)`` (the module's
  alias of ``torch_npu.npu``) and ``torch.npu.X(...)``, with how many positional arguments and which keywords
  each passes.

The checks: :func:`check_op_call` binds a call to the wheel's ``FunctionSchema`` as torch's dispatcher does
(positional, then keywords; keyword-only arguments by keyword; every argument without a default given; each value
of a type the schema accepts), trying every overload; :func:`check_python_call` binds it to the wheel's Python
signature; :func:`check_returns` counts the returned tensors; :func:`check_meta` runs the wheel's meta function on
meta tensors of the recorded shapes and compares shapes and dtypes with what the emulation returned.
"""
from __future__ import annotations

import ast
import contextlib
import difflib
import functools
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from npu_wheel import ROOT, Wheel

ENGINE_DIRS = ("mini_platform/", "practice/capstone/")
EMULATION_DIR = "mini_platform/ascend/emulation/"
SCANNED = ("mini_platform/ascend", "practice/capstone")


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype
    stride: tuple[int, ...]

    def meta(self) -> torch.Tensor:
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype, device="meta")


@dataclass(frozen=True)
class Opaque:
    """Any other object (a stream, an event, a task-group handle), by its type's name."""
    type_name: str


def describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return TensorSpec(tuple(value.shape), value.dtype, tuple(value.stride()))
    if isinstance(value, (list, tuple)):
        return type(value)(describe(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype)):
        return value
    return Opaque(type(value).__name__)


@dataclass
class Call:
    name: str                      # "torch_npu.npu_rms_norm", "torch.npu.graph_task_update_begin", "torch.npu.NPUGraph.replay"
    site: str                      # "mini_platform/ascend/ops/layernorm.py:21"
    args: tuple
    kwargs: dict
    result: Any = None

    @property
    def op(self) -> str:
        return self.name.removeprefix("torch_npu.")


def _engine_site(frame: Any) -> str | None:
    try:
        path = Path(frame.f_code.co_filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    if path.startswith(EMULATION_DIR) or not path.startswith(ENGINE_DIRS):
        return None
    return f"{path}:{frame.f_lineno}"


def _recorder(calls: list[Call], name: str, fn: Callable, method: bool = False) -> Callable:
    @functools.wraps(fn)
    def record(*args: Any, **kwargs: Any) -> Any:
        site = _engine_site(sys._getframe(1))
        result = fn(*args, **kwargs)
        if site is not None:
            shown = args[1:] if method else args
            calls.append(Call(name, site, describe(shown), {k: describe(v) for k, v in kwargs.items()},
                              describe(result)))
        return result
    return record


_ABSENT = object()


@contextlib.contextmanager
def recording() -> Iterator[list[Call]]:
    """``emulated_torch_npu()`` with recorders in front of every op and every ``torch.npu`` function, class
    (its constructor) and method."""
    from mini_platform.ascend.emulation import emulated_torch_npu
    from mini_platform.ascend.platform import NPUPlatform

    calls: list[Call] = []
    patched: list[tuple[type, str, Any]] = []     # (class, attribute, what its own __dict__ held, or _ABSENT)
    pool = NPUPlatform._global_graph_pool
    NPUPlatform._global_graph_pool = None      # so that graph_pool_handle() is called (and seen) again
    try:
        with emulated_torch_npu() as fake:
            for module, prefix in ((fake, "torch_npu"), (fake.atb, "torch_npu.atb"), (fake.npu, "torch.npu")):
                for name, value in [(n, v) for n, v in vars(module).items() if not n.startswith("__")]:
                    if not isinstance(value, type):
                        if callable(value):
                            setattr(module, name, _recorder(calls, f"{prefix}.{name}", value))
                        continue
                    methods = {"__init__": f"{prefix}.{name}"} | {
                        attr: f"{prefix}.{name}.{attr}" for attr, fn in vars(value).items()
                        if not attr.startswith("_") and inspect.isfunction(fn)}
                    for attr, label in methods.items():
                        patched.append((value, attr, vars(value).get(attr, _ABSENT)))
                        setattr(value, attr, _recorder(calls, label, getattr(value, attr), method=True))
            yield calls
    finally:
        for cls, attr, own in reversed(patched):
            if own is _ABSENT:
                delattr(cls, attr)
            else:
                setattr(cls, attr, own)
        NPUPlatform._global_graph_pool = pool


# -- the AST scan ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceSite:
    name: str                      # "torch_npu.npu_swiglu" or "torch.npu.set_device"
    site: str                      # "mini_platform/ascend/ops/activation.py:16"
    positional: int | None         # None when the call spreads *args
    keywords: tuple[str, ...] | None   # None when the call spreads **kwargs


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return {"torch_npu": "torch_npu", "npu": "torch.npu", "torch": "torch"}.get(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_torch_npu":
        return "torch_npu"
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def scan_sources(roots: tuple[str, ...] = SCANNED) -> list[SourceSite]:
    sites = []
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(EMULATION_DIR):
                continue
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if not isinstance(node, ast.Call):
                    continue
                name = _dotted(node.func)
                if name is None:
                    continue
                name = name.replace("torch_npu.npu.", "torch.npu.")
                if not name.startswith(("torch_npu.", "torch.npu.")):
                    continue
                starred = any(isinstance(a, ast.Starred) for a in node.args)
                spread = any(k.arg is None for k in node.keywords)
                sites.append(SourceSite(name, f"{rel}:{node.lineno}", None if starred else len(node.args),
                                        None if spread else tuple(k.arg for k in node.keywords)))
    return sites


# -- binding to the wheel's schemas and signatures --------------------------------------------------------------------

def _fits(jit_type: Any, value: Any, n: int | None = None) -> bool:
    """Would torch's argument parser accept ``value`` (a recorded description) for ``jit_type``?"""
    if isinstance(jit_type, torch.OptionalType):
        return value is None or _fits(jit_type.getElementType(), value, n)
    if isinstance(jit_type, torch.TensorType):
        return isinstance(value, TensorSpec)
    if isinstance(jit_type, torch.ListType):
        element = jit_type.getElementType()
        if not isinstance(value, (list, tuple)):
            return n is not None and _fits(element, value)          # int[2] also takes one int
        return (n is None or len(value) == n) and all(_fits(element, v) for v in value)
    if isinstance(jit_type, (torch.IntType, torch.SymIntType)):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(jit_type, torch.FloatType):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(jit_type, torch.BoolType):
        return isinstance(value, bool)
    if isinstance(jit_type, torch.StringType):
        return isinstance(value, str)
    if str(jit_type) == "ScalarType":
        return isinstance(value, torch.dtype)
    return False


def bind_schema(schema: torch._C.FunctionSchema, args: tuple, kwargs: dict) -> list[str]:
    """What torch's dispatcher would refuse in this call to ``schema`` (empty when it binds)."""
    problems = []
    positional = [a for a in schema.arguments if not a.kwarg_only]
    names = [a.name for a in schema.arguments]
    if len(args) > len(positional):
        problems.append(f"{len(args)} positional arguments, but {schema.name} takes {len(positional)} "
                        f"({', '.join(a.name for a in positional)}); the rest are keyword-only")
    given = {a.name: v for a, v in zip(positional, args)}
    for key, value in kwargs.items():
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            problems.append(f"no argument named {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        elif key in given:
            problems.append(f"{key!r} given both by position and by keyword")
        else:
            given[key] = value
    for arg in schema.arguments:
        if arg.name not in given:
            if not arg.has_default_value():
                problems.append(f"missing {arg.name!r} ({arg.type}, no default)")
        elif not _fits(arg.type, given[arg.name], arg.N):
            problems.append(f"{arg.name}={given[arg.name]!r} does not fit {arg.type}"
                            + (f"[{arg.N}]" if arg.N else ""))
    return problems


def check_op_call(wheel: Wheel, call: Call) -> tuple[str | None, list[str]]:
    """``(the overload the call binds to, [])``, or ``(None, problems)`` naming what every overload refused."""
    schemas = wheel.op_schemas(call.op)
    if not schemas:
        return None, [f"the torch-npu {wheel.version} wheel has no op torch_npu.{call.op}"]
    problems = []
    for schema in schemas:
        refused = bind_schema(schema, call.args, call.kwargs)
        if not refused:
            return str(schema), []
        label = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
        problems += [f"{label}: {p}" for p in refused]
    return None, problems


def check_returns(schema_text: str, result: Any) -> list[str]:
    """The emulation returned as many tensors (or a tensor list) as the schema declares."""
    returns = torch._C.parse_schema(schema_text).returns
    if not returns:
        shape_ok = result is None
    elif len(returns) == 1 and isinstance(returns[0].type, torch.ListType):
        shape_ok = isinstance(result, list) and all(isinstance(r, TensorSpec) for r in result)
    elif len(returns) == 1:
        shape_ok = isinstance(result, TensorSpec)
    else:
        shape_ok = isinstance(result, tuple) and len(result) == len(returns)
    if shape_ok:
        return []
    return [f"the schema returns {[str(r.type) for r in returns] or '()'}, the emulation returned {result!r}"]


def check_python_call(wheel: Wheel, call: Call) -> list[str]:
    """Bind the call to every signature the wheel's Python source gives the name (a class: ``__new__`` and
    ``__init__``)."""
    signatures = wheel.python_signatures(call.name)
    if not signatures:
        return [f"the torch-npu {wheel.version} wheel defines no {call.name} in torch_npu/npu/"]
    problems = []
    for signature in signatures:
        try:
            signature.bind(*call.args, **call.kwargs)
        except TypeError as exc:
            problems.append(f"{call.name}{signature}: {exc}")
    return problems


def check_source_site(wheel: Wheel, site: SourceSite) -> list[str]:
    """The statically visible part of a call (how many positional arguments, which keywords), for a site the
    recording did not reach. Placeholders stand for the values, so types are not checked."""
    if site.positional is None or site.keywords is None:
        return [f"{site.site}: spreads *args or **kwargs; only a recorded call can be checked"]
    call = Call(site.name, site.site, (Opaque("?"),) * site.positional, dict.fromkeys(site.keywords, Opaque("?")))
    if site.name.startswith("torch.npu."):
        return check_python_call(wheel, call)
    schemas = wheel.op_schemas(call.op)
    if not schemas:
        return [f"the torch-npu {wheel.version} wheel has no op torch_npu.{call.op}"]
    refusals = [[p for p in bind_schema(s, call.args, call.kwargs) if "does not fit" not in p] for s in schemas]
    return [] if any(not r for r in refusals) else [p for r in refusals for p in r]


# -- meta functions --------------------------------------------------------------------------------------------------

def _meta_value(value: Any) -> Any:
    if isinstance(value, TensorSpec):
        return value.meta()
    if isinstance(value, (list, tuple)):
        return type(value)(_meta_value(v) for v in value)
    return value


def _outputs(value: Any) -> list[tuple[tuple[int, ...], torch.dtype]]:
    if isinstance(value, (torch.Tensor, TensorSpec)):
        return [(tuple(value.shape), value.dtype)]
    if isinstance(value, (list, tuple)):
        return [out for v in value for out in _outputs(v)]
    return []


def _as_dispatched(schema: torch._C.FunctionSchema, call: Call) -> tuple[list, dict]:
    """The arguments as the dispatcher hands them to a Python kernel: every argument, defaults filled in,
    positional ones by position (their names in the meta function may differ), keyword-only ones by keyword."""
    given = dict(zip([a.name for a in schema.arguments if not a.kwarg_only], call.args), **call.kwargs)
    value = {a.name: given[a.name] if a.name in given else a.default_value for a in schema.arguments}
    return ([value[a.name] for a in schema.arguments if not a.kwarg_only],
            {a.name: value[a.name] for a in schema.arguments if a.kwarg_only})


def check_meta(wheel: Wheel, call: Call, overload: str, skip: frozenset[int] = frozenset()) -> list[str] | None:
    """Shapes and dtypes of the wheel's meta function on this call's shapes vs the emulation's outputs (outputs at
    the indices ``skip`` left out); None when the wheel has no meta function for the op."""
    schema = torch._C.parse_schema(overload)
    key = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name
    fn = wheel.meta_functions.get(key)
    if fn is None:
        return None
    args, kwargs = _as_dispatched(schema, call)
    # Where the meta function lags its schema (2.13.0's npu_moe_distribute_combine meta has no shared_expert_x), a
    # keyword-only argument it does not declare is left out, as long as the call leaves it at the schema's default.
    accepted = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        defaults = {a.name: a.default_value for a in schema.arguments if a.kwarg_only}
        kwargs = {k: v for k, v in kwargs.items() if k in accepted or v is not defaults[k]}
    expected = _outputs(fn(*_meta_value(args), **{k: _meta_value(v) for k, v in kwargs.items()}))
    got = _outputs(call.result)
    if len(expected) != len(got):
        return [f"meta returns {len(expected)} tensors, the emulation {len(got)}"]
    return [f"output {i}: meta {e[0]} {e[1]}, emulation {g[0]} {g[1]}"
            for i, (e, g) in enumerate(zip(expected, got)) if i not in skip and e != g]


# -- the emulation's own signatures ----------------------------------------------------------------------------------

def compare_with_schema(fn: Callable, schema: torch._C.FunctionSchema) -> list[str]:
    """An emulated op takes the schema's arguments: same names in the same order, keyword-only where the schema
    says so, and the schema's defaults (a ``**other`` catch-all may stand for trailing keyword-only ones)."""
    problems = []
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD]
    catch_all = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    by_name = {p.name: p for p in params}
    for arg in schema.arguments:
        p = by_name.pop(arg.name, None)
        if p is None:
            if not (catch_all and arg.kwarg_only):
                problems.append(f"lacks {arg.name!r}")
            continue
        if (p.kind is p.KEYWORD_ONLY) != arg.kwarg_only:
            problems.append(f"{arg.name!r} is {'keyword-only' if arg.kwarg_only else 'positional'} in the wheel")
        if arg.has_default_value() != (p.default is not p.empty):
            problems.append(f"{arg.name!r}: default {arg.default_value if arg.has_default_value() else 'none'} "
                            f"in the wheel, {p.default if p.default is not p.empty else 'none'} here")
        elif arg.has_default_value() and not _same_default(arg.default_value, p.default):
            problems.append(f"{arg.name!r}: default {arg.default_value!r} in the wheel, {p.default!r} here")
    problems += [f"has {name!r}, which the wheel's schema lacks" for name in by_name]
    order = [a.name for a in schema.arguments if a.name in {p.name for p in params}]
    if [p.name for p in params if p.name in order] != order:
        problems.append(f"argument order {[p.name for p in params]} differs from the wheel's {order}")
    return problems


def compare_with_overloads(fn: Callable, schemas: list[torch._C.FunctionSchema]) -> list[str]:
    """:func:`compare_with_schema` against the overload that fits best (none of them: the problems with the first).
    As ``torch.ops`` resolves overloads by the arguments given, one Python function may stand for a functional op
    and its ``.out`` overload: the ``.out`` schema's written outputs may then default to None (not given = the
    functional overload)."""
    best: list[str] | None = None
    for schema in schemas:
        outputs = {a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write}
        problems = [p for p in compare_with_schema(fn, schema)
                    if not (schema.overload_name == "out" and any(p.startswith(f"{o!r}: default none in the wheel, None")
                                                                  for o in outputs))]
        if best is None or len(problems) < len(best):
            best = problems
    return best if best is not None else ["no such op in the wheel"]


def _same_default(wheel_default: Any, ours: Any) -> bool:
    if isinstance(wheel_default, (list, tuple)) or isinstance(ours, (list, tuple)):
        return list(wheel_default or []) == list(ours or [])
    if isinstance(wheel_default, float) or isinstance(ours, float):
        return ours is not None and abs(float(wheel_default) - float(ours)) <= 1e-12 * max(1.0, abs(float(ours)))
    return wheel_default == ours


def compare_signatures(ours: inspect.Signature, wheel: inspect.Signature) -> list[str]:
    """Python API: the same parameter names, kinds and defaults (``**kwargs`` in the wheel's may be left out)."""
    mine = [(p.name, p.kind, p.default) for p in ours.parameters.values()]
    theirs = [(p.name, p.kind, p.default) for p in wheel.parameters.values() if p.kind is not p.VAR_KEYWORD]
    return [] if mine == theirs else [f"({', '.join(map(str, ours.parameters.values()))}) here, "
                                      f"{wheel} in the wheel"]


@dataclass
class Report:
    """Per checked name: its call sites and the problems found (printed by ``python tests/npu_calls.py``)."""
    sites: dict[str, set[str]] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, site: str, problems: list[str]) -> None:
        self.sites.setdefault(name, set()).add(site)
        self.problems.setdefault(name, [])
        self.problems[name] += [p for p in problems if p not in self.problems[name]]

    def table(self) -> str:
        rows = [f"{'call':52} {'sites':>5}  result"]
        for name in sorted(self.sites):
            rows.append(f"{name:52} {len(self.sites[name]):>5}  {'; '.join(self.problems[name]) or 'fits'}")
        return "\n".join(rows)
