"""``BlockBuilder.emit_te`` passes the kernel every symbolic variable it reads: those of the
output shapes and those used only inside a compute body (as the call's ``tir_vars``)."""

from __future__ import annotations

import numpy as np

import relaxvm
from relaxvm import te, tir
from relaxvm.ir import relax as rx


def test_symbol_read_only_in_the_body_is_passed() -> None:
    n = tir.Var("n", "int64")
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((n,), "float32"))
    y = rx.Var("y", rx.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x, y]):
        scaled = bb.emit_te(
            lambda a, b: te.compute((4,), lambda i: b[i] * tir.Cast("float32", n)), x, y
        )

        def weighted_sum(b: te.Tensor) -> te.Tensor:
            rk = te.reduce_axis((0, 4), "rk")
            return te.compute(
                (1,), lambda i: te.sum(b[rk] * tir.Cast("float32", n), axis=rk), name="total"
            )

        total = bb.emit_te(weighted_sum, y)
        bb.emit_func_output(rx.Tuple([scaled, total]))
    mod = bb.get()
    calls = [b.value for b in mod["main"].body.blocks[0].bindings]
    # x's shape binds n for the first kernel; the second reads no tensor of extent n, so n
    # is passed as a scalar parameter.
    assert len(calls[0].args) == 2
    assert str(calls[1].args[-1]) == "R.shape([n])"
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    got_scaled, got_total = vm["main"](
        relaxvm.tensor(np.zeros(7, "float32")), relaxvm.tensor(np.arange(4, dtype="float32"))
    )
    np.testing.assert_array_equal(got_scaled.numpy(), np.arange(4) * 7.0)
    np.testing.assert_array_equal(got_total.numpy(), [6 * 7.0])
