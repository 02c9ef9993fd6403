"""Compiled runs (llvm) of the tvm_extra_a ops at points the conformance matrix does not reach:
a one-point Hamming window, bucketize with run-time boundaries, a 0-d bucketize input, a
batch_flatten of an unknown extent and wrap_param to float16 and bool."""

from __future__ import annotations

from typing import Any

import numpy as np

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, op


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


def _torch_hamming(size: int, periodic: bool) -> np.ndarray:
    if size == 1:
        return np.ones(1, "float32")
    denom = size if periodic else size - 1
    return (0.54 - 0.46 * np.cos(2 * np.pi * np.arange(size) / denom)).astype("float32")


def test_hamming_window_one_point_and_symbolic_sizes() -> None:
    n = SymVar("n")
    x = Var("x", TensorStructInfo([n], "float32"))
    for periodic in (False, True):
        for size in (1, 2, 7):

            def build(v: Var, periodic: bool = periodic) -> Any:
                return op.hamming_window(n, periodic, 0.54, 0.46, "float32")

            got = _run([x], build, np.zeros(size, "float32"))
            np.testing.assert_allclose(got, _torch_hamming(size, periodic), rtol=2e-5, atol=1e-6)


def test_bucketize_with_runtime_boundaries() -> None:
    m = SymVar("m")
    x = Var("x", TensorStructInfo([2, 3], "float32"))
    b = Var("b", TensorStructInfo([m], "float32"))
    values = np.array([[-1.0, 0.0, 0.5], [1.0, 9.0, np.nan]], "float32")
    bounds = np.array([0.0, 0.5, 1.0], "float32")
    for right in (False, True):
        got = _run([x, b], lambda v, w, r=right: op.bucketize(v, w, right=r), values, bounds)
        want = np.searchsorted(bounds, values, side="right" if right else "left")
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    # No boundaries at all: every element is in bucket 0.
    got = _run([x, b], lambda v, w: op.bucketize(v, w), values, np.zeros(0, "float32"))
    np.testing.assert_array_equal(got, np.zeros((2, 3), "int64"))


def test_bucketize_scalar_input() -> None:
    x = Var("x", TensorStructInfo([], "int32"))
    b = Var("b", TensorStructInfo([4], "int32"))
    got = _run([x, b], lambda v, w: op.bucketize(v, w, out_int32=True), np.array(5, "int32"),
               np.array([1, 3, 5, 7], "int32"))  # fmt: skip
    assert got.shape == () and got.dtype == np.int32 and int(got) == 2


def test_batch_flatten_symbolic_inner_extent() -> None:
    k = SymVar("k")
    x = Var("x", TensorStructInfo([2, k, 3], "float32"))
    data = np.arange(24, dtype="float32").reshape(2, 4, 3)
    got = _run([x], op.nn.batch_flatten, data)
    np.testing.assert_array_equal(got, data.reshape(2, 12))


def test_wrap_param_casts_like_numpy() -> None:
    x = Var("x", TensorStructInfo([5], "float32"))
    data = np.array([0.1, -2.5, 65504.0, 1e5, np.nan], "float32")
    got = _run([x], lambda v: op.wrap_param(v, "float16"), data)
    assert got.dtype == np.float16
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, data.astype("float16"))
    got = _run([x], lambda v: op.wrap_param(v, "bool"), np.array([0, -0.0, 2, 0.5, -1], "float32"))
    np.testing.assert_array_equal(got, [False, False, True, True, True])


def test_bucketize_mixed_dtypes_compare_after_promotion() -> None:
    # TVM does not compare the two dtypes: float values against int boundaries.
    x = Var("x", TensorStructInfo([4], "float32"))
    b = Var("b", TensorStructInfo([3], "int32"))
    values = np.array([-0.5, 0.0, 0.5, 2.5], "float32")
    bounds = np.array([0, 1, 2], "int32")
    got = _run([x, b], lambda v, w: op.bucketize(v, w), values, bounds)
    np.testing.assert_array_equal(got, np.searchsorted(bounds, values))
