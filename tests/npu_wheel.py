"""The torch-npu wheel that ``requirements-ascend.txt`` pins, read as data: never installed, never imported.

What it gives the tests (tests/test_torch_npu_wheel.py):

- :func:`op_schemas`: every op callable as ``torch_npu.<name>``, as ``torch._C.FunctionSchema`` objects parsed by
  torch's own schema parser. Two sources, as the wheel itself wires them up:
  ``torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml`` (the ``npu`` namespace; torch_npu's
  ``_init/core/_exports.py`` copies every ``torch.ops.npu.<op>`` to ``torch_npu.<op>``), and the ATB ops that
  ``torch_npu/op_plugin/atb/_atb_ops.py`` lists in ``API_LIST`` (copied from ``torch.ops.atb``); the ATB ops of its
  ``ATB_API_LIST`` live in the ``torch_npu.atb`` namespace instead (``torch_npu.atb.npu_ring_mla``, asked for here
  as ``"atb.npu_ring_mla"``). The ATB schemas are registered from C++ inside ``torch_npu/lib/libop_plugin_atb.so``:
  the compiler builds most schema strings in place, 16 bytes at a time, from constants in ``.rodata``, and keeps the
  others (``npu_ring_mla``'s) whole there. :func:`atb_schemas` reassembles the first from ``objdump``'s disassembly
  (binutils), reads the second as NUL-terminated strings, and cross-checks each top-level one against its C++
  declaration in ``AtbOpsInterface.h`` (argument names, order and mutability; the ``torch_npu.atb`` ops' C++
  parameter names differ from their schemas', e.g. ``kernel_type_opt``).
- :func:`python_signature`: ``torch.npu.<name>`` (and ``torch.npu.<Class>.<method>``) as an ``inspect.Signature``
  built with :mod:`ast` from the wheel's ``torch_npu/npu/*.py``.
- :func:`meta_functions`: the wheel's meta (shape and dtype) functions, ``torch_npu/op_plugin/meta/
  _meta_registrations.py``, executed in a sandbox. The file registers its functions with
  ``@impl(Library("npu", "IMPL", "Meta"), name)`` and imports a few torch_npu helpers; the sandbox runs its source
  with its own ``__import__`` that hands it a recording ``impl`` (nothing reaches torch's dispatcher), a ``torch``
  whose ``torch.ops`` accepts any op name (a few module-level lines name npu ops), and a ``torch_npu`` whose
  attributes are fresh sentinels (``x_dtype == torch_npu.hifloat8`` is then False, as for a native dtype).
  Every other name (``torch.empty``, ``torch._check``, ...) is real torch, so the functions run on meta tensors.
- :func:`op_docs`: the ``_op_plugin_docs.py`` text of each op, the release's documentation.

The wheel is found through ``MINI_PLATFORM_TORCH_NPU_WHEEL`` (a path to the .whl) or in
``${XDG_CACHE_HOME:-~/.cache}/mini-platform/wheels`` (where ``.ci/run`` downloads it);
:func:`wheel_path` returns None when it is in neither place.
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import os
import re
import shutil
import subprocess
import tempfile
import types
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
ENV_VAR = "MINI_PLATFORM_TORCH_NPU_WHEEL"
NATIVE_YAML = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
ATB_OPS_PY = "torch_npu/op_plugin/atb/_atb_ops.py"
ATB_LIBRARY = "torch_npu/lib/libop_plugin_atb.so"
ATB_HEADER = "torch_npu/include/third_party/op-plugin/op_plugin/include/AtbOpsInterface.h"
META_PY = "torch_npu/op_plugin/meta/_meta_registrations.py"
DOCS_PY = "torch_npu/_op_plugin_docs.py"
NPU_PACKAGE = "torch_npu/npu"


def pinned_version() -> str:
    """The torch-npu release ``requirements-ascend.txt`` pins (``torch-npu==X``)."""
    text = (ROOT / "requirements-ascend.txt").read_text()
    match = re.search(r"^torch-npu==(\S+)", text, re.MULTILINE)
    if match is None:
        raise ValueError("requirements-ascend.txt pins no torch-npu==VERSION")
    return match.group(1)


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mini-platform" / "wheels"


def download_command() -> str:
    return (f"python -m pip download torch-npu=={pinned_version()} --no-deps --only-binary=:all: "
            f"-d {cache_dir()}")


def wheel_path() -> Path | None:
    """The pinned wheel: ``$MINI_PLATFORM_TORCH_NPU_WHEEL``, else the newest match in :func:`cache_dir`."""
    if os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
        if not path.is_file():
            raise FileNotFoundError(f"{ENV_VAR}={path} is not a file; point it at torch_npu-*.whl or unset it")
        return path
    found = sorted(cache_dir().glob(f"torch_npu-{pinned_version()}-*.whl"))
    return found[-1] if found else None


class Wheel:
    """One torch-npu wheel, opened as a zip file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.version = path.name.split("-")[1]

    def text(self, name: str) -> str:
        return self.zip.read(name).decode()

    # -- op schemas ------------------------------------------------------------------------------------------------
    @functools.cached_property
    def native_schemas(self) -> dict[str, list[torch._C.FunctionSchema]]:
        """Base name -> its overloads, from the codegen yaml (``- func: S`` or ``  func: S``; the ``symint:`` section
        repeats some, deduplicated)."""
        seen: dict[tuple[str, str], torch._C.FunctionSchema] = {}
        for match in re.finditer(r"^(?:- |  )func: (.+)$", self.text(NATIVE_YAML), re.MULTILINE):
            text = match.group(1).strip()
            if "(" not in text:
                continue   # an aten op torch_npu re-implements (``func: clone``), not one of its own
            schema = torch._C.parse_schema(text)
            if str(seen.setdefault((schema.name, schema.overload_name), schema)) != str(schema):
                raise ValueError(f"{NATIVE_YAML}: two different schemas for {schema.name}.{schema.overload_name}")
        return _by_name(seen.values())

    @functools.cached_property
    def atb_top_level(self) -> list[str]:
        """The ATB ops torch_npu puts at top level (``API_LIST`` in ``_atb_ops.py``; the rest live in ``torch_npu.atb``)."""
        for node in _parse(self.text(ATB_OPS_PY), ATB_OPS_PY).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "API_LIST":
                return list(ast.literal_eval(node.value))
        raise ValueError(f"{ATB_OPS_PY} has no API_LIST")

    @functools.cached_property
    def atb_namespace(self) -> list[str]:
        """The ATB ops of ``torch_npu.atb`` (``ATB_API_LIST`` in ``_atb_ops.py``)."""
        for node in _parse(self.text(ATB_OPS_PY), ATB_OPS_PY).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "ATB_API_LIST":
                return list(ast.literal_eval(node.value))
        raise ValueError(f"{ATB_OPS_PY} has no ATB_API_LIST")

    @functools.cached_property
    def atb_schemas(self) -> dict[str, list[torch._C.FunctionSchema]]:
        """The schemas ``libop_plugin_atb.so`` registers, reassembled or read whole (see the module docstring);
        each checked against its C++ declaration."""
        with tempfile.TemporaryDirectory() as tmp:
            library = Path(tmp) / "libop_plugin_atb.so"   # a lone file, not a torch_npu/ package
            library.write_bytes(self.zip.read(ATB_LIBRARY))
            texts = [text for text in _inline_strings(library) if _SCHEMA.match(text)] + _whole_schema_strings(
                library.read_bytes())
        unique: dict[tuple[str, str], torch._C.FunctionSchema] = {}
        for text in texts:
            schema = torch._C.parse_schema(text)
            unique.setdefault((schema.name, schema.overload_name), schema)
        declared = _cpp_declarations(self.text(ATB_HEADER))
        for schema in unique.values():   # the header's names are the Python keywords only for the top-level ops
            if schema.name in declared and schema.name in self.atb_top_level and not schema.overload_name:
                _check_against_declaration(schema, declared[schema.name])
        return _by_name(unique.values())

    def op_schemas(self, name: str) -> list[torch._C.FunctionSchema]:
        """The overloads of ``torch_npu.<name>`` (``"atb.<op>"``: of ``torch_npu.atb.<op>``); empty when the wheel has
        no such op there."""
        if name.startswith("atb."):
            return self.atb_schemas.get(name[4:], []) if name[4:] in self.atb_namespace else []
        if name in self.atb_top_level:
            return self.atb_schemas.get(name, [])
        return self.native_schemas.get(name, [])

    # -- the torch.npu Python API ------------------------------------------------------------------------------------
    @functools.cached_property
    def _npu_exports(self) -> dict[str, str]:
        """Name -> module file for every ``from .module import name`` in ``torch_npu/npu/__init__.py``; a star import
        (``from ._backends import *``) exports the module's ``__all__`` or else its public top-level definitions."""
        exports = {}
        for node in self._ast(f"{NPU_PACKAGE}/__init__.py").body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                source = f"{NPU_PACKAGE}/{node.module.replace('.', '/')}.py"
                for alias in node.names:
                    if alias.name != "*":
                        exports[alias.asname or alias.name] = source
                    elif source in self.zip.namelist():
                        exports.update(dict.fromkeys(_star_exports(self._ast(source)), source))
        return exports

    @functools.lru_cache(maxsize=None)
    def _ast(self, name: str) -> ast.Module:
        return _parse(self.text(name), name)

    def python_signatures(self, dotted: str) -> list[inspect.Signature]:
        """``torch.npu.f`` -> [its signature]; a class -> the signatures of its ``__new__`` and ``__init__`` (a call
        must fit both); ``torch.npu.C.m`` -> [the method's] (without ``self``). Empty when the wheel has none."""
        name, _, method = dotted.removeprefix("torch.npu.").partition(".")
        source = self._npu_exports.get(name)
        if source is None:
            return []
        node = _top_level(self._ast(source), name)
        if node is None:
            return []
        if isinstance(node, ast.FunctionDef):
            return [] if method else [_signature(node)]
        wanted = [method] if method else ["__new__", "__init__"]
        return [_signature(item, drop_first=True) for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name in wanted]

    # -- meta functions and docs -----------------------------------------------------------------------------------
    @functools.cached_property
    def meta_functions(self) -> dict[str, Callable]:
        """``"npu_rms_norm"`` (or ``"npu_grouped_matmul.List"``) -> its meta function, run in the sandbox."""
        return _run_meta_registrations(self.text(META_PY))

    @functools.cached_property
    def op_docs(self) -> dict[str, str]:
        """Op name -> its documentation text in ``_op_plugin_docs.py`` (the ``_add_torch_npu_docstr`` calls)."""
        docs = {}
        for node in ast.walk(_parse(self.text(DOCS_PY), DOCS_PY)):
            if isinstance(node, ast.Call) and len(node.args) == 2 and all(
                    isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
                docs[node.args[0].value] = node.args[1].value
        return docs


def _parse(source: str, name: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)      # the wheel's docstrings hold invalid escapes
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source, name)


def _by_name(schemas) -> dict[str, list[torch._C.FunctionSchema]]:
    table: dict[str, list[torch._C.FunctionSchema]] = {}
    for schema in schemas:
        table.setdefault(schema.name, []).append(schema)
    return table


# -- ATB: the schema strings inside libop_plugin_atb.so ------------------------------------------------------------

_SCHEMA = re.compile(r"^[A-Za-z_][\w.]*\(.*\) -> .+$")
_LINE = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)\s+(.*)$")
_LOAD_XMM = re.compile(r"^(xmm\d+),XMMWORD PTR \[rip\+0x[0-9a-f]+\]\s+# ([0-9a-f]+)")
_STORE_XMM = re.compile(r"^XMMWORD PTR \[rax(?:\+0x([0-9a-f]+))?\],(xmm\d+)$")
_STORE = re.compile(r"^(QWORD|DWORD|WORD|BYTE) PTR \[rax(?:\+0x([0-9a-f]+))?\],(\w+)$")
_SIZES = {"QWORD": 8, "DWORD": 4, "WORD": 2, "BYTE": 1}


def _inline_strings(library: Path) -> list[str]:
    """Strings built in place after each ``operator new`` (``_Znwm``): the 16-byte ``.rodata`` constants loaded
    into ``xmm`` registers and the immediates stored at ``[rax+offset]``, laid out by offset up to the NUL byte.
    A buffer with a gap (a byte no store wrote) is dropped."""
    if shutil.which("objdump") is None:
        raise RuntimeError("objdump (binutils) is needed to read the ATB schemas out of libop_plugin_atb.so; "
                           "install binutils (apt-get install binutils)")
    data = library.read_bytes()
    listing = subprocess.run(["objdump", "-d", "-M", "intel", "--no-show-raw-insn", str(library)],
                             capture_output=True, text=True, check=True).stdout
    # The PLT stub of operator new: the 16-byte-aligned stub holding the jump through _Znwm's slot.
    stub = re.search(r"^\s*([0-9a-f]+):\s+jmp\s+QWORD PTR \[rip\+0x[0-9a-f]+\]\s+# [0-9a-f]+ <_Znwm@", listing, re.MULTILINE)
    if stub is None:
        raise RuntimeError(f"{library.name}: no PLT stub for operator new (_Znwm) in the disassembly")
    new_address = format(int(stub.group(1), 16) & ~0xF, "x")
    strings, buffer, xmm, regs = [], {}, {}, {}

    def finish() -> None:
        if buffer and 0 in buffer:
            raw = bytes(buffer.get(i, 0xFF) for i in range(max(buffer) + 1)).split(b"\0")[0]
            if 0xFF not in raw:
                strings.append(raw.decode("ascii", "replace"))

    for line in listing.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        op, args = match.groups()
        if op == "call" and args.split()[0] == new_address:
            finish()
            buffer = {}
        elif op in ("movdqa", "movdqu", "movaps", "movups") and (m := _LOAD_XMM.match(args)):
            address = int(m.group(2), 16)
            xmm[m.group(1)] = data[address:address + 16]
        elif op in ("movdqa", "movdqu", "movaps", "movups") and (m := _STORE_XMM.match(args)):
            if m.group(2) in xmm:
                buffer.update(zip(range(int(m.group(1) or "0", 16), 1 << 30), xmm[m.group(2)]))
        elif op == "movabs" and (m := re.match(r"^(\w+),0x([0-9a-f]+)$", args)):
            regs[m.group(1)] = int(m.group(2), 16).to_bytes(8, "little")
        elif op == "mov" and (m := _STORE.match(args)):
            size, offset, value = _SIZES[m.group(1)], int(m.group(2) or "0", 16), m.group(3)
            raw = (int(value, 16).to_bytes(size, "little") if value.startswith("0x")
                   else regs.get(value, b"")[:size] if value in regs else None)
            if raw is not None and len(raw) == size:
                buffer.update(zip(range(offset, offset + size), raw))
    finish()
    return strings


_WHOLE_SCHEMA = re.compile(rb"(?<=\x00)([A-Za-z_][\w.]*\((?:Tensor|int|float|bool|str|SymInt)[^\x00]*\) -> [^\x00]+)\x00")


def _whole_schema_strings(data: bytes) -> list[str]:
    """Schema strings the library keeps whole in ``.rodata`` (NUL-terminated) that torch's parser accepts."""
    found = []
    for match in _WHOLE_SCHEMA.finditer(data):
        text = match.group(1).decode("ascii", "replace")
        try:
            torch._C.parse_schema(text)
        except RuntimeError:
            continue      # bytes that only look like a schema (several strings run together)
        found.append(text)
    return found


def _cpp_declarations(header: str) -> dict[str, list[tuple[str, str]]]:
    """``TORCH_NPU_API <ret> name(<params>);`` -> [(C++ type, argument name)]."""
    table = {}
    for match in re.finditer(r"TORCH_NPU_API\s+[\w:&<>, ]+?\s*&?\s*(\w+)\s*\(([^;]*)\)\s*;", header):
        params = []
        for part in _split_top_level(match.group(2)):
            m = re.match(r"^(.*?)(\w+)$", part.strip())
            if m:
                params.append((re.sub(r"\s+", "", m.group(1)), m.group(2)))   # "constat::Tensor&", "at::Tensor&"
        table[match.group(1)] = params
    return table


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char == "<") - (char == ">")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in parts + [current] if p.strip()]


def _check_against_declaration(schema: torch._C.FunctionSchema, params: list[tuple[str, str]]) -> None:
    """The reassembled schema names the C++ declaration's arguments in order; a non-const ``at::Tensor&`` is the
    schema's mutated ``Tensor(a!)``. Raises if not: the reassembly would then be wrong."""
    names = [a.name for a in schema.arguments]
    if names != [name for _, name in params]:
        raise ValueError(f"reassembled schema {schema} does not match its C++ declaration {params}")
    for arg, (cpp_type, _) in zip(schema.arguments, params):
        mutated = cpp_type == "at::Tensor&"
        if mutated != bool(arg.alias_info and arg.alias_info.is_write):
            raise ValueError(f"{schema.name}: {arg.name} is {cpp_type} in C++ but {arg.type} in the schema")


# -- Python signatures from the AST ------------------------------------------------------------------------------------

def _star_exports(module: ast.Module) -> list[str]:
    """What ``from module import *`` binds: its literal ``__all__``, or its public top-level functions and classes."""
    for node in module.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return [name for name in ast.literal_eval(node.value) if isinstance(name, str)]
            except ValueError:
                break
    return [node.name for node in module.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")]


def _top_level(tree: ast.Module, name: str) -> ast.FunctionDef | ast.ClassDef | None:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
    return None


class SourceDefault:
    """A default the AST holds as an expression, not a literal (compared by its source text)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SourceDefault) and other.text == self.text

    def __repr__(self) -> str:
        return self.text


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return SourceDefault(ast.unparse(node))


def _signature(node: ast.FunctionDef, drop_first: bool = False) -> inspect.Signature:
    a = node.args
    P = inspect.Parameter
    positional = [(arg, P.POSITIONAL_ONLY) for arg in a.posonlyargs] + [(arg, P.POSITIONAL_OR_KEYWORD) for arg in a.args]
    defaults = [P.empty] * (len(positional) - len(a.defaults)) + [_literal(d) for d in a.defaults]
    params = [P(arg.arg, kind, default=default) for (arg, kind), default in zip(positional, defaults)]
    if drop_first:
        params = params[1:]
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    params += [P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else _literal(d))
               for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


# -- the meta functions, run in a sandbox -----------------------------------------------------------------------------

class _AnyOps:
    """``torch.ops`` for the sandbox: any ``torch.ops.ns.op.overload`` is a placeholder."""

    def __getattr__(self, name: str) -> "_AnyOps":
        return _AnyOps()


class _Sentinels(types.ModuleType):
    """A stand-in module: each attribute is a fresh object equal only to itself."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Sentinel(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _Sentinel(_Sentinels):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"the meta sandbox does not provide {self.__name__}()")


def _run_meta_registrations(source: str) -> dict[str, Callable]:
    registered: dict[str, Callable] = {}

    class Library:
        def __init__(self, namespace: str, kind: str, key: str = "") -> None:
            self.namespace = namespace

    def impl(library: Library, name: str) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            if library.namespace == "npu":
                registered[name] = fn
            return fn
        return register

    sandbox_torch = types.ModuleType("torch")
    sandbox_torch.__getattr__ = lambda name: getattr(torch, name)   # module __getattr__ (PEP 562)
    sandbox_torch.ops = _AnyOps()
    library = types.ModuleType("torch.library")
    library.Library, library.impl = Library, impl
    fx_node = types.ModuleType("torch.fx.node")
    fx_node.has_side_effect = lambda op: None
    error_code = types.ModuleType("torch_npu.utils._error_code")
    error_code.ErrCode, error_code.ops_error = _Sentinels("ErrCode"), lambda *args: ""
    fakes = {"torch": sandbox_torch, "torch.library": library, "torch.fx.node": fx_node,
             "torch_npu.utils._error_code": error_code}

    def sandbox_import(name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if name in fakes:
            return fakes[name] if fromlist or "." not in name else fakes[name.split(".")[0]]
        if name == "torch_npu" or name.startswith("torch_npu."):
            return _Sentinels(name)
        return builtins.__import__(name, globals_, locals_, fromlist, level)

    namespace = {"__name__": "torch_npu.op_plugin.meta._meta_registrations",
                 "__builtins__": {**vars(builtins), "__import__": sandbox_import}}
    exec(compile(_parse(source, META_PY), META_PY, "exec"), namespace)
    return registered


@functools.lru_cache(maxsize=None)
def open_wheel(path: Path) -> Wheel:
    return Wheel(path)
