"""The operator registry: per-op metadata and StructInfo inference, keyed by op name.

Each Relax operator (``relax.add``, ``relax.nn.conv2d`` ...) registers an :class:`OpInfo`
once, when this package is imported: how many arguments it takes, whether it is pure, the
attributes it understands and the function that infers its result's StructInfo from a
:class:`~relaxvm.ir.relax.Call`. Builders (``op.add(x, y)``) only make Call nodes; inference is
a separate step (:func:`infer_struct_info`) that the BlockBuilder normalizer runs.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ....errors import RelaxVMError
from ...arith import Analyzer
from ..expr import Call, ExternFunc, Op
from ..struct_info import ObjectStructInfo, StructInfo, TensorStructInfo, TupleStructInfo

__all__ = [
    "InferContext",
    "OpError",
    "OpInfo",
    "OpTypeError",
    "get_op_info",
    "infer_struct_info",
    "list_ops",
    "register_op",
]


class OpError(RelaxVMError, ValueError):
    """An operator call is malformed: wrong arguments, attributes, shapes or dtypes.

    The message always starts with the op name (``relax.add: ...``).
    """


class OpTypeError(OpError, TypeError):
    """An operator argument of the wrong kind or dtype (a shape where a tensor is expected, an
    int tensor for a float-only op, operands whose dtypes differ).

    TVM raises ``TypeError`` there; this class is also an :class:`OpError` (a ``ValueError``),
    so ``except OpError`` and ``except ValueError`` written against earlier relaxvm versions
    still catch it.
    """


@dataclass
class InferContext:
    """What an inference function gets besides the call: the analyzer and error helpers.

    Attributes
    ----------
    op_name : str
        The name of the op being inferred, used to prefix error messages.
    analyzer : Analyzer
        Decides equality of symbolic extents.
    """

    op_name: str
    analyzer: Analyzer = field(default_factory=Analyzer)

    def error(self, message: str) -> OpError:
        """An :class:`OpError` whose message starts with the op name (raise it)."""
        return OpError(f"{self.op_name}: {message}")

    def type_error(self, message: str) -> OpTypeError:
        """An :class:`OpTypeError` (wrong argument kind or dtype) whose message starts with the
        op name (raise it)."""
        return OpTypeError(f"{self.op_name}: {message}")

    def arg_sinfo(self, call: Call, index: int) -> StructInfo:
        """The struct info of argument ``index``; an error if it has none yet."""
        arg = call.args[index]
        sinfo = arg.struct_info
        if sinfo is None:
            raise self.error(
                f"argument {index} ({type(arg).__name__}) has no struct info; normalize it "
                "(bind it through the BlockBuilder) before inferring this call"
            )
        return sinfo

    def tensor_arg(self, call: Call, index: int, what: str = "") -> TensorStructInfo:
        """The TensorStructInfo of argument ``index``; an error naming it when it is not a tensor."""
        sinfo = self.arg_sinfo(call, index)
        if not isinstance(sinfo, TensorStructInfo):
            name = what or f"argument {index}"
            raise self.type_error(f"{name} must be a tensor, got {sinfo}")
        return sinfo

    def attr(self, call: Call, name: str, default: Any = None) -> Any:
        """Attribute ``name`` of the call, or ``default`` when absent."""
        attrs = call.attrs or {}
        return attrs.get(name, default)


InferFunc = Callable[[Call, InferContext], StructInfo]


@dataclass(frozen=True)
class OpInfo:
    """Everything the compiler knows about one operator.

    Attributes
    ----------
    name : str
        The op's name, e.g. ``"relax.add"``.
    num_inputs : int or tuple of (int, int or None)
        The exact argument count, or a ``(min, max)`` range (``max=None`` for no upper bound).
    infer : callable
        ``infer(call, ctx) -> StructInfo``.
    purity : bool
        False for ops with visible side effects (``relax.print``, ``relax.call_packed``...).
    attrs : mapping of str to str
        The attributes the op reads, each with a one-line description.
    doc : str
        What the op computes.
    """

    name: str
    num_inputs: int | tuple[int, int | None]
    infer: InferFunc
    purity: bool = True
    attrs: Mapping[str, str] = field(default_factory=dict)
    doc: str = ""

    def check_num_inputs(self, count: int) -> None:
        """Raise an :class:`OpError` unless ``count`` arguments are allowed."""
        if isinstance(self.num_inputs, int):
            if count != self.num_inputs:
                raise OpError(f"{self.name}: expects {self.num_inputs} argument(s), got {count}")
            return
        low, high = self.num_inputs
        if count < low or (high is not None and count > high):
            bound = f"{low} or more" if high is None else f"{low} to {high}"
            raise OpError(f"{self.name}: expects {bound} arguments, got {count}")


_REGISTRY: dict[str, OpInfo] = {}
_LOCK = threading.Lock()


def register_op(
    name: str,
    *,
    num_inputs: int | tuple[int, int | None],
    infer: InferFunc,
    purity: bool = True,
    attrs: Mapping[str, str] | None = None,
    doc: str = "",
    override: bool = False,
) -> OpInfo:
    """Register the metadata of op ``name`` and return it.

    Raises
    ------
    OpError
        If ``name`` is already registered and ``override`` is False, or the arity is invalid.
    """
    if isinstance(num_inputs, int):
        if num_inputs < 0:
            raise OpError(f"register_op: {name}: num_inputs must be >= 0, got {num_inputs}")
    elif not (
        isinstance(num_inputs, tuple)
        and len(num_inputs) == 2
        and num_inputs[0] >= 0
        and (num_inputs[1] is None or num_inputs[1] >= num_inputs[0])
    ):
        raise OpError(
            f"register_op: {name}: num_inputs must be an int or a (min, max) pair, "
            f"got {num_inputs!r}"
        )
    info = OpInfo(name, num_inputs, infer, purity, dict(attrs or {}), doc)
    with _LOCK:
        if name in _REGISTRY and not override:
            raise OpError(f"register_op: op {name!r} is already registered (pass override=True)")
        _REGISTRY[name] = info
    return info


def get_op_info(name: str | Op) -> OpInfo:
    """The :class:`OpInfo` of an op given by name or :class:`~relaxvm.ir.relax.Op`.

    Raises
    ------
    OpError
        If no such op is registered; the message suggests close names.
    """
    key = name.name if isinstance(name, Op) else name
    info = _REGISTRY.get(key)
    if info is None:
        close = difflib.get_close_matches(key, list(_REGISTRY), n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise OpError(f"unknown Relax op {key!r}{hint} (see relaxvm.ir.relax.op.list_ops())")
    return info


def list_ops() -> list[str]:
    """The names of all registered ops, sorted."""
    return sorted(_REGISTRY)


def infer_struct_info(call: Call, analyzer: Analyzer | None = None) -> StructInfo:
    """Infer the StructInfo of ``call``, whose callee is a registered :class:`Op` (or an
    :class:`ExternFunc`, as in ``R.call_packed``, whose result is the declared ``sinfo_args``).

    Parameters
    ----------
    call : Call
        The call; its arguments must already carry struct info.
    analyzer : Analyzer, optional
        Used to compare symbolic extents; a fresh one when omitted.

    Raises
    ------
    OpError
        If the arguments' shapes, dtypes or the attributes do not fit the op.
    """
    if not isinstance(call, Call):
        raise OpError(f"infer_struct_info: expected a relax Call, got {type(call).__name__}")
    if isinstance(call.op, ExternFunc):
        # R.call_packed: nothing is known about the callee, so the caller's declaration is
        # the result (several declarations form a tuple; none means any object).
        infos = call.sinfo_args
        if len(infos) == 1:
            return infos[0]
        return TupleStructInfo(list(infos)) if infos else ObjectStructInfo()
    if not isinstance(call.op, Op):
        raise OpError(
            f"infer_struct_info: the callee must be an Op, got {type(call.op).__name__} "
            "(calls of functions take their struct info from the callee's signature)"
        )
    info = get_op_info(call.op.name)
    info.check_num_inputs(len(call.args))
    ctx = InferContext(info.name, analyzer if analyzer is not None else Analyzer())
    return info.infer(call, ctx)
