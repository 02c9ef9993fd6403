"""Kernels over tensors with a zero extent: the result has the right (empty or reduced) shape
and the compiler never divides by the zero extent while recovering loop indices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op

CASES: list[tuple[str, Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = [
    ("tril", lambda x: op.tril(x), lambda a: np.tril(a)),
    ("sum", lambda x: op.sum(x, axis=[1]), lambda a: a.sum(axis=1)),
    ("permute", lambda x: op.permute_dims(x, [2, 0, 1]), lambda a: a.transpose(2, 0, 1)),
    ("softmax", lambda x: op.nn.softmax(x), lambda a: a),
    ("cumsum", lambda x: op.cumsum(x, axis=1), lambda a: np.cumsum(a, axis=1)),
    ("matmul", lambda x: op.matmul(x, op.permute_dims(x, [0, 2, 1])),
     lambda a: a @ a.transpose(0, 2, 1)),
    ("flatten", lambda x: op.flatten(x),
     lambda a: a.reshape(-1)),
]  # fmt: skip


@pytest.mark.parametrize("shape", [(3, 0, 5), (2, 3, 0), (0, 2, 3)], ids=str)
@pytest.mark.parametrize(("name", "build", "reference"), CASES, ids=[c[0] for c in CASES])
def test_zero_extent(shape: tuple[int, ...], name: str, build: Any, reference: Any) -> None:
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo(shape, "float32"))
    with bb.function("main", [x]):
        y = bb.emit(build(x))
        bb.emit_func_output(y)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())
    data = np.zeros(shape, "float32")
    got = vm["main"](relaxvm.tensor(data)).numpy()
    expected = reference(data)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_reshape_between_empty_shapes() -> None:
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((0, 4), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(op.reshape(x, (4, -1)))  # a literal 0 would copy x's extent (TVM's rule)
        bb.emit_func_output(y)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())
    assert vm["main"](relaxvm.tensor(np.zeros((0, 4), "float32"))).numpy().shape == (4, 0)
