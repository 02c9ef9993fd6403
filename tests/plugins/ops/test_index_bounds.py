"""User-supplied indices are checked on every target: numpy's negative indices, and an index
out of range raises ``VMIndexError`` naming the op, the axis, the index and the valid range
(never a read outside a buffer)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMIndexError
from relaxvm.ir import IntImm
from relaxvm.ir.relax import BlockBuilder, PrimStructInfo, PrimValue, TensorStructInfo, Tuple, Var
from relaxvm.ir.relax import op as rop
from relaxvm.ir.tir import intrin as T
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


def _take_module(
    x_shape: tuple[int, ...], i_shape: tuple[int, ...], axis: int | None, i_dtype: str
) -> relaxvm.ir.relax.IRModule:
    x = Var("x", TensorStructInfo(list(x_shape), "float32"))
    i = Var("i", TensorStructInfo(list(i_shape), i_dtype))
    bb = BlockBuilder()
    with bb.function("main", [x, i]):
        out = bb.emit(rop.take(x, i, axis=axis))
        bb.emit_func_output(out)
    return bb.get()


def _run_take(
    target: str,
    exec_mode: str,
    x: np.ndarray,
    idx: np.ndarray,
    axis: int | None,
) -> np.ndarray:
    mod = _take_module(x.shape, idx.shape, axis, str(idx.dtype))
    with _target(target):
        ex = relaxvm.compile(mod, target=target, exec_mode=exec_mode)
        vm = relaxvm.VirtualMachine(ex, _device(target))
        out = vm["main"](relaxvm.tensor(x), relaxvm.tensor(idx))
        result = out.numpy()
        # The VM stays usable after a failed call: the same executable runs again.
        assert vm is not None
    return result


def _message(index: int, axis: str, size: int) -> str:
    return re.escape(
        f"take: index {index} is out of range for {axis} with size {size} "
        f"(valid range {-size}..{size - 1})"
    )


X = np.arange(5 * 3, dtype="float32").reshape(5, 3)


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bad", [5, -6, 2**40, -(2**40), 2**63 - 1, -(2**63)])
def test_take_out_of_range_raises(target: str, exec_mode: str, bad: int) -> None:
    idx = np.array([0, -1, bad, 1], dtype="int64")
    with pytest.raises(VMIndexError, match=_message(bad, "axis 0", 5)):
        _run_take(target, exec_mode, X, idx, axis=0)


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
@pytest.mark.parametrize("target", TARGETS)
def test_take_negative_indices_wrap_like_numpy(target: str, exec_mode: str) -> None:
    idx = np.array([[-1, -5], [0, 4], [-3, 2]], dtype="int64")
    got = _run_take(target, exec_mode, X, idx, axis=0)
    np.testing.assert_array_equal(got, np.take(X, idx, axis=0))
    idx32 = np.array([-3, -1, 0, 2], dtype="int32")
    got = _run_take(target, exec_mode, X, idx32, axis=1)
    np.testing.assert_array_equal(got, np.take(X, idx32, axis=1))


@pytest.mark.parametrize("target", TARGETS)
def test_take_names_the_axis_and_the_flattened_input(target: str) -> None:
    with pytest.raises(VMIndexError, match=_message(3, "axis 1", 3)):
        _run_take(target, "bytecode", X, np.array([3], dtype="int32"), axis=1)
    with pytest.raises(VMIndexError, match=_message(-16, "the flattened input", 15)):
        _run_take(target, "bytecode", X, np.array([0, -16], dtype="int64"), axis=None)
    np.testing.assert_array_equal(
        _run_take(target, "bytecode", X, np.array([14, -15], dtype="int64"), axis=None),
        np.take(X, [14, -15]),
    )


@pytest.mark.parametrize("target", TARGETS)
def test_take_from_an_empty_axis_raises(target: str) -> None:
    empty = np.zeros((0, 3), dtype="float32")
    with pytest.raises(VMIndexError, match="take: index 0 is out of range for axis 0 with size 0"):
        _run_take(target, "bytecode", empty, np.array([0], dtype="int64"), axis=0)


@pytest.mark.parametrize("target", TARGETS)
def test_vm_stays_usable_after_a_bad_index(target: str) -> None:
    mod = _take_module((5, 3), (2,), 0, "int64")
    with _target(target):
        vm = relaxvm.VirtualMachine(relaxvm.compile(mod, target=target), _device(target))
        x = relaxvm.tensor(X)
        with pytest.raises(VMIndexError):
            vm["main"](x, relaxvm.tensor(np.array([0, 7], dtype="int64")))
        good = vm["main"](x, relaxvm.tensor(np.array([4, -2], dtype="int64")))
        np.testing.assert_array_equal(good.numpy(), np.take(X, [4, -2], axis=0))


def test_check_index_intrinsic_folds_and_prints() -> None:
    from relaxvm.ir import IntImm, Var, evaluate

    i = Var("i", "int32")
    check = T.check_index(i, 4, 0, "take")
    assert str(check) == "T.check_index(i, 4, 0, 0)"
    assert evaluate(check, {i: -4}) == 0
    assert evaluate(T.check_index(IntImm("int64", 3), 4, 0, 0), {}) == 3
    with pytest.raises(VMIndexError, match=_message(4, "axis 0", 4)):
        evaluate(check, {i: 4})
    with pytest.raises(relaxvm.errors.VMValueError, match="op must be one of"):
        T.check_index(i, 4, 0, "nonsense")


@pytest.mark.parametrize("target", TARGETS)
def test_take_fused_with_its_consumer_still_checks(target: str) -> None:
    x = Var("x", TensorStructInfo([5, 3], "float32"))
    i = Var("i", TensorStructInfo([2, 2], "int64"))
    bb = BlockBuilder()
    with bb.function("main", [x, i]):
        with bb.dataflow():
            picked = bb.emit(rop.take(x, i, axis=0))
            out = bb.emit_output(rop.add(rop.exp(picked), picked))
        bb.emit_func_output(out)
    with _target(target):
        vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target=target), _device(target))
        good = np.array([[4, -5], [0, 2]], dtype="int64")
        got = vm["main"](relaxvm.tensor(X), relaxvm.tensor(good)).numpy()
        taken = np.take(X, good, axis=0)
        np.testing.assert_allclose(got, np.exp(taken) + taken, rtol=1e-6)
        with pytest.raises(VMIndexError, match=_message(-7, "axis 0", 5)):
            vm["main"](relaxvm.tensor(X), relaxvm.tensor(np.array([[0, 1], [-7, 9]], "int64")))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("dtype", "bad"), [("uint64", 2**64 - 1), ("uint8", 200), ("int8", -128)])
def test_take_with_narrow_and_unsigned_indices(target: str, dtype: str, bad: int) -> None:
    idx = np.array([1, 4], dtype=dtype)
    got = _run_take(target, "bytecode", X, idx, axis=0)
    np.testing.assert_array_equal(got, np.take(X, idx.astype("int64"), axis=0))
    with pytest.raises(VMIndexError, match=_message(bad, "axis 0", 5)):
        _run_take(target, "bytecode", X, np.array([0, bad], dtype=dtype), axis=0)


@pytest.mark.parametrize("target", TARGETS)
def test_take_with_symbolic_shapes(target: str) -> None:
    from relaxvm.ir import Var as SymVar

    n, m = SymVar("n"), SymVar("m")
    x = Var("x", TensorStructInfo([m, 3], "float32"))
    i = Var("i", TensorStructInfo([n], "int64"))
    bb = BlockBuilder()
    with bb.function("main", [x, i]):
        bb.emit_func_output(bb.emit(rop.take(x, i, axis=0)))
    with _target(target):
        vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target=target), _device(target))
        rng = np.random.default_rng(3)
        for rows, count in [(5, 0), (5, 1), (7, 33), (2, 100)]:
            data = rng.standard_normal((rows, 3)).astype("float32")
            idx = rng.integers(-rows, rows, size=count).astype("int64")
            got = vm["main"](relaxvm.tensor(data), relaxvm.tensor(idx)).numpy()
            np.testing.assert_array_equal(got, np.take(data, idx, axis=0))
            if count:
                idx[-1] = rows  # the last index of the last chunk
                with pytest.raises(VMIndexError, match=_message(rows, "axis 0", rows)):
                    vm["main"](relaxvm.tensor(data), relaxvm.tensor(idx))


def test_checked_take_kernel_prints_and_parses_back() -> None:
    import relaxvm.script
    from relaxvm.ir.tir import PrimFunc, structural_equal
    from relaxvm.transform import LegalizeOps

    legalized = LegalizeOps()(_take_module((50, 8), (4, 3), 0, "int32"))
    (func,) = [f for f in legalized.functions.values() if isinstance(f, PrimFunc)]
    assert "T.check_index(" in func.script()
    source = "from relaxvm.script import tir as T\n" + func.script()
    assert structural_equal(relaxvm.script.from_source(source), func)


@pytest.mark.parametrize("target", TARGETS)
def test_one_dimensional_gather_checks_while_gathering(target: str) -> None:
    # A 1-d gather checks its indices in the gather loop itself (parallel parts, a clamped
    # read for a bad index): the error still names the first bad index in order, and a bad
    # index never reads outside the table, wherever it falls among the parts.
    from relaxvm.ir import Var as SymVar

    n, m = SymVar("n"), SymVar("m")
    table = Var("table", TensorStructInfo([m], "float32"))
    i = Var("i", TensorStructInfo([n], "int64"))
    bb = BlockBuilder()
    with bb.function("main", [table, i]):
        bb.emit_func_output(bb.emit(rop.take(table, i, axis=0)))
    with _target(target):
        vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target=target), _device(target))
        rng = np.random.default_rng(7)
        data = rng.standard_normal(50).astype("float32")
        for count in (1, 31, 33, 1000):
            idx = rng.integers(-50, 50, size=count).astype("int64")
            got = vm["main"](relaxvm.tensor(data), relaxvm.tensor(idx)).numpy()
            np.testing.assert_array_equal(got, np.take(data, idx))
            for where in sorted({0, count // 2, count - 1}):
                bad = idx.copy()
                bad[where] = -51
                bad[count - 1 :] = 2**62 if where < count - 1 else bad[count - 1 :]
                with pytest.raises(VMIndexError, match=_message(-51, "axis 0", 50)):
                    vm["main"](relaxvm.tensor(data), relaxvm.tensor(bad))
        empty = np.zeros(0, dtype="float32")
        with pytest.raises(VMIndexError, match=_message(0, "axis 0", 0)[:30]):
            vm["main"](relaxvm.tensor(empty), relaxvm.tensor(np.array([0], dtype="int64")))
        got = vm["main"](relaxvm.tensor(empty), relaxvm.tensor(np.zeros(0, dtype="int64")))
        assert got.numpy().shape == (0,)


def _scalar_take_module(axis: int | None) -> relaxvm.ir.relax.IRModule:
    """``main(x, i) = (take(x, i), take(x, 2))`` with ``i`` an ``R.Prim("int64")`` known only
    at run time and 2 a literal ``R.prim_value``."""
    x = Var("x", TensorStructInfo([5, 3], "float32"))
    i = Var("i", PrimStructInfo("int64"))
    bb = BlockBuilder()
    with bb.function("main", [x, i]):
        by_var = bb.emit(rop.take(x, i, axis=axis))
        by_literal = bb.emit(rop.take(x, PrimValue(IntImm("int64", 2)), axis=axis))
        bb.emit_func_output(Tuple([by_var, by_literal]))
    return bb.get()


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
@pytest.mark.parametrize("target", TARGETS)
def test_take_with_a_scalar_index_matches_numpy(target: str, exec_mode: str) -> None:
    for axis in (0, 1, -1, None):
        with _target(target):
            ex = relaxvm.compile(_scalar_take_module(axis), target=target, exec_mode=exec_mode)
            vm = relaxvm.VirtualMachine(ex, _device(target))
            for index in (0, 2, -1, -3):
                by_var, by_literal = vm["main"](relaxvm.tensor(X), index)
                np.testing.assert_array_equal(by_var.numpy(), np.take(X, index, axis=axis))
                np.testing.assert_array_equal(by_literal.numpy(), np.take(X, 2, axis=axis))
            where = "the flattened input" if axis is None else f"axis {axis % 2}"
            size = 15 if axis is None else X.shape[axis]
            with pytest.raises(VMIndexError, match=_message(size, where, size)):
                vm["main"](relaxvm.tensor(X), size)
