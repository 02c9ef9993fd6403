"""A reference interpreter for PrimFuncs: slow, plain Python, and the oracle for codegen tests.

The function is first compiled into nested Python closures (one per node), then run with an
environment mapping variables to values. Semantics:

* Integer and bool expressions compute with Python ints (exact, no overflow), using the same
  scalar functions as :func:`relaxvm.ir.evaluate` (``//`` and ``%`` are floor division and
  modulo; ``truncdiv``/``truncmod`` round toward zero). An integer zero divisor gives 0, as
  in numpy and on every compiled target (see docs/ops.md). A store
  into an integer buffer narrows the value to the element type, wrapping like hardware.
* Float expressions compute in numpy scalars of the expression's type, so ``float32`` kernels
  round like ``float32`` hardware would, not like Python's double precision.
* Buffers are numpy arrays. Every load and store checks its indices against the buffer's
  shape and raises naming the buffer and the index; a negative index never wraps around
  (unlike numpy's indexing).
* ``T.check_index`` raises :class:`~relaxvm.errors.VMIndexError` for an index out of range.
* Loops of every kind run serially, in order (parallel and vectorized loops must not depend
  on their iteration order, so any order is a valid execution), except loops bound to
  ``blockIdx``/``threadIdx``, which run with GPU semantics: per block and thread, with
  ``shared`` scratch per block and barriers (``T.tvm_storage_sync()``) honoured phase by
  phase (:mod:`.interpreter_gpu`).
* ``Allocate`` creates a fresh array per execution (per block for ``shared`` scope inside a
  kernel): floats start as NaN and integers as a recognisable pattern, so a read before a
  write shows up in the results.

Arguments are checked against the buffers and bound by :mod:`.interpreter_args`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import VMTypeError, VMValueError
from ...runtime.dtype import DataType
from .._scalar import cast_scalar, is_bool_dtype, is_float_dtype, is_int_dtype
from ..expr import (
    And,
    BinaryOpExpr,
    Cast,
    CmpExpr,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Not,
    Or,
    PrimExpr,
    Select,
    Var,
)
from .buffer import Buffer, BufferLoad
from .function import PrimFunc
from .interpreter_args import bind_arguments
from .intrin import BitwiseCall, Call, CheckIndex, checked_index, float_max, float_min
from .intrin import IfThenElse as IfThenElseCall
from .intrin_gpu import ShflDown, StorageSync
from .lower_blocks import lower_blocks
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = ["run_prim_func"]

Env = dict[Any, Any]
ExprFn = Callable[[Env], Any]
StmtFn = Callable[[Env], None]

#: What uninitialised integer scratch memory holds (0x5A repeated fits any signed width).
_INT_FILL = 0x5A


def run_prim_func(func: PrimFunc, *args: Any) -> None:
    """Run ``func`` on numpy arrays (buffer parameters) and Python ints (scalar parameters).

    A float8 buffer takes a ``uint8`` array of codes or an ml_dtypes array of its type.

    Outputs are written into the given arrays, as the compiled kernel would
    (destination-passing style).

    Raises
    ------
    VMTypeError
        Wrong number of arguments, or an argument of the wrong kind or dtype.
    VMValueError
        A shape mismatch (naming the buffer and dimension), an out-of-bounds access (naming
        the buffer and index), or an undefined variable.
    VMIndexError
        A ``T.check_index`` on a user-supplied index out of range (naming the op and axis).
    """
    if not isinstance(func, PrimFunc):
        raise VMTypeError(f"run_prim_func: expected a PrimFunc, got {type(func).__name__}")
    name = func.name
    if len(args) != len(func.params):
        raise VMTypeError(
            f"run_prim_func({name}): expected {len(func.params)} arguments "
            f"({', '.join(p.name for p in func.params)}), got {len(args)}"
        )
    func = lower_blocks(func)  # block form (T.block) runs as the loops it stands for
    env = bind_arguments(func, args)
    body = _Compiler(name).stmt(func.body)
    with np.errstate(all="ignore"):  # inf/NaN arithmetic is data, not an error, as on hardware
        body(env)


# ---- compilation to closures -----------------------------------------------------------------
def _numpy_type(dtype: DataType, where: str) -> type:
    try:
        return dtype.numpy_dtype().type  # type: ignore[no-any-return]
    except VMTypeError:
        raise VMTypeError(f"run_prim_func: {where}: numpy has no type {dtype}") from None


class _Compiler:
    def __init__(self, func_name: str) -> None:
        self.func_name = func_name
        self.memo: dict[int, ExprFn] = {}

    def error(self, message: str) -> VMValueError:
        return VMValueError(f"run_prim_func({self.func_name}): {message}")

    # ---- expressions ----
    def expr(self, node: PrimExpr) -> ExprFn:
        fn = self.memo.get(id(node))
        if fn is None:
            fn = self._expr(node)
            self.memo[id(node)] = fn
        return fn

    def _var(self, node: Var) -> ExprFn:
        def load_var(env: Env) -> Any:
            try:
                return env[node]
            except KeyError:
                raise self.error(f"variable {node.name!r} is used but not defined") from None

        return load_var

    def _expr(self, node: PrimExpr) -> ExprFn:
        dtype = node.dtype
        if isinstance(node, Var):
            return self._var(node)
        if isinstance(node, IntImm):
            value = bool(node.value) if is_bool_dtype(dtype) else node.value
            return lambda env: value
        if isinstance(node, FloatImm):
            const = _numpy_type(dtype, str(node))(node.value)
            return lambda env: const
        if isinstance(node, BufferLoad):
            return self._load(node)
        if isinstance(node, (IfThenElseCall, Select)):
            cond, then_fn, else_fn = (self.expr(op) for op in node.operands)
            return lambda env: then_fn(env) if cond(env) else else_fn(env)
        if isinstance(node, CheckIndex):
            return self._check_index(node)
        if isinstance(node, StorageSync):
            from .interpreter_gpu import check_no_barrier_expr

            check_no_barrier_expr(self, node)
        if isinstance(node, ShflDown):
            from .interpreter_gpu import compile_shuffle_expr

            return compile_shuffle_expr(self, node)
        if isinstance(node, Call):
            return self._call(node)
        if isinstance(node, And):
            a, b = self.expr(node.a), self.expr(node.b)
            return lambda env: bool(a(env)) and bool(b(env))
        if isinstance(node, Or):
            a, b = self.expr(node.a), self.expr(node.b)
            return lambda env: bool(a(env)) or bool(b(env))
        if isinstance(node, Not):
            a = self.expr(node.a)
            return lambda env: not a(env)
        if isinstance(node, Cast):
            return self._cast(node)
        if isinstance(node, BinaryOpExpr):
            return self._binary(node)
        raise VMTypeError(f"run_prim_func({self.func_name}): cannot run a {type(node).__name__}")

    def _cast(self, node: Cast) -> ExprFn:
        value_fn, dtype = self.expr(node.value), node.dtype
        if dtype.is_float8 or node.value.dtype.is_float8:
            return self._cast_float8(node)
        to_dtype = _numpy_type(dtype, str(node)) if is_float_dtype(dtype) else None

        def cast_value(env: Env) -> Any:
            value = value_fn(env)
            if isinstance(value, np.floating):
                value = float(value)
            try:
                result = cast_scalar(value, dtype)
            except VMValueError as err:
                raise self.error(f"in `{node}`: {err}") from None
            return to_dtype(result) if to_dtype is not None else result

        return cast_value

    def _binary(self, node: BinaryOpExpr) -> ExprFn:
        a_fn, b_fn = self.expr(node.a), self.expr(node.b)
        operand_type = node.a.dtype
        scalar_fn = node._scalar_fn
        if isinstance(node, CmpExpr):
            return lambda env: bool(scalar_fn(a_fn(env), b_fn(env)))
        if is_float_dtype(operand_type):
            to_dtype = _numpy_type(node.dtype, str(node))
            # numpy's float semantics: a zero divisor gives inf or NaN, as on hardware.
            scalar_fn = _FLOAT_DIVISIONS.get(type(node), scalar_fn)
            scalar_fn = _FLOAT_MIN_MAX.get(type(node), scalar_fn)
            return lambda env: to_dtype(scalar_fn(a_fn(env), b_fn(env)))
        divides = node._scalar_fn in (_int_division_fns())

        def int_binary(env: Env) -> Any:
            a, b = a_fn(env), b_fn(env)
            if divides and b == 0:
                return 0  # numpy's integer x // 0 and x % 0, the compiled targets' result too
            return scalar_fn(a, b)

        return int_binary

    def _call(self, node: Call) -> ExprFn:
        arg_fns = [self.expr(arg) for arg in node.args]
        if isinstance(node, BitwiseCall):
            # Exact on Python ints, wrapped to the type (numpy's rule for shift counts).
            return lambda env: node.int_value(*(int(fn(env)) for fn in arg_fns))
        scalar_fn = type(node)._scalar_fn  # type: ignore[attr-defined]
        to_dtype = _numpy_type(node.dtype, str(node))
        if len(arg_fns) == 1:
            (arg_fn,) = arg_fns
            return lambda env: to_dtype(scalar_fn(float(arg_fn(env))))
        return lambda env: to_dtype(scalar_fn(*(float(fn(env)) for fn in arg_fns)))

    def _check_index(self, node: CheckIndex) -> ExprFn:
        index_fn, extent_fn = self.expr(node.args[0]), self.expr(node.args[1])
        axis, op_code = (int(arg.value) for arg in node.args[2:])  # type: ignore[attr-defined]
        # Raises VMIndexError with the message every target gives (not wrapped in our prefix).
        return lambda env: checked_index(int(index_fn(env)), int(extent_fn(env)), axis, op_code)

    def _indices(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], text: str
    ) -> Callable[[Env, tuple[int, ...]], tuple[int, ...]]:
        index_fns = [self.expr(index) for index in indices]

        def compute(env: Env, shape: tuple[int, ...]) -> tuple[int, ...]:
            values = tuple(int(fn(env)) for fn in index_fns)
            for dim, (value, extent) in enumerate(zip(values, shape, strict=True)):
                if not 0 <= value < extent:
                    raise self.error(
                        f"index {value} is out of bounds for dim {dim} of buffer "
                        f"{buffer.name!r} (shape {shape}) in `{text}` at index {values}"
                    )
            return values

        return compute

    def _cast_float8(self, node: Cast) -> ExprFn:
        from .interpreter_float8 import float8_cast

        to_dtype = _numpy_type(node.dtype, str(node)) if is_float_dtype(node.dtype) else None
        return float8_cast(self.expr(node.value), node, to_dtype, self.error)

    def _load(self, node: BufferLoad) -> ExprFn:
        buffer = node.buffer
        indices = self._indices(buffer, node.indices, str(node))
        convert: Callable[[Any], Any] = lambda v: v  # noqa: E731 - floats stay numpy scalars
        if is_int_dtype(buffer.dtype) or buffer.dtype.is_float8:
            convert = int
        elif is_bool_dtype(buffer.dtype):
            convert = bool
        data = buffer.data

        def load(env: Env) -> Any:
            array = self._array(env, buffer, data)
            return convert(array[indices(env, array.shape)])

        return load

    def _array(self, env: Env, buffer: Buffer, data: Var) -> np.ndarray:
        try:
            return env[data]  # type: ignore[no-any-return]
        except KeyError:
            raise self.error(
                f"buffer {buffer.name!r} is used but is neither a parameter nor allocated"
            ) from None

    # ---- statements ----
    def stmt(self, node: Stmt) -> StmtFn:
        if isinstance(node, SeqStmt):
            parts = [self.stmt(item) for item in node.seq]

            def run_seq(env: Env) -> None:
                for part in parts:
                    part(env)

            return run_seq
        if isinstance(node, For):
            return self._for(node)
        if isinstance(node, BufferStore):
            return self._store(node)
        if isinstance(node, LetStmt):
            var, value_fn, body = node.var, self.expr(node.value), self.stmt(node.body)

            def run_let(env: Env) -> None:
                saved = env.get(var, _MISSING)
                env[var] = value_fn(env)
                body(env)
                _restore(env, var, saved)

            return run_let
        if isinstance(node, IfThenElse):
            cond = self.expr(node.condition)
            then_fn = self.stmt(node.then_case)
            else_fn = self.stmt(node.else_case) if node.else_case is not None else None

            def run_if(env: Env) -> None:
                if cond(env):
                    then_fn(env)
                elif else_fn is not None:
                    else_fn(env)

            return run_if
        if isinstance(node, Allocate):
            return self._allocate(node)
        if isinstance(node, Evaluate):
            if isinstance(node.value, StorageSync):
                # Outside a kernel a barrier waits for nothing; inside one, the kernel runs
                # phase by phase (interpreter_gpu) and never calls this closure.
                return _no_op
            value_fn = self.expr(node.value)

            def run_evaluate(env: Env) -> None:
                value_fn(env)  # computed for its checks (bounds, division); result unused

            return run_evaluate
        raise VMTypeError(f"run_prim_func({self.func_name}): cannot run a {type(node).__name__}")

    def _for(self, node: For) -> StmtFn:
        if node.kind == ForKind.THREAD_BINDING and node.thread_binding != "vthread":
            from .interpreter_gpu import compile_thread_loop

            return compile_thread_loop(self, node)
        var, min_fn, extent_fn = node.loop_var, self.expr(node.min), self.expr(node.extent)
        body = self.stmt(node.body)

        def run_for(env: Env) -> None:
            start = int(min_fn(env))
            saved = env.get(var, _MISSING)
            for value in range(start, start + int(extent_fn(env))):
                env[var] = value
                body(env)
            _restore(env, var, saved)

        return run_for

    def _store(self, node: BufferStore) -> StmtFn:
        buffer, data = node.buffer, node.buffer.data
        text = f"{buffer.name}[{', '.join(str(i) for i in node.indices)}] = ..."
        indices = self._indices(buffer, node.indices, text)
        value_fn = self.expr(node.value)
        dtype = buffer.dtype
        # Integer arithmetic is exact here; storing narrows to the element type and wraps,
        # as the hardware would.
        narrow = is_int_dtype(dtype)

        def run_store(env: Env) -> None:
            array = self._array(env, buffer, data)
            value = value_fn(env)
            if narrow:
                value = cast_scalar(value, dtype)
            array[indices(env, array.shape)] = value

        return run_store

    def scratch_array(self, buffer: Buffer) -> Callable[[tuple[int, ...]], np.ndarray]:
        """A function making fresh scratch memory for ``buffer`` (NaN or a fill pattern)."""
        np_type = _numpy_type(buffer.dtype, f"Allocate {buffer.name!r}")
        fill: Any = math.nan if is_float_dtype(buffer.dtype) else _INT_FILL
        if is_bool_dtype(buffer.dtype):
            fill = False
        return lambda shape: np.full(shape, fill, dtype=np_type)

    def _allocate(self, node: Allocate) -> StmtFn:
        from .interpreter_gpu import allocation

        make = allocation(self, node)
        data = node.buffer.data
        body = self.stmt(node.body)

        def run_allocate(env: Env) -> None:
            saved = env.get(data, _MISSING)
            env[data] = make(env)
            body(env)
            _restore(env, data, saved)

        return run_allocate


def _no_op(env: Env) -> None:
    pass


_MISSING = object()


def _restore(env: Env, key: Any, saved: Any) -> None:
    if saved is _MISSING:
        env.pop(key, None)
    else:
        env[key] = saved


_FLOAT_DIVISIONS: dict[type, Any] = {
    Div: np.true_divide,
    Mod: np.fmod,
    FloorDiv: np.floor_divide,
    FloorMod: np.mod,
}


# numpy's maximum/minimum: NaN in either operand wins (Python's max/min drop a NaN in second
# place, which is what a reduction's `acc = max(acc, x)` hits).
_FLOAT_MIN_MAX: dict[type, Any] = {Max: float_max, Min: float_min}


def _int_division_fns() -> tuple[Any, ...]:
    from .. import _scalar

    return (_scalar.floordiv, _scalar.floormod, _scalar.truncdiv, _scalar.truncmod)
