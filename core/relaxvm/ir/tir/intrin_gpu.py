"""GPU intrinsics of TIR: the block-wide barrier and the warp shuffle.

``T.tvm_storage_sync()`` (TVM's ``tir.tvm_storage_sync("shared")``, CUDA's
``__syncthreads()``) is evaluated for its effect (``Evaluate(storage_sync())``) inside
thread-bound loops: every thread of a block reaches it before any thread of that block goes
on, and shared-memory writes before it are visible to every thread of the block after it.
The reference interpreter runs it phase by phase (:mod:`.interpreter`); the CUDA code
generator emits ``bar.sync 0``. It takes no operand: the only scope this project
synchronizes is ``shared``.

``T.shfl_down(value, delta)`` (CUDA's ``__shfl_down_sync(0xffffffff, value, delta)``) is the
value ``value`` has in the thread ``delta`` lanes above in the same warp (32 lanes, by the
linear thread index in the block), or the thread's own value when that lane is past the
warp's end. Every thread of the block must reach it (like a barrier: the interpreter runs
it as a phase of its own), and it may occur only in the value of a ``BufferStore``. The
code generator emits ``llvm.nvvm.shfl.sync.down`` with a full mask, for float32 and int32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import VMTypeError
from ...runtime.dtype import DataType
from ..expr import PrimExpr
from .intrin import Call

__all__ = ["SHUFFLE_DTYPES", "ShflDown", "StorageSync", "shfl_down", "storage_sync"]

#: The value types a warp shuffle moves.
SHUFFLE_DTYPES = ("float32", "int32")
#: Lanes in a warp.
WARP_SIZE = 32


class StorageSync(Call):
    """``T.tvm_storage_sync()``: a barrier for the threads of one block (int32, value 0)."""

    __slots__ = ()
    op = "tir.tvm_storage_sync"
    arity = 0

    def _check_types(self, dtype: DataType, args: tuple[PrimExpr, ...]) -> None:
        if dtype != DataType("int32"):
            raise VMTypeError(f"tir.tvm_storage_sync: the result is int32, got {dtype}")

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        return 0  # outside a kernel (constant folding) a barrier has nothing to wait for


Call._by_name["tvm_storage_sync"] = StorageSync


def storage_sync() -> PrimExpr:
    """``T.tvm_storage_sync()``: wrap it in ``Evaluate`` to place a block-wide barrier."""
    return Call("int32", "tir.tvm_storage_sync", [])


class ShflDown(Call):
    """``T.shfl_down(value, delta)``: ``value`` of the lane ``delta`` above in the warp."""

    __slots__ = ()
    op = "tir.shfl_down"
    arity = 2

    def _check_types(self, dtype: DataType, args: tuple[PrimExpr, ...]) -> None:
        value, delta = args
        if str(value.dtype) not in SHUFFLE_DTYPES or dtype != value.dtype:
            raise VMTypeError(
                f"tir.shfl_down: the value must be one of {', '.join(SHUFFLE_DTYPES)} and the "
                f"result of its type, got {value.dtype} -> {dtype}"
            )
        if delta.dtype != DataType("int32"):
            raise VMTypeError(f"tir.shfl_down: delta must be int32, got {delta.dtype}")

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        return evaluate_child(self.args[0])  # one thread alone: its own value


Call._by_name["shfl_down"] = ShflDown


def shfl_down(value: PrimExpr, delta: int | PrimExpr) -> PrimExpr:
    """``T.shfl_down(value, delta)`` (see the module docstring)."""
    from ..op import const

    offset = const(delta, "int32") if isinstance(delta, int) else delta
    return Call(value.dtype, "tir.shfl_down", [value, offset])
