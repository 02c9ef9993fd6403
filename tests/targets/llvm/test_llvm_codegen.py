"""Expressions and dtypes: native kernels agree with the reference interpreter and numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm_llvm
from relaxvm.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Select,
    Var,
)
from relaxvm.ir.tir import (
    Buffer,
    BufferStore,
    For,
    ForKind,
    PrimFunc,
    if_then_else,
    seq,
)
from relaxvm.ir.tir import intrin as T

NUMERIC = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"]
ARITH_OPS = ["add", "sub", "mul", "min", "max", "select"]
CMP_OPS = [LT, LE, GT, GE, EQ, NE]


def _loop(n: Any, body_of: Any, name: str = "i") -> For:
    i = Var(name, "int64")
    return For(i, 0, n, ForKind.SERIAL, body_of(i))


def elementwise_func(dtype: str) -> PrimFunc:
    n = Var("n", "int64")
    a, b = Buffer("A", (n,), dtype), Buffer("B", (n,), dtype)
    out = Buffer("out", (len(ARITH_OPS), n), dtype)
    cmp = Buffer("cmp", (len(CMP_OPS), n), "bool")
    casts = Buffer("casts", (3, n), "float32")

    def body(i: Var) -> Any:
        x, y = a[i], b[i]
        values = [x + y, x - y, x * y, Min(x, y), Max(x, y), Select(LT(x, y), y, x)]
        stores = [BufferStore(out, v, [k, i]) for k, v in enumerate(values)]
        stores += [BufferStore(cmp, op(x, y), [k, i]) for k, op in enumerate(CMP_OPS)]
        stores.append(BufferStore(casts, Cast("float32", x), [0, i]))
        stores.append(BufferStore(casts, Cast("float32", Cast("int32", y)), [1, i]))
        stores.append(BufferStore(casts, Cast("float32", Cast("bool", x)), [2, i]))
        return seq(*stores)

    return PrimFunc([a, b, out, cmp, casts], _loop(n, body), attrs={"global_symbol": f"ew_{dtype}"})


def division_func(dtype: str) -> PrimFunc:
    n = Var("n", "int64")
    a, b = Buffer("A", (n,), dtype), Buffer("B", (n,), dtype)
    out = Buffer("out", (4, n), dtype)

    def body(i: Var) -> Any:
        x, y = a[i], b[i]
        ops = [FloorDiv(x, y), FloorMod(x, y), Div(x, y), Mod(x, y)]
        return seq(*(BufferStore(out, v, [k, i]) for k, v in enumerate(ops)))

    return PrimFunc([a, b, out], _loop(n, body), attrs={"global_symbol": f"div_{dtype}"})


UNARY = [
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "erf",
    "fabs",
    "floor",
    "ceil",
    "round",
]


def math_func(dtype: str, lanes: int | None = None) -> PrimFunc:
    n: Any = Var("n", "int64") if lanes is None else lanes
    a, b = Buffer("A", (n,), dtype), Buffer("B", (n,), dtype)
    out = Buffer("out", (len(UNARY) + 1, n), dtype)

    def body(i: Var) -> Any:
        stores = [BufferStore(out, getattr(T, name)(a[i]), [k, i]) for k, name in enumerate(UNARY)]
        stores.append(BufferStore(out, T.pow(a[i], b[i]), [len(UNARY), i]))
        return seq(*stores)

    if lanes is None:
        loop = _loop(n, body)
        name = f"math_{dtype}"
    else:  # one explicitly vectorized loop: vector intrinsics and scalarized libm calls
        i = Var("i", "int64")
        loop = For(i, 0, lanes, ForKind.VECTORIZED, body(i))
        name = f"vmath_{dtype}"
    return PrimFunc([a, b, out], loop, attrs={"global_symbol": name})


def logic_func() -> PrimFunc:
    n = Var("n", "int64")
    p, q = Buffer("P", (n,), "bool"), Buffer("Q", (n,), "bool")
    out = Buffer("out", (5, n), "bool")
    nums = Buffer("nums", (n,), "int32")

    def body(i: Var) -> Any:
        x, y = p[i], q[i]
        values = [x & y, x | y, ~x, EQ(x, y), Select(x, y, ~y)]
        stores = [BufferStore(out, v, [k, i]) for k, v in enumerate(values)]
        stores.append(BufferStore(nums, Cast("int32", x) + Cast("int32", y) * 2, [i]))
        return seq(*stores)

    return PrimFunc([p, q, out, nums], _loop(n, body), attrs={"global_symbol": "logic"})


@pytest.fixture(scope="module")
def compiled() -> Any:
    funcs: dict[str, PrimFunc] = {}
    for dtype in NUMERIC:
        funcs[f"ew_{dtype}"] = elementwise_func(dtype)
    for dtype in ["int8", "int32", "int64", "uint8", "float16", "float32", "float64"]:
        funcs[f"div_{dtype}"] = division_func(dtype)
    for dtype in ["float16", "float32", "float64"]:
        funcs[f"math_{dtype}"] = math_func(dtype)
        funcs[f"vmath_{dtype}"] = math_func(dtype, lanes=40)
    funcs["logic"] = logic_func()
    return funcs, relaxvm_llvm.build(funcs)


def _values(dtype: str, n: int, rng: np.random.Generator, nonzero: bool = False) -> np.ndarray:
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        values = rng.uniform(-8, 8, n).astype(np_dtype)
        values[:4] = [0.0, -0.0, 3.0, -2.5]
    else:
        info = np.iinfo(np_dtype)
        low = max(info.min + 1, -1000) if nonzero else info.min
        values = rng.integers(low, min(info.max, 1000) + 1, n, dtype=np.int64).astype(np_dtype)
    if nonzero:
        values[values == 0] = 3
    return values


@pytest.mark.parametrize("dtype", NUMERIC)
def test_elementwise_ops_match_interpreter(
    compiled: Any, dtype: str, run_both: Any, assert_same: Any
) -> None:
    funcs, module = compiled
    rng = np.random.default_rng(1)
    n = 37
    a, b = _values(dtype, n, rng), _values(dtype, n, rng)
    b[5], a[6] = a[5], b[6]  # equal pairs for == and !=
    args = [a, b, np.zeros((6, n), dtype), np.zeros((6, n), bool), np.zeros((3, n), "float32")]
    ref, out = run_both(funcs[f"ew_{dtype}"], module[f"ew_{dtype}"], args)
    assert_same(ref, out, rtol=1e-3 if dtype == "float16" else 1e-6)
    # And numpy agrees on what the ops mean.
    np.testing.assert_array_equal(out[3][0], a < b)
    np.testing.assert_array_equal(out[3][5], a != b)
    np.testing.assert_array_equal(out[2][3], np.minimum(a, b))


def test_float_nan_semantics(compiled: Any) -> None:
    _, module = compiled
    a = np.array([np.nan, 1.0, np.nan, np.inf], "float32")
    b = np.array([1.0, np.nan, np.nan, 1.0], "float32")
    out, cmp = np.zeros((6, 4), "float32"), np.zeros((6, 4), bool)
    module["ew_float32"](a, b, out, cmp, np.zeros((3, 4), "float32"))
    with np.errstate(invalid="ignore"):
        expected = [a < b, a <= b, a > b, a >= b, a == b, a != b]
    np.testing.assert_array_equal(cmp, expected)  # only != is true with NaN
    # min/max are numpy's minimum/maximum: NaN in either operand wins.
    np.testing.assert_array_equal(out[3], np.minimum(a, b))
    np.testing.assert_array_equal(out[4], np.maximum(a, b))
    np.testing.assert_array_equal(out[3], [np.nan, np.nan, np.nan, 1.0])


@pytest.mark.parametrize(
    "dtype", ["int8", "int32", "int64", "uint8", "float16", "float32", "float64"]
)
def test_division_semantics(compiled: Any, dtype: str, run_both: Any, assert_same: Any) -> None:
    funcs, module = compiled
    rng = np.random.default_rng(2)
    n = 64
    a = _values(dtype, n, rng, nonzero=True)
    b = (
        _values(dtype, n, rng, nonzero=True) % 13
        if np.dtype(dtype).kind != "f"
        else (_values(dtype, n, rng, nonzero=True))
    )
    if np.dtype(dtype).kind != "f":
        b = b.astype(dtype)
        b[b == 0] = 5
        if np.dtype(dtype).kind == "i":
            b[::3] = -b[::3]
    ref, out = run_both(
        funcs[f"div_{dtype}"], module[f"div_{dtype}"], [a, b, np.zeros((4, n), dtype)]
    )
    tol = 2e-3 if dtype == "float16" else 1e-5
    assert_same(ref, out, rtol=tol, atol=tol)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(out[2][0], a // b)
        np.testing.assert_array_equal(out[2][1], a % b)


@pytest.mark.parametrize("prefix", ["math", "vmath"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_math_intrinsics(
    compiled: Any, prefix: str, dtype: str, run_both: Any, assert_same: Any
) -> None:
    funcs, module = compiled
    rng = np.random.default_rng(3)
    n = 40
    a = rng.uniform(0.05, 4.0, n).astype(dtype)
    a[:3] = [0.5, 1.5, 2.5]  # round() ties go to even
    b = rng.uniform(-2, 2, n).astype(dtype)
    ref, out = run_both(
        funcs[f"{prefix}_{dtype}"], module[f"{prefix}_{dtype}"], [a, b, np.zeros((14, n), dtype)]
    )
    tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]
    assert_same(ref, out, rtol=tol, atol=tol)
    wide = a.astype("float64")
    np.testing.assert_allclose(out[2][0], np.exp(wide), rtol=max(tol, 1e-6) * 2)
    np.testing.assert_array_equal(out[2][UNARY.index("round")][:3], [0.0, 2.0, 2.0])


def test_bool_logic_and_casts(compiled: Any, run_both: Any, assert_same: Any) -> None:
    funcs, module = compiled
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    args = [p, q, np.zeros((5, 4), bool), np.zeros(4, "int32")]
    ref, out = run_both(funcs["logic"], module["logic"], args)
    assert_same(ref, out)
    np.testing.assert_array_equal(out[2][0], p & q)
    np.testing.assert_array_equal(out[3], p.astype("int32") + 2 * q.astype("int32"))


def test_if_then_else_reads_only_the_chosen_branch(run_both: Any, assert_same: Any) -> None:
    n = Var("n", "int64")
    a, out = Buffer("A", (n,), "float32"), Buffer("out", (n,), "float32")

    def body(i: Var) -> Any:
        # Padding: A[i - 1] is out of bounds for i == 0 and must not be read there.
        return BufferStore(out, if_then_else(GE(i, IntImm("int64", 1)), a[i - 1], 0.0), [i])

    func = PrimFunc([a, out], _loop(n, body), attrs={"global_symbol": "shift"})
    module = relaxvm_llvm.build(func)
    x = np.arange(1, 6, dtype="float32")
    ref, got = run_both(func, module["shift"], [x, np.zeros(5, "float32")])
    assert_same(ref, got)
    np.testing.assert_array_equal(got[1], [0, 1, 2, 3, 4])


def test_vectorized_math_is_vector_code(compiled: Any) -> None:
    from relaxvm_llvm.codegen import generate_kernel_ir

    funcs, _ = compiled
    text, _ = generate_kernel_ir(funcs["vmath_float32"], "vmath", "__rvm_vmath", ())
    assert "llvm.log.v40f32" in text
    assert "llvm.exp.v40f32" not in text  # float32 exp is a polynomial in vector code
    assert "llvm.fma.v40f32" in text
    assert "tanhf" not in text  # float32 tanh is float64 vector arithmetic (codegen_math_f64)
    assert "llvm.fma.v40f64" in text
    f64_text, _ = generate_kernel_ir(funcs["vmath_float64"], "vmath", "__rvm_vmath", ())
    assert '@"tanh"' in f64_text  # float64 still calls libm, lane by lane


def test_strict_fastmath_matches_the_interpreter_bit_for_bit(run_both: Any) -> None:
    from relaxvm.ir.tir import te

    a = te.placeholder((3, 999), "float32", name="A")
    b = te.placeholder((3, 999), "float32", name="B")
    k = te.reduce_axis((0, 999), "k")
    dot = te.compute((3,), lambda i: te.sum(a[i, k] * b[i, k], axis=k), name="D")
    func = te.create_prim_func([a, b, dot], name="dot")
    strict = relaxvm_llvm.build(func, {"fastmath": "strict"})
    fast = relaxvm_llvm.build(func)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 999)).astype("float32")
    y = rng.standard_normal((3, 999)).astype("float32")
    ref, out = run_both(func, strict["dot"], [x, y, np.zeros(3, "float32")])
    np.testing.assert_array_equal(out[2], ref[2])
    fast_out = np.zeros(3, "float32")
    fast["dot"](x, y, fast_out)  # reassociated: equal up to rounding
    np.testing.assert_allclose(fast_out, ref[2], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_division_never_traps(compiled: Any, dtype: str) -> None:
    # The interpreter raises on a zero divisor; native code must not kill the process
    # (hardware traps on x / 0 and INT_MIN / -1). Zero divisors give 0, like numpy.
    _, module = compiled
    info = np.iinfo(dtype)
    a = np.array([7, info.min, info.min, 5, -9 if info.min < 0 else 9], dtype)
    b = np.array([0, -1 if info.min < 0 else 1, 0, 1, 2], dtype)
    out = np.full((4, 5), 99, dtype)
    module[f"div_{dtype}"](a, b, out)
    assert (out[:, 0] == 0).all() and (out[:, 2] == 0).all()
    np.testing.assert_array_equal(out[0, 3:], a[3:] // b[3:])
    if info.min < 0:
        assert out[0, 1] == info.min and out[1, 1] == 0  # -INT_MIN wraps to INT_MIN


def _exp_kernels() -> Any:
    a, out = Buffer("A", (64,), "float32"), Buffer("out", (64,), "float32")
    i, j = Var("i", "int64"), Var("j", "int64")
    vector = PrimFunc(
        [a, out],
        For(i, 0, 64, ForKind.VECTORIZED, BufferStore(out, T.exp(a[i]), [i])),
        attrs={"global_symbol": "vexp"},
    )
    scalar = PrimFunc(
        [a, out],
        For(j, 0, 64, ForKind.SERIAL, BufferStore(out, T.sigmoid(a[j]), [j])),
        attrs={"global_symbol": "afn_sigmoid"},
    )
    return relaxvm_llvm.build(vector), relaxvm_llvm.build(scalar, {"fastmath": "contract,afn"})


def test_polynomial_exp_accuracy_and_special_values() -> None:
    vector, scalar = _exp_kernels()
    rng = np.random.default_rng(11)
    x = np.concatenate(
        [rng.uniform(-87, 88, 5000), rng.uniform(-3, 3, 5000), rng.standard_normal(2000) * 1e-4]
    ).astype("float32")
    got = np.empty_like(x)
    for start in range(0, x.size - 63, 64):
        vector["vexp"](x[start : start + 64], got[start : start + 64])
    usable = (x.size // 64) * 64
    exact = np.exp(x[:usable].astype("float64"))
    ulps = np.abs(got[:usable] - exact) / np.spacing(exact.astype("float32"))
    assert ulps.max() <= 2.0
    special = np.zeros(64, "float32")
    special[:9] = [np.nan, np.inf, -np.inf, 0.0, 89.0, 100.0, -103.0, -200.0, 88.5]
    out = np.zeros(64, "float32")
    vector["vexp"](special, out)
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == 0.0 and out[3] == 1.0
    assert out[4] == np.inf and out[5] == np.inf and 0 < out[6] < 1e-44 and out[7] == 0.0
    np.testing.assert_allclose(out[8], np.exp(np.float64(88.5)), rtol=3e-7)
    sig = np.zeros(64, "float32")
    scalar["afn_sigmoid"](special, sig)  # afn: the polynomial in scalar code too
    np.testing.assert_allclose(sig[1:9], [1, 0, 0.5, 1, 1, 0, 0, 1], atol=1e-7)
