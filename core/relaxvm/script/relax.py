"""The ``R`` namespace of the script format: ``from relaxvm.script import relax as R``.

Every operator of :mod:`relaxvm.ir.relax.op` is here under TVM's spelling (``R.add``,
``R.nn.conv2d``, ``R.permute_dims``, ``R.call_tir`` ...), taken from the op package itself, so
an op added there is reachable from scripts without a change here. Besides the ops:

* struct info annotations: ``R.Tensor``, ``R.Shape``, ``R.Prim``, ``R.Tuple``, ``R.Callable``,
  ``R.Object``;
* values: ``R.const``, ``R.shape``, ``R.prim_value``, ``R.str``, ``R.dtype``, ``R.ExternFunc``;
* script structure: ``@R.function``, ``R.dataflow``, ``R.output``, ``R.func_attr``,
  ``R.match_cast``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable as _CallableType
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..errors import VMTypeError
from ..ir import relax as _rx
from ..ir.dtype import parse_dtype
from ..ir.expr import IntImm, PrimExpr
from ..ir.relax import op as _op
from ..ir.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ..ir.relax.vdevice import resolve_vdevice
from ..runtime.device import Device
from ..runtime.dtype import DataType
from . import ir as _I
from ._eval import symbolic_dim

# Saved before `R.str` (TVM's spelling) shadows the builtin in this module.
_builtin_str = str

# Everything in the op package that is not an op builder.
_NOT_OPS = {
    "InferContext",
    "OpError",
    "OpInfo",
    "get_op_info",
    "infer",
    "infer_struct_info",
    "list_ops",
    "register_op",
}
_module = sys.modules[__name__]
for _name in _op.__all__:
    if _name not in _NOT_OPS:
        setattr(_module, _name, getattr(_op, _name))

#: ``R.nn.relu``, ``R.nn.conv2d`` ...
nn = _op.nn


def _is_dtype(text: _builtin_str) -> bool:
    try:
        DataType(text)
    except Exception:
        return False
    return True


#: The relaxvm package directory: frames inside it are the parser's, not the user's.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _annotation_dtype(dtype: Any, where: _builtin_str) -> Any:
    """Check an annotation's dtype string early, with a did-you-mean and, when Python itself
    evaluates the annotation (a model file run as a module, before the script parser sees
    it), the file and line of the caller of ``R.Tensor`` / ``R.Prim``."""
    if not isinstance(dtype, _builtin_str) or dtype in ("", "void"):
        return dtype
    try:
        parse_dtype(dtype, where)
    except VMTypeError as err:
        caller = sys._getframe(2)
        filename = caller.f_code.co_filename
        if os.path.abspath(filename).startswith(_PACKAGE_DIR):
            raise  # the script parser adds the location, with a caret
        raise VMTypeError(f"{filename}:{caller.f_lineno}: {err}") from None
    return dtype


def _vdevice(value: Any, where: _builtin_str = "R.Tensor") -> Device | None:
    # In an @I.ir_module with I.module_global_infos, "cuda:1" is the module's second cuda
    # VDevice (as TVM's lookup_vdevice); elsewhere a device kind names the runtime device.
    if value is None or isinstance(value, Device):
        return value
    if isinstance(value, _builtin_str):
        return resolve_vdevice(value, _I._current_vdevices(), where)
    raise TypeError(f"{where}: vdevice must be a Device or 'kind:index', got {value!r}")


def _dims(values: Any, where: _builtin_str) -> list[Any]:
    if isinstance(values, (_builtin_str, int, PrimExpr)):
        values = (values,)
    dims = [symbolic_dim(value, where) for value in values]
    for index, dim in enumerate(dims):
        # TVM's ShapeExpr rule: a constant is widened to int64, any other dimension must
        # already be int64 (an int32 `n = T.int32()` or a float is a script error there).
        if isinstance(dim, PrimExpr) and not isinstance(dim, IntImm):
            dtype = _builtin_str(dim.dtype)
            if dtype != "int64":
                raise VMTypeError(
                    f"{where}: the value in ShapeStructInfo can only have dtype of int64, but "
                    f"dimension {index} `{dim}` has dtype {dtype}"
                )
    return dims


# ---- struct info annotations -------------------------------------------------------------
def Tensor(
    shape: Any = None, dtype: _builtin_str | None = None, vdevice: Any = None, ndim: int = -1
) -> TensorStructInfo:
    """``R.Tensor((n, 4), "float32")``: a tensor annotation.

    Shape entries are ints, symbolic expressions, or strings naming symbolic variables
    (``"n"``, ``"n * 2"``); ``R.Tensor("float32", ndim=2)`` gives only dtype and rank.
    """
    if isinstance(shape, _builtin_str) and dtype is None and _is_dtype(shape):
        shape, dtype = None, shape
    dtype = _annotation_dtype(dtype, "R.Tensor")
    if shape is not None and not isinstance(shape, (_rx.ShapeExpr, _rx.Var)):
        shape = _dims(shape, "R.Tensor shape")
    return TensorStructInfo(shape, dtype, ndim=ndim, vdevice=_vdevice(vdevice))


def Shape(values: Any = None, ndim: int = -1) -> ShapeStructInfo:
    """``R.Shape([n, 4])`` or ``R.Shape(ndim=2)``: a shape-value annotation."""
    return ShapeStructInfo(None if values is None else _dims(values, "R.Shape"), ndim=ndim)


def Prim(dtype: _builtin_str | None = None, value: Any = None) -> PrimStructInfo:
    """``R.Prim("int64")`` or ``R.Prim(value="n")``: a scalar annotation."""
    dtype = _annotation_dtype(dtype, "R.Prim")
    if isinstance(value, _builtin_str):
        value = symbolic_dim(value, "R.Prim value")
    if dtype is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        from ..ir.op import const as _const

        value = _const(value, dtype)
    return PrimStructInfo(dtype, value)


def Tuple(*fields: Any) -> TupleStructInfo:
    """``R.Tuple(R.Tensor(...), R.Shape(...))``: a tuple annotation."""
    if len(fields) == 1 and isinstance(fields[0], (list, tuple)):
        fields = tuple(fields[0])
    return TupleStructInfo([as_struct_info(field, "R.Tuple field") for field in fields])


def Callable(
    params: Sequence[Any] | None = None, ret: Any = None, purity: bool = True
) -> FuncStructInfo:
    """``R.Callable([R.Tensor((4,), "float32")], R.Tensor((4,), "float32"))``."""
    ret_info = ObjectStructInfo() if ret is None else as_struct_info(ret, "R.Callable ret")
    if params is None:
        return FuncStructInfo(None, ret_info, purity)
    infos = [as_struct_info(p, f"R.Callable parameter {i}") for i, p in enumerate(params)]
    return FuncStructInfo(infos, ret_info, purity)


def Object() -> ObjectStructInfo:
    """``R.Object``: any value."""
    return ObjectStructInfo()


_BARE: dict[Any, _CallableType[[], StructInfo]] = {
    Tensor: Tensor,
    Shape: Shape,
    Object: Object,
    Tuple: Tuple,
    Callable: Callable,
}


def as_struct_info(value: Any, where: _builtin_str) -> StructInfo:
    """An annotation value as StructInfo: ``R.Tensor`` (not called) means any tensor."""
    if isinstance(value, StructInfo):
        return value
    if value in _BARE:
        return _BARE[value]()
    raise TypeError(
        f'{where}: expected a struct info annotation such as R.Tensor((n, 4), "float32"), '
        f'R.Shape, R.Prim("int64"), R.Tuple(...), R.Callable(...) or R.Object, got {value!r}'
    )


# ---- values -------------------------------------------------------------------------------
def const(value: Any, dtype: _builtin_str | None = None) -> _rx.Constant:
    """``R.const(1.0, "float32")``: a constant tensor (numpy array or Python value)."""
    return _rx.const(value, dtype)


def shape(values: Any) -> _rx.ShapeExpr:
    """``R.shape([n, 4])``: a shape value."""
    return _rx.ShapeExpr(_dims(values, "R.shape"))


def prim_value(value: Any) -> _rx.PrimValue:
    """``R.prim_value(1)`` or ``R.prim_value(n)``: a scalar value."""
    return _rx.PrimValue(symbolic_dim(value, "R.prim_value"))


def str(value: Any) -> _rx.StringImm:
    """``R.str("text")``: a string value."""
    return _rx.StringImm(value)


def dtype(value: Any) -> _rx.DataTypeImm:
    """``R.dtype("float32")``: a data type value."""
    return _rx.DataTypeImm(value)


def ExternFunc(name: Any, struct_info: Any = None) -> _rx.ExternFunc:
    """``R.ExternFunc("my_func")``: a packed function by name; ``struct_info`` (an
    ``R.Callable(...)``) states its signature, opaque and impure when omitted."""
    if struct_info is not None:
        struct_info = as_struct_info(struct_info, "R.ExternFunc struct_info")
    return _rx.ExternFunc(name, struct_info)


def to_vdevice(data: Any, dst_vdevice: Any) -> _rx.Call:
    """``R.to_vdevice(x, "cpu:0")``: copy to another device (a Device or ``"kind:index"``)."""
    target = _vdevice(dst_vdevice, "R.to_vdevice")
    if target is None:
        raise TypeError('R.to_vdevice: dst_vdevice is required, e.g. "cpu:0"')
    return _op.to_vdevice(data, target)


def call_tir(gvar: Any, args: Any, out_sinfo: Any, tir_vars: Any = None) -> _rx.Call:
    """``R.call_tir(cls.kernel, (x, y), out_sinfo=R.Tensor((n, 4), "float32"))``."""
    return _op.call_tir(gvar, _args(args), _out(out_sinfo), _tir_vars(tir_vars))


def call_tir_inplace(
    gvar: Any, args: Any, inplace_indices: Any, out_sinfo: Any, tir_vars: Any = None
) -> _rx.Call:
    """``R.call_tir_inplace(cls.kernel, (x, y), inplace_indices=[0], out_sinfo=...)``."""
    return _op.call_tir_inplace(
        gvar, _args(args), inplace_indices, _out(out_sinfo), _tir_vars(tir_vars)
    )


def call_dps_packed(func: Any, args: Any, out_sinfo: Any) -> _rx.Call:
    """``R.call_dps_packed("name", (x,), out_sinfo=R.Tensor(...))``."""
    return _op.call_dps_packed(func, _args(args), _out(out_sinfo))


def call_packed(func: Any, *args: Any, sinfo_args: Any = ()) -> _rx.Call:
    """``R.call_packed("name", x, y, sinfo_args=R.Tensor(...))``.

    Python ints, floats, strings and tuples among ``args`` become Relax values as in TVM
    (``R.prim_value``, ``R.str``, ``R.tuple``)."""
    infos = sinfo_args if sinfo_args in ((), []) else _out(sinfo_args)
    return _op.call_packed(func, *[_value(a) for a in args], sinfo_args=infos)


def call_pure_packed(func: Any, *args: Any, sinfo_args: Any) -> _rx.Call:
    """``R.call_pure_packed("name", x, sinfo_args=R.Tensor(...))`` (arguments converted as in
    :func:`call_packed`)."""
    return _op.call_pure_packed(func, *[_value(a) for a in args], sinfo_args=_out(sinfo_args))


def call_inplace_packed(func: Any, *args: Any, inplace_indices: Any, sinfo_args: Any) -> _rx.Call:
    """``R.call_inplace_packed("name", x, inplace_indices=[0], sinfo_args=R.Tensor(...))``
    (arguments converted as in :func:`call_packed`)."""
    values = [_value(a) for a in args]
    return _op.call_inplace_packed(
        func, *values, inplace_indices=inplace_indices, sinfo_args=_out(sinfo_args)
    )


def emit_te(func: Any, *args: Any, **kwargs: Any) -> _rx.Call:
    """``R.emit_te(te_func, *args, primfunc_name_hint=None, **kwargs)`` in an ``@I.ir_module``
    class: build a PrimFunc from the TE function (``te.create_prim_func``), add it to the module
    (named ``primfunc_name_hint`` or after ``te_func``) and call it with ``R.call_tir``.

    The script parser handles the call; outside a script it is an error.
    """
    raise RuntimeError("R.emit_te may only appear inside an @R.function of an @I.ir_module class")


def _value(value: Any) -> Any:
    """TVM's ``convert_to_expr`` for the Python values a script passes as call arguments."""
    from ._relax_values import _convert_to_expr

    if isinstance(value, _rx.RelaxExpr):
        return value
    if isinstance(value, (list, tuple)):
        return _rx.Tuple([_value(item) for item in value])
    converted = _convert_to_expr(value)
    return value if converted is None else converted


def _args(args: Any) -> Any:
    if isinstance(args, (list, tuple)):
        return [_value(a) for a in args]
    # A single non-tuple value is the one argument, as TVM's call_tir / call_dps_packed wrap it.
    if isinstance(args, _rx.RelaxExpr) and not isinstance(args.struct_info, TupleStructInfo):
        return [args]
    return args


def _out(out_sinfo: Any) -> Any:
    if isinstance(out_sinfo, (list, tuple)):
        return [as_struct_info(s, "out_sinfo") for s in out_sinfo]
    return as_struct_info(out_sinfo, "out_sinfo")


def _tir_vars(tir_vars: Any) -> Any:
    if tir_vars is None or isinstance(tir_vars, _rx.RelaxExpr):
        return tir_vars
    return shape(tir_vars)


# ---- script structure ---------------------------------------------------------------------
class MatchCastValue(NamedTuple):
    """What ``R.match_cast(value, sinfo)`` evaluates to; the parser emits a MatchCast."""

    value: Any
    struct_info: StructInfo


def match_cast(value: Any, struct_info: Any) -> MatchCastValue:
    """``y = R.match_cast(x, R.Tensor((m, n), "float32"))``: check at run time, and define
    the symbolic variables that appear for the first time."""
    if not isinstance(value, _rx.RelaxExpr):
        raise TypeError(f"R.match_cast: the value must be a Relax expression, got {value!r}")
    return MatchCastValue(value, as_struct_info(struct_info, "R.match_cast"))


class _Dataflow:
    def __repr__(self) -> _builtin_str:
        return "R.dataflow()"


_DATAFLOW = _Dataflow()


def dataflow() -> _Dataflow:
    """``with R.dataflow():`` opens a dataflow block (only inside a script)."""
    return _DATAFLOW


def output(*values: Any) -> None:
    """``R.output(a, b)`` ends a dataflow block, naming the variables visible after it."""
    raise RuntimeError("R.output may only appear as the last statement of `with R.dataflow()`")


def func_attr(attrs: dict[_builtin_str, Any]) -> None:
    """``R.func_attr({"key": value})``: function attributes (a statement of the body)."""
    raise RuntimeError("R.func_attr may only appear as a statement of a function body")


def function(
    func: Any = None, *, private: bool = False, pure: bool = True, check_well_formed: bool = True
) -> Any:
    """``@R.function``: parse a Python function as a Relax function.

    Inside an ``@I.ir_module`` class the function is returned unchanged (the module parses the
    whole class); elsewhere it is parsed from its source and a
    :class:`~relaxvm.ir.relax.Function` is returned.
    """
    from ._entry import decorate

    options = {"private": private, "pure": pure, "check_well_formed": check_well_formed}
    if func is None:
        return lambda f: decorate(f, "relax", options, depth=1)
    return decorate(func, "relax", options, depth=1)


# ---- unknown names ---------------------------------------------------------------------------
#: Tells the script parser that the AttributeError below already explains the miss (with the
#: did-you-mean), so it reports that message at the right line.
_explains_missing_attributes = True


def _namespace_names() -> dict[_builtin_str, _builtin_str]:
    """Every public name reachable as ``R.<name>`` or ``R.<sub>.<name>`` -> its spelling."""
    module = sys.modules[__name__]
    names: dict[_builtin_str, _builtin_str] = {}
    submodules = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, type(sys)):
            if value.__name__.startswith("relaxvm."):
                submodules.append(name)
            continue
        names[name] = f"R.{name}"
    for sub in submodules:
        for name in getattr(getattr(module, sub), "__all__", ()):
            names.setdefault(f"{sub}.{name}", f"R.{sub}.{name}")
    return names


def __getattr__(name: _builtin_str) -> Any:
    """``R.sofmax``: an AttributeError suggesting ``R.nn.softmax`` (submodules searched)."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import difflib

    names = _namespace_names()
    # Compare with the last component too, so that a name in a submodule is found.
    leaves: dict[_builtin_str, list[_builtin_str]] = {}
    for key, spelling in names.items():
        leaves.setdefault(key.rsplit(".", 1)[-1], []).append(spelling)
    close = [s for leaf in difflib.get_close_matches(name, list(leaves), n=3) for s in leaves[leaf]]
    hint = f"; did you mean {' or '.join(dict.fromkeys(close[:3]))}?" if close else ""
    raise AttributeError(
        f"unknown op or function 'R.{name}'{hint}",
        name=name,
        obj=sys.modules[__name__],
    )
