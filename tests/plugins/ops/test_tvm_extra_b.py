"""slice_scatter and index_tensor on every target: numpy's results, and ``VMIndexError`` (never
a read or write outside a buffer) for an index out of range, a slice that leaves the axis, or
a symbolic extent that does not fit."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import RelaxVMError, VMIndexError
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, ShapeStructInfo, TensorStructInfo, Var
from relaxvm.ir.relax import op as rop
from relaxvm.registry.extensions import get_target_kind
from relaxvm.testing import (
    interpreter_target,
    missing_device_reason,
    real_target_kinds,
    registered_target,
)

TARGETS = [*real_target_kinds(), "interp"]
N, M = SymVar("n"), SymVar("m")


@contextlib.contextmanager
def _target(name: str) -> Iterator[None]:
    if name == "interp":
        with registered_target(interpreter_target()):
            yield
        return
    reason = missing_device_reason(name)
    if reason is not None:
        pytest.skip(reason)
    yield


def _run(
    target: str,
    build: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    shapes: Sequence[Sequence[Any]] | None = None,
) -> np.ndarray:
    """Compile ``build(*params)`` for ``arrays`` (or the given symbolic shapes) and run it."""
    shapes = shapes or [a.shape for a in arrays]
    params = [
        Var(f"a{k}", TensorStructInfo(list(shape), str(a.dtype)))
        for k, (shape, a) in enumerate(zip(shapes, arrays, strict=True))
    ]
    bb = BlockBuilder()
    with bb.function("main", params):
        out = bb.emit(build(*params))
        bb.emit_func_output(out)
    with _target(target):
        ex = relaxvm.compile(bb.get(), target=target)
        vm = relaxvm.VirtualMachine(ex, relaxvm.device(get_target_kind(target).device))
        result: np.ndarray = vm["main"](*[relaxvm.tensor(a) for a in arrays]).numpy()
    return result


def _message(op: str, index: int, axis: int, size: int) -> str:
    return re.escape(f"{op}: index {index} is out of range for axis {axis} with size {size} ")


X = np.arange(24, dtype="float32").reshape(4, 6)


@pytest.mark.parametrize("target", TARGETS)
def test_slice_scatter_with_symbolic_bounds_follows_numpy(target: str) -> None:
    src = -np.arange(12, dtype="float32").reshape(2, 6)
    build = lambda x, s: rop.slice_scatter(x, s, 1, 1 + 2 * M, 2, axis=0)  # noqa: E731
    got = _run(target, build, [X, src], [(N, 6), (M, 6)])
    want = X.copy()
    want[1:5:2] = src
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_slice_scatter_past_the_axis_raises(target: str) -> None:
    # Rows 1, 3, 5 of a 4-row tensor: the third lands outside.
    src = np.zeros((3, 6), "float32")
    build = lambda x, s: rop.slice_scatter(x, s, 1, 1 + 2 * M, 2, axis=0)  # noqa: E731
    with pytest.raises(VMIndexError, match=_message("scatter", 5, 0, 4)):
        _run(target, build, [X, src], [(N, 6), (M, 6)])


@pytest.mark.parametrize("target", TARGETS)
def test_slice_scatter_checks_symbolic_extents(target: str) -> None:
    # The slice 0:4:2 has 2 positions, src has 3 rows.
    build = lambda x, s: rop.slice_scatter(x, s, 0, N, 2, axis=0)  # noqa: E731
    with pytest.raises(VMIndexError, match=_message("scatter", 2, 0, 2)):
        _run(target, build, [X, np.zeros((3, 6), "float32")], [(N, 6), (M, 6)])
    # ... src has 1 row.
    with pytest.raises(VMIndexError, match=_message("scatter", 1, 0, 1)):
        _run(target, build, [X, np.zeros((1, 6), "float32")], [(N, 6), (M, 6)])
    # The other axis: src has 5 columns where the input has 6.
    build = lambda x, s: rop.slice_scatter(x, s, 0, 4, 2, axis=0)  # noqa: E731
    with pytest.raises(VMIndexError, match=r"scatter: index \d+ is out of range for axis 1"):
        _run(target, build, [X, np.zeros((2, 5), "float32")], [(4, N), (2, M)])


@pytest.mark.parametrize("target", TARGETS)
def test_index_tensor_follows_numpy(target: str) -> None:
    i = np.array([[0], [-1], [2]], "int64")
    j = np.array([5, -6, 1, 0], "int32")
    got = _run(target, lambda x, i, j: rop.index_tensor(x, [i, j]), [X, i, j])
    np.testing.assert_array_equal(got, X[i, j])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("i", "j", "bad"),
    [
        (np.array([0, 4, 1]), np.array([0, 1, 2]), (4, 0, 4)),
        (np.array([0, -5, 1]), np.array([0, 1, 2]), (-5, 0, 4)),
        (np.array([0, 1, 2]), np.array([0, 6, 2]), (6, 1, 6)),
    ],
    ids=["past-end", "before-start", "second-axis"],
)
def test_index_tensor_rejects_indices_out_of_range(
    target: str, i: np.ndarray, j: np.ndarray, bad: tuple[int, int, int]
) -> None:
    with pytest.raises(VMIndexError, match=_message("gather", *bad)):
        _run(target, lambda x, i, j: rop.index_tensor(x, [i, j]), [X, i, j])


@pytest.mark.parametrize("target", TARGETS)
def test_index_put_applies_repeated_positions_in_order(target: str) -> None:
    i, j = np.array([[1], [-3]]), np.array([0, 5, 0], "int32")
    v = np.array([10, 20, 30], "float32")
    got = _run(target, lambda x, i, j, v: rop.index_put(x, [i, j], v), [X, i, j, v])
    want = X.copy()
    want[i, j] = v
    assert got[1, 0] == 30
    np.testing.assert_array_equal(got, want)
    build = lambda x, i, j, v: rop.index_put(x, [i, j], v, accumulate=True)  # noqa: E731
    got = _run(target, build, [X, i, j, v])
    want = X.copy()
    np.add.at(want, (i, j), np.broadcast_to(v, (2, 3)))
    assert got[1, 0] == X[1, 0] + 80  # rows 1 and -3 are one row: four updates
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", TARGETS)
def test_index_put_rejects_indices_out_of_range(target: str) -> None:
    v = np.zeros(3, "float32")
    build = lambda x, i, j, v: rop.index_put(x, [i, j], v)  # noqa: E731
    with pytest.raises(VMIndexError, match=_message("scatter", -7, 1, 6)):
        _run(target, build, [X, np.array([0, 1, 2]), np.array([0, -7, 2]), v])
    with pytest.raises(VMIndexError, match=_message("scatter", 4, 0, 4)):
        _run(target, build, [X, np.array([0, 4, 2], "uint8"), np.array([0, 1, 2]), v])
    # values shorter than the indices (symbolic extents the inference could not compare).
    with pytest.raises(VMIndexError, match=r"scatter: index 2 is out of range for axis 0 "):
        _run(target, build, [X, np.array([0, 1, 2]), np.array([0, 1, 2]), v[:2]],
             [X.shape, (N,), (N,), (M,)])  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
def test_multinomial_from_uniform_inverts_the_cdf(target: str) -> None:
    prob = np.array([[0.25, 0.25, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0]], "float32")
    u = np.array([[0.0], [0.3], [0.75], [0.99], [0.5]], "float32")
    rows = np.array([[0], [0], [-2], [0], [1]], "int64")
    got = _run(target, rop.multinomial_from_uniform, [prob, u, rows])
    # Row 0 runs 0.25, 0.5, 1.0, 1.0: 0.75 and 0.99 first fall below it at category 2. A row
    # of zeros never exceeds the sample: the last category.
    np.testing.assert_array_equal(got, [[0], [1], [2], [2], [3]])
    assert got.dtype == np.int64


@pytest.mark.parametrize("target", TARGETS)
def test_multinomial_from_uniform_rejects_rows_out_of_range(target: str) -> None:
    prob = np.full((2, 4), 0.25, "float32")
    u, rows = np.zeros((2, 1), "float32"), np.array([[1], [2]], "int64")
    with pytest.raises(VMIndexError, match=_message("gather", 2, 0, 2)):
        _run(target, rop.multinomial_from_uniform, [prob, u, rows])


def test_shape_to_tensor_needs_known_extents() -> None:
    shape = Var("s", ShapeStructInfo(ndim=2))
    bb = BlockBuilder()
    with bb.function("main", [shape]):
        bb.emit_func_output(bb.emit(rop.shape_to_tensor(shape)))
    with pytest.raises(RelaxVMError, match="relax.shape_to_tensor: cannot legalize"):
        relaxvm.compile(bb.get(), target="llvm")


def test_slice_scatter_needs_a_constant_step() -> None:
    x = Var("x", TensorStructInfo([N, 6], "float32"))
    s = Var("s", TensorStructInfo([1, 6], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x, s]):
        bb.emit_func_output(bb.emit(rop.slice_scatter(x, s, 0, 1, N, axis=0)))
    with pytest.raises(RelaxVMError, match="step must be a constant of at least 1, got n"):
        relaxvm.compile(bb.get(), target="llvm")


@pytest.mark.parametrize("target", TARGETS)
def test_index_put_broadcasts_a_scalar_value(target: str) -> None:
    i = np.array([0, -1, 2])
    build = lambda x, i, v: rop.index_put(x, [i, i], v)  # noqa: E731
    got = _run(target, build, [X, i, np.array(7, "float32")])
    want = X.copy()
    want[i, i] = 7
    np.testing.assert_array_equal(got, want)
