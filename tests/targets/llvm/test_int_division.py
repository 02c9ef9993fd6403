"""Integer division and remainder at the edges give numpy's results on every target.

Documented in docs/ops.md: ``x // 0 == 0`` and ``x % 0 == 0`` (floor and truncated forms
alike), and ``INT_MIN // -1 == INT_MIN`` (wrapping; the remainder is 0). The interpreter
computes exactly and narrows on the store; the llvm target selects around the division so
that no ``sdiv``/``srem`` with a zero divisor or ``INT_MIN / -1`` ever reaches LLVM.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
import relaxvm_llvm
from relaxvm.ir import Div, FloorDiv, FloorMod, IntImm, Mod, Var
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo
from relaxvm.ir.relax import Var as RVar
from relaxvm.ir.relax import op as rop
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, PrimFunc, run_prim_func, seq
from relaxvm.registry.extensions import get_target_kind
from relaxvm.testing import (
    interpreter_target,
    missing_device_reason,
    real_target_kinds,
    registered_target,
)

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]
OPS: list[tuple[str, type]] = [
    ("truncdiv", Div),
    ("truncmod", Mod),
    ("floordiv", FloorDiv),
    ("floormod", FloorMod),
]


def _numpy(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's integer results, computed without warnings (zero divisors give 0)."""
    with np.errstate(all="ignore"):
        if name == "floordiv":
            return np.floor_divide(a, b)  # type: ignore[no-any-return]
        if name == "floormod":
            return np.remainder(a, b)  # type: ignore[no-any-return]
        if name == "truncmod":
            return np.fmod(a, b)  # type: ignore[no-any-return]
        # numpy has no integer truncating division: a - fmod(a, b) is an exact multiple of b.
        quotient = np.floor_divide(a - np.fmod(a, b), np.where(b == 0, 1, b))
        return np.where(b == 0, 0, quotient).astype(a.dtype)  # type: ignore[no-any-return]


def _edge_pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    values = sorted({info.min, info.min + 1, -7, -1, 0, 1, 3, 7, info.max - 1, info.max})
    values = [v for v in values if info.min <= v <= info.max]
    column = np.array(values, dtype=dtype)
    a, b = np.meshgrid(column, column, indexing="ij")
    return a.ravel(), b.ravel()


def _division_func(dtype: str, kind: ForKind, divisor: int | None) -> PrimFunc:
    """out[k, i] = op_k(A[i], B[i]) (or by the constant ``divisor``) for the four ops."""
    n = Var("n", "int64")
    a, b = Buffer("A", (n,), dtype), Buffer("B", (n,), dtype)
    out = Buffer("out", (len(OPS), n), dtype)
    i = Var("i", "int64")
    rhs: Any = b[i] if divisor is None else IntImm(dtype, divisor)
    stores = [BufferStore(out, op(a[i], rhs), [k, i]) for k, (_, op) in enumerate(OPS)]
    return PrimFunc([a, b, out], For(i, 0, n, kind, seq(*stores)))


def _expected(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([_numpy(name, a, b) for name, _ in OPS])


@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.VECTORIZED])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tir_division_edges_match_numpy(dtype: str, kind: ForKind) -> None:
    a, b = _edge_pairs(dtype)
    func = _division_func(dtype, kind, None)
    expected = _expected(a, b)
    interp = np.zeros((len(OPS), a.size), dtype)
    run_prim_func(func, a, b, interp)
    np.testing.assert_array_equal(interp, expected, err_msg="interpreter")
    native = np.zeros((len(OPS), a.size), dtype)
    relaxvm_llvm.build(func)["main"](a, b, native)
    np.testing.assert_array_equal(native, expected, err_msg="llvm")


@pytest.mark.parametrize(
    ("dtype", "divisor"),
    # No negative constant of an unsigned type: uint32 gets 0 and 3 only.
    [
        (d, v)
        for d in ["int8", "int32", "int64", "uint32"]
        for v in [0, -1, 3]
        if d[0] == "i" or v >= 0
    ],
)
def test_constant_divisors_match_numpy(dtype: str, divisor: int) -> None:
    a, _ = _edge_pairs(dtype)
    b = np.full_like(a, divisor)
    func = _division_func(dtype, ForKind.SERIAL, divisor)
    expected = _expected(a, b)
    for name, run in _runners(func).items():
        got = np.zeros((len(OPS), a.size), dtype)
        run(a, b, got)
        np.testing.assert_array_equal(got, expected, err_msg=name)


def _runners(func: PrimFunc) -> dict[str, Callable[..., None]]:
    module = relaxvm_llvm.build(func)
    return {
        "interpreter": lambda *args: run_prim_func(func, *args),
        "llvm": lambda *args: module["main"](*args),
    }


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
@pytest.mark.parametrize("target", [*real_target_kinds(), "interp"])
def test_relax_floor_divide_edges_on_every_target(target: str, exec_mode: str) -> None:
    a, b = _edge_pairs("int32")
    x, y = (RVar(name, TensorStructInfo([a.size], "int32")) for name in "xy")
    bb = BlockBuilder()
    with bb.function("main", [x, y]):
        q = bb.emit(rop.floor_divide(x, y))
        r = bb.emit(rop.subtract(x, rop.multiply(q, y)))
        bb.emit_func_output(relaxvm.ir.relax.Tuple([q, r]))
    mod = bb.get()
    if target != "interp" and missing_device_reason(target) is not None:
        pytest.skip(str(missing_device_reason(target)))
    interp = target == "interp"
    scope: Any = registered_target(interpreter_target()) if interp else contextlib.nullcontext()
    with scope:
        ex = relaxvm.compile(mod, target=target, exec_mode=exec_mode)
        device = relaxvm.device(get_target_kind(target).device)  # CPU inputs are copied there
        vm = relaxvm.VirtualMachine(ex, device)
        q_out, r_out = vm["main"](relaxvm.tensor(a), relaxvm.tensor(b))
    expected = _numpy("floordiv", a, b)
    np.testing.assert_array_equal(q_out.numpy(), expected)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(r_out.numpy(), a - expected * b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_floor_mod_gives_numpy_signs_and_special_values(dtype: str) -> None:
    values = np.array([0.0, -0.0, 3.0, -3.0, 7.5, -7.5, 1e30, np.inf, -np.inf, np.nan], dtype)
    a, b = (v.ravel() for v in np.meshgrid(values, values, indexing="ij"))
    n = Var("n", "int64")
    a_buf, b_buf, out = (Buffer(name, (n,), dtype) for name in ("A", "B", "out"))
    i = Var("i", "int64")
    func = PrimFunc(
        [a_buf, b_buf, out],
        For(i, 0, n, ForKind.SERIAL, seq(BufferStore(out, FloorMod(a_buf[i], b_buf[i]), [i]))),
    )
    with np.errstate(all="ignore"):
        expected = np.remainder(a, b)
    got = np.zeros_like(a)
    relaxvm_llvm.build(func)["main"](a, b, got)
    np.testing.assert_array_equal(got, expected)  # NaNs compare equal here
    # The sign of a zero remainder follows the divisor: 3 % -3 is -0.0, -3 % 3 is +0.0.
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros]))
