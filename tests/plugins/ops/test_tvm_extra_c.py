"""Compiled runs (llvm) of nn.attention_bias, hint_on_device, call_inplace_packed and
dynamic_strided_slice against numpy: attention_bias with every bias rank, masks and a symbolic
batch; hint_on_device as the identity; a packed function that overwrites its argument (whose
storage must not be reused while the result lives); numpy slices with negative and clamped
bounds, empty results and the run-time errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import RelaxVMError
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, op
from relaxvm.runtime import cpu
from relaxvm.script import from_source
from relaxvm.testing.conformance.cases_nn_attention import attention_ref


def _run(params: list[Var], build: Any, *arrays: np.ndarray) -> np.ndarray:
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(build(*params)))
        bb.emit_func_output(out)
    ex = relaxvm.compile(bb.get(), "llvm")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    result = vm["main"](*(relaxvm.tensor(a) for a in arrays))
    return result.numpy()


@pytest.mark.parametrize(
    ("bias_shape", "kwargs"),
    [
        ((2, 5), {}),
        ((2, 3, 5), {"scale": 0.25, "causal_mask": "BottomRight"}),
        ((2, 2, 3, 5), {"causal_mask": "TopLeft", "window_size": 2}),
    ],
)
def test_attention_bias_matches_numpy(bias_shape: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    rng = np.random.default_rng(13)
    b = SymVar("b")
    shapes = [(b, 3, 2, 4), (b, 5, 2, 4), (b, 5, 2, 3), (b, *bias_shape[1:])]
    params = [
        Var(name, TensorStructInfo(s, "float32")) for name, s in zip("qkvm", shapes, strict=True)
    ]
    arrays = [rng.standard_normal((2, *s[1:])).astype("float32") for s in shapes]
    got = _run(params, lambda q, k, v, m: op.nn.attention_bias(q, k, v, m, **kwargs), *arrays)
    np.testing.assert_allclose(got, attention_ref(*arrays, **kwargs), rtol=1e-5, atol=1e-5)


def test_hint_on_device_is_the_identity() -> None:
    n = SymVar("n")
    x = Var("x", TensorStructInfo([n, 3], "float32"))
    data = np.arange(12, dtype="float32").reshape(4, 3)
    got = _run([x], lambda v: op.add(op.hint_on_device(v, cpu(0)), v), data)
    np.testing.assert_array_equal(got, data + data)


_INPLACE_SOURCE = """
@I.ir_module
class Mod:
    @T.prim_func
    def add_one(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.spatial(4, i)
                b[vi] = a[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        cls = Mod
        with R.dataflow():
            a = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
            b = R.call_inplace_packed(
                "test.extra_c.scale_inplace", a, y, inplace_indices=[0],
                sinfo_args=R.Tensor((4,), "float32"),
            )
            c = R.call_tir(cls.add_one, (y,), out_sinfo=R.Tensor((4,), "float32"))
            d = R.call_tir(cls.add_one, (b,), out_sinfo=R.Tensor((4,), "float32"))
            gv = (b, c, d)
            R.output(gv)
        return gv
"""


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_call_inplace_packed_overwrites_its_argument(exec_mode: str) -> None:
    seen: list[int] = []

    def scale_inplace(x: relaxvm.Tensor, y: relaxvm.Tensor) -> relaxvm.Tensor:
        seen.append(id(x))
        x.copyfrom(x.numpy() * 2 + y.numpy())
        return x  # the argument itself, as inplace_indices=[0] promises

    relaxvm.register_func("test.extra_c.scale_inplace", scale_inplace, override=True)
    try:
        ex = relaxvm.compile(from_source(_INPLACE_SOURCE), "llvm", exec_mode=exec_mode)
        vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
        x, y = np.arange(4, dtype="float32"), np.full(4, 10, "float32")
        b, c, d = vm["main"](relaxvm.tensor(x), relaxvm.tensor(y))
    finally:
        relaxvm.remove_global_func("test.extra_c.scale_inplace")
    assert len(seen) == 1
    np.testing.assert_array_equal(b.numpy(), (x + 1) * 2 + y)
    # c is planned after a's last use: it must not share a's storage, which b still holds.
    np.testing.assert_array_equal(c.numpy(), y + 1)
    np.testing.assert_array_equal(d.numpy(), (x + 1) * 2 + y + 1)


def _slice_vm(shape: list[Any], dtype: str = "float32") -> relaxvm.VirtualMachine:
    x = Var("x", TensorStructInfo(shape, dtype))
    params = [x, *(Var(name, TensorStructInfo([len(shape)], "int64")) for name in "bes")]
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(op.dynamic_strided_slice(*params))
            # A later op on the sliced extents (match_cast to fresh symbolic extents).
            out = bb.emit_output(bb.emit(op.add(y, y)))
        bb.emit_func_output(out)
    return relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())


@pytest.mark.parametrize(
    ("begin", "end", "strides"),
    [
        ([0, 0], [4, 6], [1, 1]),
        ([-1, 1], [-100, 6], [-1, 2]),  # reversed rows, every other column
        ([100, -2], [-100, -7], [-2, -1]),  # clamped bounds, negative steps
        ([1, 5], [3, 2], [1, 1]),  # empty along the second axis
        ([-3, 0], [10, 10], [5, 4]),  # a step larger than the axis
    ],
)
def test_dynamic_strided_slice_matches_numpy(
    begin: list[int], end: list[int], strides: list[int]
) -> None:
    n = SymVar("n")
    vm = _slice_vm([n, 6])
    x = np.arange(24, dtype="float32").reshape(4, 6)
    bounds = [relaxvm.tensor(np.array(v, "int64")) for v in (begin, end, strides)]
    got = vm["main"](relaxvm.tensor(x), *bounds).numpy()
    want = x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides, strict=True))] * 2
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_dynamic_strided_slice_int_and_3d() -> None:
    vm = _slice_vm([2, 3, 4], "int32")
    x = np.arange(24, dtype="int32").reshape(2, 3, 4)
    bounds = [relaxvm.tensor(np.array(v, "int64")) for v in ([1, 0, -1], [2, 3, 0], [1, 2, -1])]
    got = vm["main"](relaxvm.tensor(x), *bounds).numpy()
    np.testing.assert_array_equal(got, x[1:2, 0:3:2, -1:0:-1] * 2)


def test_dynamic_strided_slice_runtime_errors() -> None:
    vm = _slice_vm([4, 6])
    x = relaxvm.tensor(np.zeros((4, 6), "float32"))
    zero = [relaxvm.tensor(np.array(v, "int64")) for v in ([0, 0], [4, 6], [1, 0])]
    with pytest.raises(RelaxVMError, match=r"strides\[1\] is 0; a slice step must not be 0"):
        vm["main"](x, *zero)
    # The lengths are checked by the runtime function itself (the VM's parameter checks come
    # first when they are static, so call it directly).
    from relaxvm_ops.runtime_slice import run_dynamic_strided_slice

    short = relaxvm.tensor(np.array([0], "int64"))
    ok = relaxvm.tensor(np.array([1, 1], "int64"))
    with pytest.raises(RelaxVMError, match=r"begin has 1 values, but x has rank 2"):
        run_dynamic_strided_slice(x, short, ok, ok)
    floats = relaxvm.tensor(np.array([1.0, 1.0], "float32"))
    with pytest.raises(RelaxVMError, match=r"end must be a 1-d integer tensor"):
        run_dynamic_strided_slice(x, ok, floats, ok)
