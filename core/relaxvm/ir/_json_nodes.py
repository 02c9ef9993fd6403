"""The node kinds :mod:`relaxvm.ir.json_io` can write and read, each under a fixed name.

Every entry of :data:`NODE_KINDS` maps a type name used in documents (``"relax.Var"``,
``"tir.Add"``) to how a node of that kind is taken apart (its fields, as Python values) and
rebuilt (through the class's own constructor, which checks the values). Loading looks type
names up in this table only: a document can never name a class, module or function of its
own choosing.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..runtime.creation import tensor as make_tensor
from ..runtime.device import Device
from ..runtime.dtype import DataType
from . import expr_nodes as en
from .expr import FloatImm, IntImm, Range, SizeVar
from .expr import Var as TirVar
from .global_info import DummyGlobalInfo
from .relax import struct_info as si
from .relax.block import (
    BindingBlock,
    DataflowBlock,
    Function,
    MatchCast,
    SeqExpr,
    VarBinding,
)
from .relax.expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    If,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from .relax.module import IRModule
from .relax.vdevice import VDevice
from .tir.block import Block, BlockRealize, BufferRegion, IterVar, MatchBufferRegion
from .tir.buffer import Buffer, BufferLoad
from .tir.function import PrimFunc
from .tir.intrin import Call as TirCall
from .tir.let_expr import Let as TirLet
from .tir.stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
)

__all__ = ["NODE_KINDS", "NodeKind", "kind_of"]

Fields = dict[str, Any]


class NodeKind:
    """How one kind of node is written (``encode``) and rebuilt (``decode``).

    ``fields`` are the field names a document must give, all of them and no others.
    """

    __slots__ = ("cls", "decode", "encode", "fields")

    def __init__(
        self,
        cls: type,
        fields: tuple[str, ...],
        encode: Callable[[Any], Fields],
        decode: Callable[[Fields], Any],
    ) -> None:
        self.cls = cls
        self.fields = fields
        self.encode = encode
        self.decode = decode


def _attrs(cls: type, names: tuple[str, ...]) -> NodeKind:
    """A kind whose fields are attributes of the same names, rebuilt by keyword (tuple fields
    are written as lists)."""

    def encode(node: Any) -> Fields:
        values = {name: getattr(node, name) for name in names}
        return {k: list(v) if type(v) is tuple else v for k, v in values.items()}

    def decode(fields: Fields) -> Any:
        # Back to tuples: an index list ``A[[i, j]]`` would mean something else.
        return cls(**{k: tuple(v) if type(v) is list else v for k, v in fields.items()})

    return NodeKind(cls, names, encode, decode)


def _dtype(value: Any) -> str | None:
    return None if value is None else str(value)


# ---- symbolic expressions -------------------------------------------------------------------
def _operands(cls: type) -> NodeKind:
    names = cls._operand_names  # type: ignore[attr-defined]
    return NodeKind(
        cls,
        names,
        lambda node: {name: getattr(node, name) for name in names},
        lambda f: cls(*(f[name] for name in names)),
    )


def _tir_var(cls: type) -> NodeKind:
    return NodeKind(
        cls,
        ("name", "dtype"),
        lambda n: {"name": n.name, "dtype": str(n.dtype)},
        lambda f: cls(f["name"], f["dtype"]),
    )


def _range_decode(f: Fields) -> Range:
    return Range.from_min_extent(f["min"], f["extent"])


_PRIM_KINDS: dict[str, NodeKind] = {
    "tir.Var": _tir_var(TirVar),
    "tir.SizeVar": _tir_var(SizeVar),
    "tir.IntImm": NodeKind(
        IntImm,
        ("dtype", "value"),
        lambda n: {"dtype": str(n.dtype), "value": n.value},
        lambda f: IntImm(_checked_str(f["dtype"], "dtype"), _checked_int(f["value"], "value")),
    ),
    "tir.FloatImm": NodeKind(
        FloatImm,
        ("dtype", "value"),
        lambda n: {"dtype": str(n.dtype), "value": float(n.value)},
        lambda f: FloatImm(_checked_str(f["dtype"], "dtype"), _checked_float(f["value"])),
    ),
    "tir.Cast": NodeKind(
        en.Cast,
        ("dtype", "value"),
        lambda n: {"dtype": str(n.dtype), "value": n.value},
        lambda f: en.Cast(f["dtype"], f["value"]),
    ),
    "tir.Call": NodeKind(
        TirCall,
        ("dtype", "op", "args"),
        lambda n: {"dtype": str(n.dtype), "op": n.op, "args": list(n.args)},
        lambda f: TirCall(f["dtype"], f["op"], f["args"]),
    ),
    "tir.BufferLoad": _attrs(BufferLoad, ("buffer", "indices")),
    "tir.Let": _attrs(TirLet, ("var", "value", "body")),
    "ir.Range": NodeKind(
        Range, ("min", "extent"), lambda n: {"min": n.min, "extent": n.extent}, _range_decode
    ),
}
for _cls in (
    en.Add, en.Sub, en.Mul, en.Div, en.Mod, en.FloorDiv, en.FloorMod, en.Min, en.Max,
    en.EQ, en.NE, en.LT, en.LE, en.GT, en.GE, en.And, en.Or, en.Not, en.Select,
):  # fmt: skip
    _PRIM_KINDS[f"tir.{_cls.__name__}"] = _operands(_cls)


# ---- TIR statements and functions -----------------------------------------------------------
def _buffer_encode(node: Buffer) -> Fields:
    return {
        "name": node.name,
        "shape": list(node.shape),
        "dtype": str(node.dtype),
        "strides": list(node.strides),
        "elem_offset": node.elem_offset,
        "scope": node.scope,
        "data": node.data,
    }


def _prim_func_encode(node: PrimFunc) -> Fields:
    return {
        "params": list(node.params),
        "body": node.body,
        "buffer_map": dict(node.buffer_map),
        "attrs": dict(node.attrs),
    }


def _for_encode(node: For) -> Fields:
    return {
        "loop_var": node.loop_var,
        "min": node.min,
        "extent": node.extent,
        "kind": int(node.kind),
        "body": node.body,
        "thread_binding": node.thread_binding,
        "annotations": dict(node.annotations or {}),
    }


def _iter_var_encode(node: IterVar) -> Fields:
    return {"dom": node.dom, "var": node.var, "iter_type": int(node.iter_type)}


_BLOCK_FIELDS = (
    "iter_vars", "reads", "writes", "name_hint", "body", "init", "alloc_buffers",
    "match_buffers", "annotations",
)  # fmt: skip

_TIR_KINDS: dict[str, NodeKind] = {
    "tir.Buffer": NodeKind(
        Buffer,
        ("name", "shape", "dtype", "strides", "elem_offset", "scope", "data"),
        _buffer_encode,
        lambda f: Buffer(**f),
    ),
    "tir.BufferStore": _attrs(BufferStore, ("buffer", "value", "indices")),
    "tir.For": NodeKind(
        For,
        ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations"),
        _for_encode,
        lambda f: For(**f),
    ),
    "tir.LetStmt": _attrs(LetStmt, ("var", "value", "body")),
    "tir.IfThenElse": _attrs(IfThenElse, ("condition", "then_case", "else_case")),
    "tir.Allocate": _attrs(Allocate, ("buffer", "body")),
    "tir.DeclBuffer": _attrs(DeclBuffer, ("buffer", "body")),
    "tir.Evaluate": _attrs(Evaluate, ("value",)),
    "tir.SeqStmt": _attrs(SeqStmt, ("seq",)),
    "tir.IterVar": NodeKind(
        IterVar, ("dom", "var", "iter_type"), _iter_var_encode, lambda f: IterVar(**f)
    ),
    "tir.BufferRegion": _attrs(BufferRegion, ("buffer", "region")),
    "tir.MatchBufferRegion": _attrs(MatchBufferRegion, ("buffer", "source")),
    "tir.Block": _attrs(Block, _BLOCK_FIELDS),
    "tir.BlockRealize": _attrs(BlockRealize, ("iter_values", "predicate", "block")),
    "tir.PrimFunc": NodeKind(
        PrimFunc,
        ("params", "body", "buffer_map", "attrs"),
        _prim_func_encode,
        lambda f: PrimFunc(**f),
    ),
}


# ---- Relax expressions ----------------------------------------------------------------------
def _named(cls: type, name_field: str) -> NodeKind:
    return NodeKind(
        cls,
        (name_field, "struct_info"),
        lambda n: {name_field: getattr(n, name_field), "struct_info": n.struct_info},
        lambda f: cls(f[name_field], f["struct_info"]),
    )


def _constant_encode(node: Constant) -> Fields:
    data = node.data
    raw = np.ascontiguousarray(data.numpy_storage())
    if raw.dtype.byteorder == ">":  # documents hold little-endian bytes
        raw = raw.astype(raw.dtype.newbyteorder("<"))
    return {
        "dtype": str(data.dtype),
        "shape": list(data.shape),
        "data": base64.b64encode(raw.tobytes()).decode("ascii"),
        "struct_info": node.struct_info,
    }


def _constant_decode(f: Fields) -> Constant:
    dtype = DataType(_checked_str(f["dtype"], "dtype"))
    shape = f["shape"]
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ValueError(f"shape must be a list of non-negative ints, got {shape!r}")
    try:
        raw = base64.b64decode(_checked_str(f["data"], "data"), validate=True)
    except binascii.Error as err:
        raise ValueError(f"data is not valid base64: {err}") from None
    storage = np.dtype(dtype.numpy_dtype()).newbyteorder("<")
    expected = math.prod(shape) * storage.itemsize
    if len(raw) != expected:
        raise ValueError(
            f"data holds {len(raw)} bytes, but a {dtype} tensor of shape {tuple(shape)} needs "
            f"{expected}"
        )
    array = np.frombuffer(raw, dtype=storage).reshape(shape).astype(storage.newbyteorder("="))
    if dtype.is_float8:
        # The bytes are float8 codes: keep them bit for bit.
        from ..runtime.creation import _from_host

        return Constant(_from_host(array, dtype, None), f["struct_info"])
    return Constant(make_tensor(array, dtype=dtype), f["struct_info"])


def _call_encode(node: Call) -> Fields:
    return {
        "op": node.op,
        "args": list(node.args),
        "attrs": None if node.attrs is None else dict(node.attrs),
        "sinfo_args": list(node.sinfo_args),
        "struct_info": node.struct_info,
    }


def _function_encode(node: Function) -> Fields:
    return {
        "params": list(node.params),
        "body": node.body,
        "ret_struct_info": node.ret_struct_info,
        "is_pure": node.is_pure,
        "attrs": dict(node.attrs),
    }


def _module_encode(node: IRModule) -> Fields:
    # Functions sorted by name, so that equal modules give equal documents.
    pairs = sorted(node.functions.items(), key=lambda item: item[0].name_hint)
    infos = getattr(node, "global_infos", {})
    return {
        "functions": [list(pair) for pair in pairs],
        "attrs": dict(node.attrs),
        "global_infos": {name: list(values) for name, values in sorted(infos.items())},
    }


def _module_decode(f: Fields) -> IRModule:
    functions = f["functions"]
    if not isinstance(functions, list) or not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], GlobalVar) for p in functions
    ):
        raise ValueError("functions must be a list of [GlobalVar, function] pairs")
    infos = f["global_infos"]
    if not isinstance(infos, dict):
        raise ValueError("global_infos must be a $dict of names to lists of global infos")
    if not infos:  # the common case, and the constructor's default
        return IRModule({gvar: func for gvar, func in functions}, f["attrs"])
    return IRModule({gvar: func for gvar, func in functions}, f["attrs"], global_infos=infos)


_RELAX_KINDS: dict[str, NodeKind] = {
    "relax.Var": _named(Var, "name_hint"),
    "relax.DataflowVar": _named(DataflowVar, "name_hint"),
    "relax.GlobalVar": _named(GlobalVar, "name_hint"),
    "relax.ExternFunc": _named(ExternFunc, "global_symbol"),
    "relax.Op": NodeKind(
        Op, ("name",), lambda n: {"name": n.name}, lambda f: Op.get(_checked_str(f["name"], "name"))
    ),
    "relax.Constant": NodeKind(
        Constant, ("dtype", "shape", "data", "struct_info"), _constant_encode, _constant_decode
    ),
    "relax.ShapeExpr": _attrs(ShapeExpr, ("values",)),
    "relax.PrimValue": _attrs(PrimValue, ("value",)),
    "relax.StringImm": _attrs(StringImm, ("value",)),
    "relax.DataTypeImm": NodeKind(
        DataTypeImm,
        ("value",),
        lambda n: {"value": str(n.value)},
        lambda f: DataTypeImm(_checked_str(f["value"], "value")),
    ),
    "relax.Tuple": _attrs(Tuple, ("fields",)),
    "relax.TupleGetItem": _attrs(TupleGetItem, ("tuple_value", "index")),
    "relax.Call": NodeKind(
        Call,
        ("op", "args", "attrs", "sinfo_args", "struct_info"),
        _call_encode,
        lambda f: Call(**f),
    ),
    "relax.If": _attrs(If, ("cond", "true_branch", "false_branch", "struct_info")),
    "relax.SeqExpr": _attrs(SeqExpr, ("blocks", "body")),
    "relax.Function": NodeKind(
        Function,
        ("params", "body", "ret_struct_info", "is_pure", "attrs"),
        _function_encode,
        lambda f: Function(**f),
    ),
    "relax.BindingBlock": _attrs(BindingBlock, ("bindings",)),
    "relax.DataflowBlock": _attrs(DataflowBlock, ("bindings",)),
    "relax.VarBinding": _attrs(VarBinding, ("var", "value")),
    "relax.MatchCast": _attrs(MatchCast, ("var", "value", "struct_info")),
    "ir.IRModule": NodeKind(
        IRModule, ("functions", "attrs", "global_infos"), _module_encode, _module_decode
    ),
    "ir.DummyGlobalInfo": NodeKind(DummyGlobalInfo, (), lambda n: {}, lambda f: DummyGlobalInfo()),
}


# ---- struct info and devices ----------------------------------------------------------------
def _tensor_sinfo_encode(node: si.TensorStructInfo) -> Fields:
    return {
        "shape": node.shape,
        "dtype": _dtype(node.dtype),
        "vdevice": node.vdevice,
        "ndim": node.ndim,
    }


def _vdevice_encode(node: VDevice) -> Fields:
    target = node.target
    return {
        "target": target if target is None or isinstance(target, str) else str(target),
        "vdevice_id": node.device_id,
        "memory_scope": node.memory_scope,
    }


_SINFO_KINDS: dict[str, NodeKind] = {
    "relax.ObjectStructInfo": NodeKind(
        si.ObjectStructInfo, (), lambda n: {}, lambda f: si.ObjectStructInfo()
    ),
    "relax.PrimStructInfo": NodeKind(
        si.PrimStructInfo,
        ("dtype", "value"),
        lambda n: {"dtype": str(n.dtype), "value": n.value},
        lambda f: si.PrimStructInfo(**f),
    ),
    "relax.ShapeStructInfo": NodeKind(
        si.ShapeStructInfo,
        ("values", "ndim"),
        lambda n: {"values": None if n.values is None else list(n.values), "ndim": n.ndim},
        lambda f: si.ShapeStructInfo(**f),
    ),
    "relax.TensorStructInfo": NodeKind(
        si.TensorStructInfo,
        ("shape", "dtype", "vdevice", "ndim"),
        _tensor_sinfo_encode,
        # A known shape gives the rank; passing both is what the constructor rejects.
        lambda f: si.TensorStructInfo(
            f["shape"], f["dtype"], f["vdevice"], -1 if f["shape"] is not None else f["ndim"]
        ),
    ),
    "relax.TupleStructInfo": _attrs(si.TupleStructInfo, ("fields",)),
    "relax.FuncStructInfo": NodeKind(
        si.FuncStructInfo,
        ("params", "ret", "purity"),
        lambda n: {
            "params": None if n.params is None else list(n.params),
            "ret": n.ret,
            "purity": n.purity,
        },
        lambda f: si.FuncStructInfo(f["params"], f["ret"], _checked_bool(f["purity"])),
    ),
    "relax.VDevice": NodeKind(
        VDevice, ("target", "vdevice_id", "memory_scope"), _vdevice_encode, lambda f: VDevice(**f)
    ),
    "runtime.Device": NodeKind(
        Device,
        ("device_type", "device_id"),
        lambda n: {"device_type": n.device_type, "device_id": n.device_id},
        lambda f: Device(**f),
    ),
}

#: Type name in documents -> how that kind of node is written and read.
NODE_KINDS: dict[str, NodeKind] = {**_PRIM_KINDS, **_TIR_KINDS, **_RELAX_KINDS, **_SINFO_KINDS}
_BY_CLASS: dict[type, str] = {kind.cls: name for name, kind in NODE_KINDS.items()}


def kind_of(value: Any) -> str | None:
    """The type name a node is written under, or None when ``value`` is not a known node.

    An exact class match first; otherwise the nearest registered base, only where the base's
    fields describe the subclass completely (TIR intrinsic calls, rebuilt through
    ``tir.Call``, which picks the subclass again from the intrinsic's name).
    """
    cls = type(value)
    name = _BY_CLASS.get(cls)
    if name is None and isinstance(value, TirCall):
        name = "tir.Call"
    return name


# ---- checks on plain values of a document -----------------------------------------------------
def _checked_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {value!r}")
    return value


def _checked_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return value


def _checked_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"value must be a number, got {value!r}")
    return float(value)


def _checked_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"purity must be true or false, got {value!r}")
    return value
