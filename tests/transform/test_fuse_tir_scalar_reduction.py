"""FuseTIR with a 0-d reduction (a dot product) feeding its consumer: the reduction's separate
init store must not be left writing a buffer the epilogue merge removed."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_dot_product_fused_with_a_comparison(exec_mode: str) -> None:
    bb = rx.BlockBuilder()
    a = rx.Var("a", rx.TensorStructInfo((3,), "float32"))
    b = rx.Var("b", rx.TensorStructInfo((3,), "float32"))
    limit = rx.Var("limit", rx.TensorStructInfo((), "float32"))
    with bb.function("main", [a, b, limit]):
        with bb.dataflow():
            dot = bb.emit(op.matmul(a, b))
            below = bb.emit_output(bb.emit(op.less(dot, limit)))
        bb.emit_func_output(below)
    ex = relaxvm.compile(bb.get(), "llvm", exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.array([1.0, 2.0, 3.0], "float32")
    for bound, expected in ((15.0, True), (14.0, False)):
        got = vm["main"](relaxvm.tensor(x), relaxvm.tensor(x), relaxvm.tensor(np.float32(bound)))
        assert bool(got.numpy()) is expected
