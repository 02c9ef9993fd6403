"""Memory and VM ops: what the lowering passes emit between ``call_tir`` and the bytecode.

Three families, named as in TVM:

* ``relax.builtin.alloc_tensor`` -- a fresh tensor whose storage is not planned yet
  (emitted by ``CallTIRRewrite`` for destination-passing outputs);
* ``relax.memory.*`` -- explicit storage: ``alloc_storage`` makes a block of bytes,
  ``alloc_tensor`` views it as a tensor, ``kill_storage`` / ``kill_tensor`` end lifetimes
  (emitted by ``StaticPlanBlockMemory``, ``LowerAllocTensor``, ``KillAfterLastUse``);
* ``relax.vm.*`` and ``relax.call_builtin_with_ctx`` -- the form the VM code generator reads
  (emitted by ``LowerRuntimeBuiltin``).

Scalar arguments are Relax leaves, as in TVM: sizes and shapes are :class:`ShapeExpr` (or any
shape-typed value), device indices and offsets are :class:`PrimValue`, storage scopes are
:class:`StringImm` and dtypes are :class:`DataTypeImm`. The builders accept plain Python values
for them and wrap them.

``op.memory`` is this module; ``op.builtin`` and ``op.vm`` are namespaces defined here, so the
spelling follows TVM: ``op.builtin.alloc_tensor(...)``, ``op.memory.alloc_storage(...)``,
``op.vm.alloc_storage(...)``, ``op.call_builtin_with_ctx(...)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...expr import IntImm
from .._base import RelaxExpr
from ..expr import Call, DataTypeImm, ExternFunc, PrimValue, StringImm, Tuple
from ..struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ._common import as_shape_expr, make_call
from .registry import InferContext, OpError, register_op

__all__ = [
    "alloc_storage",
    "alloc_tensor",
    "builtin",
    "call_builtin_with_ctx",
    "kill_storage",
    "kill_tensor",
    "vm",
]

_VOID = TupleStructInfo([])


# ---- argument wrapping (builders) -------------------------------------------------------------
def _prim(name: str, param: str, value: Any) -> RelaxExpr:
    """An int (or PrimExpr) as a PrimValue; a Relax expression is kept."""
    if isinstance(value, RelaxExpr):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, IntImm)):
        raise OpError(f"{name}: {param} must be an int or a PrimValue, got {value!r}")
    return PrimValue(value)


def _string(name: str, param: str, value: Any) -> RelaxExpr:
    if isinstance(value, RelaxExpr):
        return value
    if not isinstance(value, str):
        raise OpError(f"{name}: {param} must be a str or a StringImm, got {value!r}")
    return StringImm(value)


def _dtype(name: str, value: Any) -> RelaxExpr:
    if isinstance(value, RelaxExpr):
        return value
    try:
        return DataTypeImm(value)
    except Exception as err:
        raise OpError(f"{name}: invalid dtype {value!r}: {err}") from None


def _shape(name: str, value: Any) -> RelaxExpr:
    return as_shape_expr(name, value)


# ---- inference helpers ------------------------------------------------------------------------
def _check_kind(ctx: InferContext, call: Call, index: int, param: str, kind: type) -> None:
    """Argument ``index`` must be a leaf of node type ``kind`` (StringImm / DataTypeImm)."""
    arg = call.args[index]
    if not isinstance(arg, kind):
        raise ctx.error(f"{param} (argument {index}) must be a {kind.__name__}, got {arg}")


def _check_prim(ctx: InferContext, call: Call, index: int, param: str) -> None:
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, PrimStructInfo):
        raise ctx.error(f"{param} (argument {index}) must be a PrimValue, got {sinfo}")


def _check_shape(ctx: InferContext, call: Call, index: int, param: str) -> ShapeStructInfo:
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, ShapeStructInfo):
        raise ctx.type_error(f"{param} (argument {index}) must be a shape, got {sinfo}")
    return sinfo


def _tensor_of(ctx: InferContext, call: Call, shape_index: int, dtype_index: int) -> StructInfo:
    """A tensor with the shape argument's extents (or rank) and the DataTypeImm's dtype."""
    shape = _check_shape(ctx, call, shape_index, "shape")
    _check_kind(ctx, call, dtype_index, "dtype", DataTypeImm)
    dtype_arg = call.args[dtype_index]
    assert isinstance(dtype_arg, DataTypeImm)  # checked above; narrows the type
    dtype = dtype_arg.value
    if shape.values is not None:
        return TensorStructInfo(list(shape.values), dtype)
    return TensorStructInfo(None, dtype, ndim=shape.ndim)


def _infer_builtin_alloc_tensor(call: Call, ctx: InferContext) -> StructInfo:
    _check_prim(ctx, call, 2, "runtime_device_index")
    if len(call.args) > 3:
        _check_kind(ctx, call, 3, "storage_scope", StringImm)
    return _tensor_of(ctx, call, 0, 1)


def _infer_memory_alloc_storage(call: Call, ctx: InferContext) -> StructInfo:
    _check_shape(ctx, call, 0, "size")
    _check_prim(ctx, call, 1, "virtual_device_index")
    _check_kind(ctx, call, 2, "storage_scope", StringImm)
    _check_kind(ctx, call, 3, "dtype", DataTypeImm)
    return ObjectStructInfo()


def _infer_vm_alloc_storage(call: Call, ctx: InferContext) -> StructInfo:
    _check_shape(ctx, call, 0, "size")
    _check_prim(ctx, call, 1, "runtime_device_index")
    _check_kind(ctx, call, 2, "dtype", DataTypeImm)
    if len(call.args) > 3:
        _check_kind(ctx, call, 3, "storage_scope", StringImm)
    return ObjectStructInfo()


def _infer_alloc_tensor_view(call: Call, ctx: InferContext) -> StructInfo:
    """memory.alloc_tensor / vm.alloc_tensor: (storage, offset, shape, dtype[, device])."""
    storage = ctx.arg_sinfo(call, 0)
    if not isinstance(storage, ObjectStructInfo):
        raise ctx.error(f"storage (argument 0) must be a storage object, got {storage}")
    _check_prim(ctx, call, 1, "offset")
    if len(call.args) > 4:
        _check_prim(ctx, call, 4, "runtime_device_index")
    return _tensor_of(ctx, call, 2, 3)


def _infer_kill(call: Call, ctx: InferContext) -> StructInfo:
    ctx.arg_sinfo(call, 0)
    return _VOID


def _infer_call_tir_dyn(call: Call, ctx: InferContext) -> StructInfo:
    args = ctx.arg_sinfo(call, 1)
    if not isinstance(args, TupleStructInfo) or not args.fields:
        raise ctx.type_error(
            f"args must be a tuple ending with the shape of symbolic values, got {args}"
        )
    if not isinstance(args.fields[-1], ShapeStructInfo):
        raise ctx.type_error(f"the last element of args must be a shape, got {args.fields[-1]}")
    return _VOID


def _infer_call_builtin_with_ctx(call: Call, ctx: InferContext) -> StructInfo:
    if not isinstance(call.args[0], ExternFunc):
        raise ctx.error(f"func must be an ExternFunc, got {type(call.args[0]).__name__}")
    if not isinstance(ctx.arg_sinfo(call, 1), TupleStructInfo):
        raise ctx.type_error(f"args must be a tuple, got {ctx.arg_sinfo(call, 1)}")
    infos = call.sinfo_args
    if len(infos) == 1:
        return infos[0]
    return TupleStructInfo(list(infos)) if infos else ObjectStructInfo()


register_op(
    "relax.builtin.alloc_tensor",
    num_inputs=(3, 4),
    infer=_infer_builtin_alloc_tensor,
    doc="a fresh tensor whose storage is not planned yet "
    "(shape, dtype, runtime_device_index[, storage_scope])",
)
register_op(
    "relax.memory.alloc_storage",
    num_inputs=4,
    infer=_infer_memory_alloc_storage,
    doc="a block of bytes (size, virtual_device_index, storage_scope, dtype)",
)
register_op(
    "relax.memory.alloc_tensor",
    num_inputs=(4, 5),
    infer=_infer_alloc_tensor_view,
    doc="a tensor in a storage (storage, offset, shape, dtype[, runtime_device_index])",
)
register_op(
    "relax.memory.kill_storage",
    num_inputs=1,
    infer=_infer_kill,
    purity=False,
    doc="end a storage's lifetime",
)
register_op(
    "relax.memory.kill_tensor",
    num_inputs=1,
    infer=_infer_kill,
    purity=False,
    doc="end a tensor's lifetime",
)
register_op(
    "relax.vm.alloc_storage",
    num_inputs=(3, 4),
    infer=_infer_vm_alloc_storage,
    doc="vm.builtin.alloc_storage (size, runtime_device_index, dtype[, storage_scope])",
)
register_op(
    "relax.vm.alloc_tensor",
    num_inputs=(4, 5),
    infer=_infer_alloc_tensor_view,
    doc="vm.builtin.alloc_tensor (storage, offset, shape, dtype[, runtime_device_index])",
)
register_op(
    "relax.vm.kill_object",
    num_inputs=1,
    infer=_infer_kill,
    purity=False,
    doc="clear the register holding an object",
)
register_op(
    "relax.vm.call_tir_dyn",
    num_inputs=2,
    infer=_infer_call_tir_dyn,
    purity=False,
    doc="call a PrimFunc with tensors then the values of a trailing shape (func, args)",
)
register_op(
    "relax.call_builtin_with_ctx",
    num_inputs=2,
    infer=_infer_call_builtin_with_ctx,
    purity=False,
    doc="call a packed function with the VM context first (func, args)",
)


# ---- builders: relax.memory.* (module level: this module is ``op.memory``) --------------------
def alloc_storage(
    size: Any,
    virtual_device_index: Any = 0,
    storage_scope: Any = "global",
    dtype: Any = "uint8",
) -> Call:
    """``R.memory.alloc_storage``: a block of ``size`` bytes (a 1-d shape) on a device.

    Parameters
    ----------
    size : ShapeExpr, Relax shape value or sequence of ints
        The number of bytes, as a 1-d shape.
    virtual_device_index : int or PrimValue
        The device (index into the VM's device list; -1 is the host).
    storage_scope : str or StringImm
        The memory scope, ``"global"`` by default.
    dtype : str or DataTypeImm
        A hint for the allocator; the storage itself is untyped bytes.
    """
    name = "relax.memory.alloc_storage"
    return make_call(
        name,
        [
            _shape(name, size),
            _prim(name, "virtual_device_index", virtual_device_index),
            _string(name, "storage_scope", storage_scope),
            _dtype(name, dtype),
        ],
    )


def alloc_tensor(storage: RelaxExpr, offset: Any, shape: Any, dtype: Any) -> Call:
    """``R.memory.alloc_tensor``: a tensor of ``shape`` and ``dtype`` at byte ``offset`` of
    ``storage``."""
    name = "relax.memory.alloc_tensor"
    return make_call(
        name,
        [storage, _prim(name, "offset", offset), _shape(name, shape), _dtype(name, dtype)],
    )


def kill_storage(storage: RelaxExpr) -> Call:
    """``R.memory.kill_storage``: the storage is dead after this point."""
    return make_call("relax.memory.kill_storage", [storage])


def kill_tensor(tensor: RelaxExpr) -> Call:
    """``R.memory.kill_tensor``: the tensor is dead after this point."""
    return make_call("relax.memory.kill_tensor", [tensor])


# ---- builders: relax.builtin.* and relax.vm.* ----------------------------------------------------
def _builtin_alloc_tensor(
    shape: Any, dtype: Any, runtime_device_index: Any = 0, storage_scope: Any = "global"
) -> Call:
    """``R.builtin.alloc_tensor``: a fresh tensor whose storage is still to be planned.

    Parameters
    ----------
    shape : ShapeExpr, Relax shape value or sequence of ints/PrimExprs
    dtype : str or DataTypeImm
    runtime_device_index : int or PrimValue
        The device index in the VM's device list.
    storage_scope : str or StringImm
        The memory scope, ``"global"`` by default.
    """
    name = "relax.builtin.alloc_tensor"
    return make_call(
        name,
        [
            _shape(name, shape),
            _dtype(name, dtype),
            _prim(name, "runtime_device_index", runtime_device_index),
            _string(name, "storage_scope", storage_scope),
        ],
    )


def _vm_alloc_storage(
    size: Any, runtime_device_index: Any = 0, dtype: Any = "uint8", storage_scope: Any = "global"
) -> Call:
    """``R.vm.alloc_storage``: ``vm.builtin.alloc_storage(%vm, size, device, dtype, scope)``."""
    name = "relax.vm.alloc_storage"
    return make_call(
        name,
        [
            _shape(name, size),
            _prim(name, "runtime_device_index", runtime_device_index),
            _dtype(name, dtype),
            _string(name, "storage_scope", storage_scope),
        ],
    )


def _vm_alloc_tensor(storage: RelaxExpr, offset: Any, shape: Any, dtype: Any) -> Call:
    """``R.vm.alloc_tensor``: ``vm.builtin.alloc_tensor(storage, offset, shape, dtype)``."""
    name = "relax.vm.alloc_tensor"
    return make_call(
        name,
        [storage, _prim(name, "offset", offset), _shape(name, shape), _dtype(name, dtype)],
    )


def _vm_kill_object(obj: RelaxExpr) -> Call:
    """``R.vm.kill_object``: clear the register holding ``obj``."""
    return make_call("relax.vm.kill_object", [obj])


def _vm_call_tir_dyn(func: RelaxExpr, args: RelaxExpr | Sequence[RelaxExpr]) -> Call:
    """``R.vm.call_tir_dyn``: call ``func(*tensors, *shape_values)``; ``args`` is a tuple of
    tensors (inputs then outputs) ending with a shape of the symbolic values."""
    packed = args if isinstance(args, RelaxExpr) else Tuple(list(args))
    return make_call("relax.vm.call_tir_dyn", [func, packed])


def call_builtin_with_ctx(
    func: str | RelaxExpr,
    args: RelaxExpr | Sequence[RelaxExpr],
    sinfo_args: StructInfo | Sequence[StructInfo] | None = None,
) -> Call:
    """``R.call_builtin_with_ctx``: call packed ``func(%vm, *args)``; ``sinfo_args`` declares
    the result (none: an object)."""
    name = "relax.call_builtin_with_ctx"
    callee = ExternFunc(func) if isinstance(func, str) else func
    packed = args if isinstance(args, RelaxExpr) else Tuple(list(args))
    if sinfo_args is None:
        infos: list[StructInfo] = []
    elif isinstance(sinfo_args, StructInfo):
        infos = [sinfo_args]
    else:
        infos = list(sinfo_args)
    return make_call(name, [callee, packed], None, infos)


class _Builtin:
    """The ``relax.builtin`` namespace (``op.builtin.alloc_tensor``)."""

    alloc_tensor = staticmethod(_builtin_alloc_tensor)


class _VM:
    """The ``relax.vm`` namespace (``op.vm.alloc_storage`` ...)."""

    alloc_storage = staticmethod(_vm_alloc_storage)
    alloc_tensor = staticmethod(_vm_alloc_tensor)
    kill_object = staticmethod(_vm_kill_object)
    call_tir_dyn = staticmethod(_vm_call_tir_dyn)


#: ``relax.builtin`` ops: ``builtin.alloc_tensor(shape, dtype, runtime_device_index)``.
builtin = _Builtin()
#: ``relax.vm`` ops: ``vm.alloc_storage``, ``vm.alloc_tensor``, ``vm.kill_object``,
#: ``vm.call_tir_dyn``.
vm = _VM()
