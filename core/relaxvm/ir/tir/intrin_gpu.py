"""GPU intrinsics of TIR: the block-wide barrier.

``T.tvm_storage_sync()`` (TVM's ``tir.tvm_storage_sync("shared")``, CUDA's
``__syncthreads()``) is evaluated for its effect (``Evaluate(storage_sync())``) inside
thread-bound loops: every thread of a block reaches it before any thread of that block goes
on, and shared-memory writes before it are visible to every thread of the block after it.
The reference interpreter runs it phase by phase (:mod:`.interpreter`); the CUDA code
generator emits ``bar.sync 0``. It takes no operand: the only scope this project
synchronizes is ``shared``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import VMTypeError
from ...runtime.dtype import DataType
from ..expr import PrimExpr
from .intrin import Call

__all__ = ["StorageSync", "storage_sync"]


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
