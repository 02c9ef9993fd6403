"""Kernel signatures: what a compiled kernel expects, as plain data.

A :class:`KernelSignature` is built from a ``PrimFunc`` at compile time and stored as JSON
in exported modules, so the argument checks of a reloaded kernel are exactly those of the
freshly built one. Shape, stride and offset expressions are encoded as small JSON trees:
an ``int``, ``["v", k]`` for the k-th symbolic variable, or ``[op, a, b]``.

The native calling convention follows from it::

    int32 symbol(ptr buf_0, ..., ptr buf_m, i64 var_0, ..., i64 var_n)

with one data pointer per buffer parameter (in parameter order) and one ``i64`` per symbolic
variable (scalar parameters and variables bound from buffer shapes or strides, in
:attr:`KernelSignature.var_names` order). The return value is 0 on success.

The signature also records which buffers the kernel writes (:attr:`BufferParam.written`: the
kernel's body stores into them) and whether its buffer arguments are ``noalias``
(:attr:`KernelSignature.noalias`, TVM's ``tir.noalias``, true by default), so a direct call
can refuse read-only outputs and outputs overlapping another argument before native code
runs. Data without these fields (older exports) reads as "every buffer written, noalias",
the conservative choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from relaxvm.ir import (
    Add,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Sub,
    Var,
)
from relaxvm.ir.tir import BufferStore, PrimFunc, StmtVisitor
from relaxvm.runtime.dtype import DataType

from .errors import LLVMBuildError

__all__ = ["BufferParam", "KernelSignature", "ScalarParam", "assign_symbols", "signature_of"]

_OPS: dict[type, str] = {
    Add: "add",
    Sub: "sub",
    Mul: "mul",
    FloorDiv: "floordiv",
    FloorMod: "floormod",
    Div: "truncdiv",
    Mod: "truncmod",
    Min: "min",
    Max: "max",
}
_PY_FORMS = {
    "add": "({a} + {b})",
    "sub": "({a} - {b})",
    "mul": "({a} * {b})",
    "floordiv": "({a} // {b})",
    "floormod": "({a} % {b})",
    "truncdiv": "_truncdiv({a}, {b})",
    "truncmod": "_truncmod({a}, {b})",
    "min": "min({a}, {b})",
    "max": "max({a}, {b})",
}
ExprData = Any  # int | list


@dataclass(frozen=True)
class BufferParam:
    """A buffer parameter: element type, shape, strides (None: compact), offset, and whether
    the kernel writes it (an output; unknown counts as written)."""

    name: str
    dtype: str
    shape: tuple[ExprData, ...]
    strides: tuple[ExprData, ...] | None
    elem_offset: ExprData
    written: bool = True

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)


@dataclass(frozen=True)
class ScalarParam:
    """An integer scalar parameter, the ``var``-th symbolic variable."""

    name: str
    dtype: str
    var: int


@dataclass(frozen=True)
class KernelSignature:
    """The parameters of one compiled kernel and the symbol of its native entry point."""

    name: str
    symbol: str
    params: tuple[BufferParam | ScalarParam, ...]
    var_names: tuple[str, ...]
    var_dtypes: tuple[str, ...]
    #: Buffer arguments never overlap (the native code assumes so: LLVM ``noalias``).
    noalias: bool = True

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible dict (see :meth:`from_json`)."""
        params = []
        for p in self.params:
            if isinstance(p, BufferParam):
                params.append(
                    {
                        "kind": "buffer",
                        "name": p.name,
                        "dtype": p.dtype,
                        "shape": list(p.shape),
                        "strides": None if p.strides is None else list(p.strides),
                        "elem_offset": p.elem_offset,
                        "written": p.written,
                    }
                )
            else:
                params.append({"kind": "scalar", "name": p.name, "dtype": p.dtype, "var": p.var})
        return {
            "name": self.name,
            "symbol": self.symbol,
            "params": params,
            "var_names": list(self.var_names),
            "var_dtypes": list(self.var_dtypes),
            "noalias": self.noalias,
        }

    @classmethod
    def from_json(cls, data: Any) -> KernelSignature:
        """Rebuild a signature, validating every field.

        Raises
        ------
        ValueError, TypeError, KeyError
            Malformed data (the loader turns these into ExecutableFormatError).
        """
        var_names = tuple(_str(v) for v in data["var_names"])
        var_dtypes = tuple(str(DataType(_str(v))) for v in data["var_dtypes"])
        if len(var_names) != len(var_dtypes):
            raise ValueError("var_names and var_dtypes differ in length")
        nvars = len(var_names)
        params: list[BufferParam | ScalarParam] = []
        for p in data["params"]:
            dtype = str(DataType(_str(p["dtype"])))
            if p["kind"] == "buffer":
                shape = tuple(_check_expr(e, nvars) for e in p["shape"])
                strides = p["strides"]
                if strides is not None:
                    strides = tuple(_check_expr(e, nvars) for e in strides)
                    if len(strides) != len(shape):
                        raise ValueError("strides and shape differ in length")
                offset = _check_expr(p["elem_offset"], nvars)
                written = _bool(p.get("written", True), "written")
                params.append(BufferParam(_str(p["name"]), dtype, shape, strides, offset, written))
            elif p["kind"] == "scalar":
                var = p["var"]
                if not isinstance(var, int) or not 0 <= var < nvars:
                    raise ValueError(f"scalar parameter variable {var!r} out of range")
                params.append(ScalarParam(_str(p["name"]), dtype, var))
            else:
                raise ValueError(f"unknown parameter kind {p['kind']!r}")
        symbol = _str(data["symbol"])
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol):
            raise ValueError(f"bad symbol {symbol!r}")
        noalias = _bool(data.get("noalias", True), "noalias")
        return cls(_str(data["name"]), symbol, tuple(params), var_names, var_dtypes, noalias)


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _check_expr(data: Any, nvars: int) -> ExprData:
    if isinstance(data, bool):
        raise TypeError("a bool is not an expression")
    if isinstance(data, int):
        return data
    if isinstance(data, list) and len(data) == 2 and data[0] == "v":
        if not isinstance(data[1], int) or not 0 <= data[1] < nvars:
            raise ValueError(f"variable index {data[1]!r} out of range")
        return data
    if isinstance(data, list) and len(data) == 3 and data[0] in _PY_FORMS:
        return [data[0], _check_expr(data[1], nvars), _check_expr(data[2], nvars)]
    raise ValueError(f"malformed expression {data!r}")


def encode_expr(expr: PrimExpr, var_index: dict[Var, int], where: str) -> ExprData:
    """Encode a shape/stride expression over the signature's variables."""
    if isinstance(expr, IntImm):
        return int(expr.value)
    if isinstance(expr, Var):
        if expr not in var_index:
            raise LLVMBuildError(f"{where}: variable {expr.name!r} is not bound by any parameter")
        return ["v", var_index[expr]]
    op = _OPS.get(type(expr))
    if op is None:
        raise LLVMBuildError(f"{where}: `{expr}` is not supported in a buffer signature")
    binary: Any = expr  # one of the _OPS node types, all with operands a and b
    return [op, encode_expr(binary.a, var_index, where), encode_expr(binary.b, var_index, where)]


def expr_source(data: ExprData, env: str = "v", local: bool = False) -> str:
    """Python source computing an encoded expression from the list ``env`` of variables
    (``local``: from local variables named ``<env><k>`` instead)."""
    if isinstance(data, int):
        return str(data)
    if data[0] == "v":
        return f"{env}{data[1]}" if local else f"{env}[{data[1]}]"
    return _PY_FORMS[data[0]].format(
        a=expr_source(data[1], env, local), b=expr_source(data[2], env, local)
    )


def expr_text(data: ExprData, names: tuple[str, ...]) -> str:
    """Readable text of an encoded expression (for error messages)."""
    if isinstance(data, int):
        return str(data)
    if data[0] == "v":
        return names[data[1]]
    return _PY_FORMS[data[0]].format(a=expr_text(data[1], names), b=expr_text(data[2], names))


def sanitize_symbol(name: str) -> str:
    """A C identifier derived from ``name``, prefixed so it never shadows a libc symbol."""
    return "__rvm_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def assign_symbols(names: list[str]) -> list[str]:
    """One distinct symbol per kernel name, in order: :func:`sanitize_symbol`, with ``_2``,
    ``_3``... appended where two names sanitize alike. The code generator and the compile
    cache's check of an entry both use this, so they always agree on the symbols."""
    used: set[str] = set()
    symbols = []
    for name in names:
        symbol = base = sanitize_symbol(name)
        serial = 1
        while symbol in used:
            serial += 1
            symbol = f"{base}_{serial}"
        used.add(symbol)
        symbols.append(symbol)
    return symbols


def signature_of(func: PrimFunc, name: str, symbol: str) -> tuple[KernelSignature, list[Var]]:
    """The signature of ``func`` and the Var objects of its variables, in order.

    Raises
    ------
    LLVMBuildError
        A buffer's shape uses a variable bound by no parameter, or an unsupported expression.
    """
    where = f"llvm target: kernel {name!r}"
    variables: list[Var] = []
    index: dict[Var, int] = {}

    def add(var: Var) -> None:
        if var not in index:
            index[var] = len(variables)
            variables.append(var)

    for param in func.params:
        if param not in func.buffer_map:
            add(param)
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None:
            continue
        for extent in (*buffer.shape, *buffer.strides):
            if isinstance(extent, Var):
                add(extent)
    stores = _StoredHandles()
    stores.visit_stmt(func.body)
    params: list[BufferParam | ScalarParam] = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None:
            params.append(ScalarParam(param.name, str(param.dtype), index[param]))
            continue
        bwhere = f"{where}: buffer {buffer.name!r}"
        if buffer.dtype.lanes != 1:
            raise LLVMBuildError(f"{bwhere}: vector element type {buffer.dtype} is not supported")
        params.append(
            BufferParam(
                buffer.name,
                str(buffer.dtype),
                tuple(encode_expr(e, index, bwhere) for e in buffer.shape),
                tuple(encode_expr(e, index, bwhere) for e in buffer.strides)
                if buffer.strides
                else None,
                encode_expr(buffer.elem_offset, index, bwhere),
                written=buffer.data in stores.handles,
            )
        )
    signature = KernelSignature(
        name=name,
        symbol=symbol,
        params=tuple(params),
        var_names=tuple(v.name for v in variables),
        var_dtypes=tuple(str(v.dtype) for v in variables),
        # The codegen's rule (codegen.generate_kernel_ir): noalias unless the function opts out.
        noalias=func.attrs.get("tir.noalias", True) is not False,
    )
    return signature, variables


class _StoredHandles(StmtVisitor):
    """The handles (``Buffer.data`` variables) that some ``BufferStore`` writes through.

    TIR has no other way to write memory (no intrinsic takes a handle), so a parameter whose
    handle is never stored to is read-only for the kernel.
    """

    def __init__(self) -> None:
        self.handles: set[Var] = set()

    def visit_buffer_store_(self, stmt: BufferStore) -> None:
        self.handles.add(stmt.buffer.data)
        super().visit_buffer_store_(stmt)
