"""End to end (script -> compile -> VM) in both exec modes: the seed example, shapes, calls."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm

from ...errors import VMError, VMTypeError, VMValueError
from .helpers import MakeVM, registered_funcs

HEADER = "from relaxvm.script import ir as I, relax as R, tir as T\n"
rng = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> Any:
    return rng.standard_normal(shape).astype(dtype)


def test_seed_example(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class MyModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        return R.add(x, x)
"""
    )
    x = rand(3, 4)
    np.testing.assert_allclose(vm["main"](x).numpy(), x + x)


MLP = (
    HEADER
    + """
@I.ir_module
class Mlp:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8, 3), "float32"),
             b: R.Tensor((3,), "float32")) -> R.Tensor(("n", 3), "float32"):
        with R.dataflow():
            y = R.nn.relu(R.add(R.matmul(x, w), b))
            R.output(y)
        return y
"""
)


def test_symbolic_batch_mlp(make_vm: MakeVM) -> None:
    vm = make_vm(MLP)
    w, b = rand(8, 3), rand(3)
    for n in (1, 5):
        x = rand(n, 8)
        np.testing.assert_allclose(
            vm["main"](x, w, b).numpy(), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-5
        )


def test_parameter_checks_have_clear_errors_and_leave_the_vm_usable(make_vm: MakeVM) -> None:
    vm = make_vm(MLP)
    x, w, b = rand(2, 8), rand(8, 3), rand(3)
    with pytest.raises(
        VMError, match=r"fn=main, loc=param\[0\], param=x, annotation=R\.Tensor\(\(n, 8\)"
    ):
        vm["main"](rand(2, 9), w, b)
    with pytest.raises(VMTypeError, match=r"param=w.*expect a Tensor but get"):
        vm["main"](x, "w", b)
    with pytest.raises(VMValueError, match=r"param=b.*dtype float32 but get float64"):
        vm["main"](x, w, b.astype("float64"))
    with pytest.raises(VMValueError, match=r"param=b.*ndim 1 but get 2"):
        vm["main"](x, w, b[None])
    with pytest.raises(RuntimeError, match=r"param=b.*shape\[0\] mismatch to specified constant"):
        vm["main"](x, w, b[:2])
    np.testing.assert_allclose(
        vm["main"](x, w, b).numpy(), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-5
    )


def test_shared_and_derived_symbols(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n * 2", "n // 2 + 1"), "float32"), y: R.Tensor(("n", 4), "float32"),
             z: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        s = R.add(y, z)
        return (s, R.shape([n * 2, n // 2 + 1]))
"""
    )
    y, z = rand(6, 4), rand(6, 4)
    s, shape = vm["main"](rand(12, 4), y, z)
    np.testing.assert_allclose(s.numpy(), y + z)
    assert tuple(shape) == (12, 4)
    with pytest.raises(VMError, match=r"param=x.*shape\[1\] mismatch"):
        vm["main"](rand(12, 5), y, z)
    with pytest.raises(VMError, match=r"param=z.*previous populated value"):
        vm["main"](rand(12, 4), y, rand(5, 4))


def test_call_packed_and_call_dps_packed(make_vm: MakeVM) -> None:
    # Device-agnostic: read with .numpy() and write with copyfrom (a GPU tensor's memory is
    # not host-accessible, so host_array() would raise there).
    def scale(t: relaxvm.Tensor, k: int) -> relaxvm.Tensor:
        return relaxvm.tensor(t.numpy() * k, device=t.device)

    def dps_sub(a: relaxvm.Tensor, b: relaxvm.Tensor, out: relaxvm.Tensor) -> None:
        out.copyfrom(a.numpy() - b.numpy())

    source = (
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        a = R.call_packed("relaxvm.conformance.scale", x, R.prim_value(3), sinfo_args=R.Tensor((2, 3), "float32"))
        b = R.call_dps_packed("relaxvm.conformance.sub", (a, y), out_sinfo=R.Tensor((2, 3), "float32"))
        return b
"""
    )
    with registered_funcs(scale=scale, sub=dps_sub):
        vm = make_vm(source)
        x, y = rand(2, 3), rand(2, 3)
        np.testing.assert_allclose(vm["main"](x, y).numpy(), x * 3 - y, rtol=1e-6)


PRIM = (
    HEADER
    + """
@I.ir_module
class M:
    @T.prim_func
    def axpy(a: T.handle, b: T.handle, c: T.handle, k: T.int64):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        C = T.match_buffer(c, (n,), "float32")
        for i in range(n):
            C[i] = A[i] * T.float32(2) + B[i] + T.Cast("float32", k)

    @T.prim_func
    def add_into(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            A[i] = A[i] + B[i]

    @R.function
    def main(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")):
        n = T.int64()
        cls = M
        z = R.call_tir(cls.axpy, (x, y), out_sinfo=R.Tensor((n,), "float32"), tir_vars=R.shape([n]))
        w = R.call_tir_inplace(cls.add_into, (z, y), inplace_indices=0, out_sinfo=R.Tensor((n,), "float32"))
        return w
"""
)


def test_call_tir_with_symbolic_sizes_and_inplace(make_vm: MakeVM) -> None:
    vm = make_vm(PRIM)
    for n in (3, 7):
        x, y = rand(n), rand(n)
        np.testing.assert_allclose(vm["main"](x, y).numpy(), 2 * x + y + n + y, rtol=1e-5)


def test_unbound_symbol_fails_at_build_time(target: str, exec_mode: str) -> None:
    from ...errors import CompileError
    from ...ir import Var as SymVar
    from ...ir import relax as rx

    n, k = SymVar("n"), SymVar("k")
    x = rx.Var("x", rx.TensorStructInfo([n], "float32"))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        s = bb.emit(rx.ShapeExpr([k + 1]), "s")
        bb.emit_func_output(s)
    with pytest.raises(CompileError, match=r"'main'.*'s.*\bk\b"):
        relaxvm.compile(bb.get(), target, exec_mode=exec_mode)
