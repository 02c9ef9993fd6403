"""``relax.hint_on_device``, ``relax.call_inplace_packed`` and ``relax.dynamic_strided_slice``,
as TVM v0.23's ``relax.op``.

The hint names the device a value should live on, for TVM's RealizeVDevice pass to propagate.
Its struct info is its input's (TVM's inference does not apply the device), and relaxvm's
legalization replaces the call by its input.

``call_inplace_packed`` is structural: RemovePurityChecking (or the VM code generator) turns it
into the plain call of its packed function, which returns the arguments it overwrote.

``dynamic_strided_slice`` takes its bounds and steps as tensors, so only the rank of its result
is known before it runs; it is legalized to a runtime function that returns a new tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....runtime.device import Device, device
from ....runtime.dtype import DataTypeCode
from ...expr import IntImm
from .._base import RelaxExpr
from ..expr import Call, ExternFunc
from ..struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from ._common import dims_text, make_call, prove_equal, prove_not_equal, tensor
from .registry import InferContext, OpError, register_op

__all__ = ["call_inplace_packed", "dynamic_strided_slice", "hint_on_device"]


def _infer_hint_on_device(call: Call, ctx: InferContext) -> StructInfo:
    # A tensor only (TVM reads the argument as a unary op's tensor input).
    return ctx.tensor_arg(call, 0, "data")


register_op(
    "relax.hint_on_device",
    num_inputs=1,
    infer=_infer_hint_on_device,
    attrs={
        "dst_vdevice": "the Device the data should live on",
        "memory_scope": 'the memory scope there ("global" by default)',
    },
    doc="a hint of the device of a value (no computation)",
)


def hint_on_device(
    data: RelaxExpr, dst_vdevice: Device | str, memory_scope: str = "global"
) -> Call:
    """Hint that ``data`` should be placed on ``dst_vdevice``.

    Parameters
    ----------
    data : RelaxExpr
        A tensor.
    dst_vdevice : Device or str
        The device it should live on, or its ``"kind:index"`` spelling (``"cuda:0"``), as
        the printer writes it.
    memory_scope : str, optional
        The memory scope on that device (``"global"`` by default).

    Returns
    -------
    Call
        A ``relax.hint_on_device`` call with ``data``'s struct info.

    Raises
    ------
    OpError
        When ``dst_vdevice`` is not a Device (or its spelling) or ``memory_scope`` not a
        non-empty string.
    """
    name = "relax.hint_on_device"
    if isinstance(dst_vdevice, str):
        kind, _, index = dst_vdevice.partition(":")
        try:
            dst_vdevice = device(kind, int(index or 0))
        except (ValueError, TypeError) as err:
            raise OpError(
                f"{name}: dst_vdevice must be a Device or 'kind:index', got {dst_vdevice!r}"
            ) from err
    if not isinstance(dst_vdevice, Device):
        raise OpError(f"{name}: dst_vdevice must be a Device, got {dst_vdevice!r}")
    if not isinstance(memory_scope, str) or not memory_scope:
        raise OpError(f"{name}: memory_scope must be a non-empty string, got {memory_scope!r}")
    return make_call(name, [data], {"dst_vdevice": dst_vdevice, "memory_scope": memory_scope})


# ---- call_inplace_packed ------------------------------------------------------------------------
def _check_inplace_output(
    ctx: InferContext, out_index: int, arg_index: int, out: StructInfo, arg: StructInfo
) -> None:
    """An output written into argument ``arg_index`` must be a tensor like that argument."""
    where = f"inplace_indices[{out_index}] = {arg_index}"
    if not isinstance(out, TensorStructInfo):
        raise ctx.type_error(f"output {out_index} ({where}) must be a tensor, got {out}")
    if not isinstance(arg, TensorStructInfo):
        raise ctx.type_error(f"argument {arg_index} ({where}) must be a tensor, got {arg}")
    if out.dtype is not None and arg.dtype is not None and out.dtype != arg.dtype:
        raise ctx.type_error(
            f"output {out_index} has dtype {out.dtype} but argument {arg_index}, which it "
            f"overwrites, has dtype {arg.dtype}"
        )
    if out.ndim != -1 and arg.ndim != -1 and out.ndim != arg.ndim:
        raise ctx.error(
            f"output {out_index} with shape {dims_text(out)} cannot overwrite argument "
            f"{arg_index} with shape {dims_text(arg)}"
        )
    outs, args = out.shape_values, arg.shape_values
    if outs is None or args is None:
        return
    for a, b in zip(outs, args, strict=True):
        if not prove_equal(ctx, a, b) and prove_not_equal(ctx, a, b):
            raise ctx.error(
                f"output {out_index} with shape {dims_text(out)} cannot overwrite argument "
                f"{arg_index} with shape {dims_text(arg)}"
            )


def _infer_call_inplace_packed(call: Call, ctx: InferContext) -> StructInfo:
    if not isinstance(call.args[0], ExternFunc):
        raise ctx.error(f"the callee must be an ExternFunc, got {type(call.args[0]).__name__}")
    if len(call.sinfo_args) != 1:
        raise ctx.error(
            f"needs exactly one struct info argument for the result, got {len(call.sinfo_args)}"
        )
    result = call.sinfo_args[0]
    outs = result.fields if isinstance(result, TupleStructInfo) else (result,)
    indices = list(ctx.attr(call, "inplace_indices", ()))
    nargs = len(call.args) - 1
    if len(indices) != len(outs):
        raise ctx.error(
            f"inplace_indices {indices} must name one argument (or -1) per output, and there "
            f"are {len(outs)} outputs"
        )
    if all(index == -1 for index in indices):
        raise ctx.error(
            "at least one of inplace_indices must name an argument (else use call_pure_packed)"
        )
    seen: set[int] = set()
    for out_index, arg_index in enumerate(indices):
        if arg_index == -1:
            continue
        if not 0 <= arg_index < nargs:
            raise ctx.error(
                f"inplace_indices[{out_index}] = {arg_index} is not an argument index (there "
                f"are {nargs} arguments)"
            )
        if arg_index in seen:
            raise ctx.error(f"argument {arg_index} is named twice in inplace_indices {indices}")
        seen.add(arg_index)
        arg = ctx.arg_sinfo(call, arg_index + 1)
        _check_inplace_output(ctx, out_index, arg_index, outs[out_index], arg)
    return result


register_op(
    "relax.call_inplace_packed",
    num_inputs=(1, None),
    infer=_infer_call_inplace_packed,
    attrs={"inplace_indices": "the argument each output is written into, or -1 for a new one"},
    doc="call a packed function that overwrites some of its arguments and returns them",
)


def call_inplace_packed(
    func: str | RelaxExpr,
    *args: RelaxExpr,
    inplace_indices: int | Sequence[int],
    sinfo_args: StructInfo | Sequence[StructInfo],
) -> Call:
    """Call packed function ``func``, which writes some results into its arguments.

    The call is pure to the rest of the program (as TVM's): the caller promises the
    overwritten arguments are not used after it.

    Parameters
    ----------
    func : str or RelaxExpr
        The packed function's global symbol (or an :class:`ExternFunc`).
    *args : RelaxExpr
        Its arguments.
    inplace_indices : int or sequence of int
        For each output, the index in ``args`` of the argument it is written into (and
        returned as), or -1 for an output the function allocates. At least one must name an
        argument, none twice.
    sinfo_args : StructInfo or sequence of StructInfo
        The result: several make a tuple. An in-place output must be like its argument.

    Returns
    -------
    Call
        A ``relax.call_inplace_packed`` call.

    Raises
    ------
    OpError
        When ``inplace_indices`` is not an int or a sequence of ints.
    """
    name = "relax.call_inplace_packed"
    if isinstance(inplace_indices, int) and not isinstance(inplace_indices, bool):
        indices = [inplace_indices]
    elif isinstance(inplace_indices, Sequence) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in inplace_indices
    ):
        indices = list(inplace_indices)
    else:
        raise OpError(
            f"{name}: inplace_indices must be an int or a sequence of ints, got {inplace_indices!r}"
        )
    if isinstance(sinfo_args, StructInfo):
        infos = [sinfo_args]
    elif isinstance(sinfo_args, Sequence) and all(isinstance(s, StructInfo) for s in sinfo_args):
        # As call_pure_packed: several struct infos make a tuple result.
        infos = [sinfo_args[0] if len(sinfo_args) == 1 else TupleStructInfo(list(sinfo_args))]
    else:
        raise OpError(
            f"{name}: sinfo_args must be a StructInfo or a list of them, got {sinfo_args!r}"
        )
    callee = ExternFunc(func) if isinstance(func, str) else func
    return make_call(name, [callee, *args], {"inplace_indices": indices}, infos)


# ---- dynamic_strided_slice ----------------------------------------------------------------------
_SLICE_PARAMS = ("begin", "end", "strides")


def _infer_dynamic_strided_slice(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    for index, what in enumerate(_SLICE_PARAMS, start=1):
        param = ctx.tensor_arg(call, index, what)
        if param.dtype is not None and param.dtype.code not in (
            DataTypeCode.INT,
            DataTypeCode.UINT,
        ):
            raise ctx.type_error(f"{what} must have an integer dtype, got {param.dtype}")
        if param.ndim not in (-1, 1):
            raise ctx.error(f"{what} must be a 1-d tensor, got shape {dims_text(param)}")
        values = param.shape_values
        if values is not None and info.ndim != -1:
            length = values[0]
            if isinstance(length, IntImm) and length.value != info.ndim:
                raise ctx.error(
                    f"{what} must have one value per axis of x (rank {info.ndim}), got shape "
                    f"{dims_text(param)}"
                )
    # The extents depend on the values of begin, end and strides: only the rank is known.
    return tensor(None, info.dtype, info.ndim, like=info)


register_op(
    "relax.dynamic_strided_slice",
    num_inputs=4,
    infer=_infer_dynamic_strided_slice,
    doc="strided slice with run-time begin, end and strides (1-d int tensors)",
)


def dynamic_strided_slice(
    x: RelaxExpr, begin: RelaxExpr, end: RelaxExpr, strides: RelaxExpr
) -> Call:
    """Slice every axis of ``x`` with bounds and steps known only at run time.

    Axis ``i`` is sliced as numpy's ``x[begin[i]:end[i]:strides[i]]``: negative bounds count
    from the end, and bounds out of range are clamped (as ``strided_slice``).

    Parameters
    ----------
    x : RelaxExpr
        The tensor to slice.
    begin, end, strides : RelaxExpr
        1-d integer tensors with one value per axis of ``x``; no stride may be 0 (checked
        at run time).

    Returns
    -------
    Call
        A ``relax.dynamic_strided_slice`` call: a tensor of ``x``'s rank and dtype whose
        extents are known only at run time.
    """
    return make_call("relax.dynamic_strided_slice", [x, begin, end, strides])
