"""gather_elements, gather_nd, scatter_elements, scatter_nd and one_hot on every target:
numpy's negative indices, deterministic repeated scatters (the last update wins), one_hot's
all-off rows, and ``VMIndexError`` naming the op, the axis and the index for an index out of
range or a symbolic extent that does not fit (never a read or write outside a buffer)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMIndexError
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
from relaxvm.ir.relax import op as rop
from relaxvm.registry.extensions import get_target_kind
from relaxvm.testing import (
    interpreter_target,
    missing_device_reason,
    real_target_kinds,
    registered_target,
)

TARGETS = [*real_target_kinds(), "interp"]
EXEC_MODES = ["bytecode", "compiled"]


def _device(name: str) -> relaxvm.Device:
    """The device target kind ``name`` runs its kernels on (the VM's; CPU inputs are copied
    there by the VM)."""
    return relaxvm.device(get_target_kind(name).device)


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
    exec_mode: str = "bytecode",
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
        ex = relaxvm.compile(bb.get(), target=target, exec_mode=exec_mode)
        vm = relaxvm.VirtualMachine(ex, _device(target))
        result: np.ndarray = vm["main"](*[relaxvm.tensor(a) for a in arrays]).numpy()
    return result


def _message(op: str, index: int, axis: int, size: int) -> str:
    return re.escape(
        f"{op}: index {index} is out of range for axis {axis} with size {size} "
        f"(valid range {-size}..{size - 1})"
    )


X = np.arange(12, dtype="float32").reshape(3, 4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_gathers_follow_numpy_with_negative_indices(target: str, exec_mode: str) -> None:
    i = np.array([[0, -1, 3], [-4, 1, 2], [2, 2, -2]], dtype="int32")
    got = _run(target, lambda x, i: rop.gather_elements(x, i, axis=1), [X, i], None, exec_mode)
    np.testing.assert_array_equal(got, np.take_along_axis(X, i % 4, axis=1))
    t = np.array([[0, 1], [-1, -1], [2, 0]], dtype="int64")
    got = _run(target, rop.gather_nd, [X, t], None, exec_mode)
    np.testing.assert_array_equal(got, X[t[:, 0] % 3, t[:, 1] % 4])


@pytest.mark.parametrize("target", TARGETS)
def test_scatters_apply_repeated_indices_in_order(target: str) -> None:
    # Every update of row 0 lands on column 1: the last one wins; "add" sums them all.
    i = np.array([[1, -3, 1], [0, 3, -1], [2, 2, 2]], dtype="int64")
    u = np.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]], dtype="float32")
    got = _run(target, lambda x, i, u: rop.scatter_elements(x, i, u, axis=1), [X, i, u])
    want = X.copy()
    want[0, 1], want[1, 0], want[1, 3], want[2, 2] = 30, 40, 60, 90
    np.testing.assert_array_equal(got, want)
    add = _run(target, lambda x, i, u: rop.scatter_elements(x, i, u, 1, "add"), [X, i, u])
    assert add[0, 1] == X[0, 1] + 60 and add[2, 2] == X[2, 2] + 240 and add[1, 3] == X[1, 3] + 110
    rows = np.array([[1], [-2], [0]], dtype="int64")
    got = _run(target, rop.scatter_nd, [X, rows, u[:, :3].repeat(2, axis=1)[:, :4]])
    np.testing.assert_array_equal(got[1], u[1, [0, 0, 1, 1]])
    np.testing.assert_array_equal(got[0], u[2, [0, 0, 1, 1]])


@pytest.mark.parametrize("target", TARGETS)
def test_one_hot_gives_off_rows_for_indices_out_of_range(target: str) -> None:
    i = np.array([0, 3, -1, 4, 2], dtype="int64")
    got = _run(target, lambda i: rop.one_hot(i, 5.0, -1.0, depth=4), [i])
    want = np.where(i[:, None] == np.arange(4), 5.0, -1.0).astype("float32")
    np.testing.assert_array_equal(got, want)
    assert (got[2] == -1).all() and (got[3] == -1).all()
    big = np.array([2**64 - 1, 1], dtype="uint64")
    got = _run(target, lambda i: rop.one_hot(i, 1.0, 0.0, depth=2, axis=0), [big])
    np.testing.assert_array_equal(got, [[0, 0], [0, 1]])


BAD_CASES = [
    pytest.param(
        lambda x, i: rop.gather_elements(x, i, axis=1),
        [X, np.array([[0], [4], [1]], "int64")],
        ("gather", 4, 1, 4),
        id="gather_elements",
    ),
    pytest.param(
        lambda x, i: rop.gather_elements(x, i, axis=0),
        [X, np.array([[0, -4, 0, 0]], "int8")],
        ("gather", -4, 0, 3),
        id="gather_elements-negative",
    ),
    pytest.param(
        rop.gather_nd,
        [X, np.array([[2, 3], [0, -5]], "int64")],
        ("gather", -5, 1, 4),
        id="gather_nd-second-component",
    ),
    pytest.param(
        lambda x, i, u: rop.scatter_elements(x, i, u, axis=1, reduction="add"),
        [X, np.array([[1, 2 ** 63 - 1]], "int64"), np.ones((1, 2), "float32")],
        ("scatter", 2**63 - 1, 1, 4),
        id="scatter_elements",
    ),
    pytest.param(
        rop.scatter_nd,
        [X, np.array([[1], [3]], "uint32"), np.ones((2, 4), "float32")],
        ("scatter", 3, 0, 3),
        id="scatter_nd-unsigned",
    ),
]  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("exec_mode", EXEC_MODES)
@pytest.mark.parametrize(("build", "arrays", "error"), BAD_CASES)
def test_index_out_of_range_raises_on_every_target(
    target: str,
    exec_mode: str,
    build: Callable[..., Any],
    arrays: list[np.ndarray],
    error: tuple[str, int, int, int],
) -> None:
    with pytest.raises(VMIndexError, match=_message(*error)):
        _run(target, build, arrays, None, exec_mode)


@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_extents_that_do_not_fit_raise(target: str) -> None:
    n, m = SymVar("n", "int64"), SymVar("m", "int64")
    # indices (m, 2) along axis 1 of data (n, 4): with m = 5 > n = 3 a row would fall outside.
    i = np.zeros((5, 2), "int64")
    with pytest.raises(VMIndexError, match=_message("gather", 4, 0, 3)):
        _run(target, lambda x, i: rop.gather_elements(x, i, 1), [X, i], [(n, 4), (m, 2)])
    ok = _run(target, lambda x, i: rop.gather_elements(x, i, 1), [X, i[:2]], [(n, 4), (m, 2)])
    np.testing.assert_array_equal(ok, X[:2, [0, 0]])
    # updates (m, 4) shorter than the index rows (n, 1) they pair with.
    rows = np.array([[0], [1], [2]], "int64")
    u = np.ones((2, 4), "float32")
    with pytest.raises(VMIndexError, match=_message("scatter", 2, 0, 2)):
        _run(target, rop.scatter_nd, [X, rows, u], [(3, 4), (n, 1), (m, 4)])


@pytest.mark.parametrize("target", TARGETS)
def test_large_index_tensors_are_checked_and_scattered_in_order(target: str) -> None:
    # Over 16384 indices: the check scans in parallel parts, the scatter stays serial.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, 100)).astype("float32")
    i = rng.integers(-100, 100, size=(200, 100)).astype("int64")
    got = _run(target, lambda x, i: rop.gather_elements(x, i, axis=1), [x, i])
    np.testing.assert_array_equal(got, np.take_along_axis(x, i % 100, axis=1))
    i[199, 99] = -101
    with pytest.raises(VMIndexError, match=_message("gather", -101, 1, 100)):
        _run(target, lambda x, i: rop.gather_elements(x, i, axis=1), [x, i])
    same = np.zeros((200, 100), "int64")
    u = np.arange(20000, dtype="float32").reshape(200, 100)
    got = _run(target, lambda x, i, u: rop.scatter_elements(x, i, u, axis=0), [x, same, u])
    np.testing.assert_array_equal(got[0], u[199])
    np.testing.assert_array_equal(got[1:], x[1:])
