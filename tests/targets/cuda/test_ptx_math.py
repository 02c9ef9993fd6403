"""The CUDA target's math (built from whitelisted intrinsics only) is accurate.

No GPU is needed: the same IR the CUDA code generator emits for a math call is compiled for
the host CPU (the whitelisted intrinsics lower there too) and run on arrays, against numpy.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from relaxvm.runtime.dtype import DataType
from relaxvm_cuda import codegen_fmod, codegen_math
from relaxvm_cuda.errors import CUDABuildError
from relaxvm_llvm import jit

_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType()}


class _Gen:
    """The parts of the function generator the math emitters use."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder) -> None:
        self.module = module
        self.builder = builder
        self.lanes = 1
        self.fastmath: tuple[str, ...] = ()

    def error(self, message: str) -> CUDABuildError:
        return CUDABuildError(message)

    def intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        ty = args[0].type
        suffix = "f64" if isinstance(ty, ir.DoubleType) else "f32"
        assert suffix in codegen_math.LLVM_INTRINSICS[name], f"llvm.{name}.{suffix}"
        full = f"llvm.{name}.{suffix}"
        fn = self.module.globals.get(full) or ir.Function(
            self.module, ir.FunctionType(ty, [a.type for a in args]), full
        )
        return self.builder.call(fn, args)


def _compile(name: str, dtype: str, arity: int):  # type: ignore[no-untyped-def]
    def emit(gen: _Gen, values: list[ir.Value]) -> ir.Value:
        builder = gen.builder
        # computed in the type the code generator picks (float64 for most float32 functions)
        wide = codegen_math.compute_type(name, DataType(dtype))
        if wide != DataType(dtype):
            values = [builder.fpext(v, _TYPES[str(wide)]) for v in values]
        result = codegen_math._compute(gen, name, values, wide)
        if wide != DataType(dtype):
            result = builder.fptrunc(result, _TYPES[dtype])
        return result

    return _compile_ir(emit, f"math_{name}", dtype, arity)


def _compile_ir(emit, label: str, dtype: str, arity: int):  # type: ignore[no-untyped-def]
    """Compile ``out = emit(gen, [a, b][:arity])`` for the host and return a scalar caller."""
    ty = _TYPES[dtype]
    module = ir.Module(name=label)
    module.triple = jit.process_triple()
    ptr = ty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr]), "f")
    builder = ir.IRBuilder(fn.append_basic_block())
    gen = _Gen(module, builder)
    values = [builder.load(fn.args[k]) for k in range(arity)]
    result = emit(gen, values)
    builder.store(result, fn.args[2])
    builder.ret_void()
    with jit.LLVM_LOCK:
        jit.target_machine(jit.process_triple(), "", "")  # initializes the native target
        # a fresh machine: the MCJIT engine takes ownership of the one it is given
        tm = llvm.Target.from_triple(jit.process_triple()).create_target_machine(
            cpu=jit.host_cpu_name(), features=jit.host_cpu_features(), opt=2
        )
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
        engine = llvm.create_mcjit_compiler(parsed, tm)
        engine.finalize_object()
        address = engine.get_function_address("f")
    c_type = ctypes.c_double if dtype == "float64" else ctypes.c_float
    pointer = ctypes.POINTER(c_type)
    call = ctypes.CFUNCTYPE(None, pointer, pointer, pointer)(address)

    def run(*args: float) -> float:
        cells = [c_type(a) for a in args] + [c_type(0)] * (2 - len(args))
        out = c_type(0)
        call(ctypes.byref(cells[0]), ctypes.byref(cells[1]), ctypes.byref(out))
        return float(out.value)

    run.engine = engine  # type: ignore[attr-defined]  # keep the code alive
    return run


_REFS: dict[str, tuple[Callable[..., Any] | None, np.ndarray]] = {
    "exp": (np.exp, np.linspace(-80, 80, 41)),
    "exp2": (np.exp2, np.linspace(-120, 120, 41)),
    "log": (np.log, np.geomspace(1e-30, 1e30, 41)),
    "log2": (np.log2, np.geomspace(1e-30, 1e30, 41)),
    "tanh": (np.tanh, np.linspace(-6, 6, 49)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), np.linspace(-20, 20, 41)),
    "erf": (None, np.linspace(-5, 5, 41)),
    "sin": (np.sin, np.linspace(-100, 100, 81)),
    "cos": (np.cos, np.linspace(-100, 100, 81)),
    "tan": (np.tan, np.linspace(-1.5, 1.5, 31)),
    "asin": (np.arcsin, np.linspace(-1, 1, 41)),
    "acos": (np.arccos, np.linspace(-1, 1, 41)),
    "atan": (np.arctan, np.linspace(-50, 50, 41)),
    "sinh": (np.sinh, np.linspace(-20, 20, 41)),
    "cosh": (np.cosh, np.linspace(-20, 20, 41)),
    "asinh": (np.arcsinh, np.linspace(-1e3, 1e3, 41)),
    "acosh": (np.arccosh, np.linspace(1, 1e3, 41)),
    "atanh": (np.arctanh, np.linspace(-0.99, 0.99, 41)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(_REFS))
def test_unary_math_matches_numpy(name: str, dtype: str) -> None:
    import math

    ref_fn, xs = _REFS[name]
    if ref_fn is None:
        ref_fn = np.vectorize(math.erf)
    run = _compile(name, dtype, 1)
    xs = np.concatenate([xs, [0.0, 1e-6, -1e-6, 0.5, -0.5]]).astype(dtype)
    got = np.array([run(float(x)) for x in xs])
    with np.errstate(all="ignore"):  # out-of-domain points are NaN on both sides
        want = ref_fn(xs.astype("float64"))
    rtol = 2e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30 if name != "sin" else 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values(dtype: str) -> None:
    inf, nan = float("inf"), float("nan")
    log = _compile("log", dtype, 1)
    assert log(0.0) == -inf and log(inf) == inf and np.isnan(log(-1.0)) and np.isnan(log(nan))
    exp = _compile("exp", dtype, 1)
    assert exp(-inf) == 0.0 and exp(inf) == inf and np.isnan(exp(nan))
    tanh = _compile("tanh", dtype, 1)
    assert tanh(inf) == 1.0 and tanh(-inf) == -1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_follows_numpy(dtype: str) -> None:
    run = _compile("pow", dtype, 2)
    pairs = [(2.0, 10.0), (-2.0, 3.0), (-2.0, 2.0), (0.0, 3.0), (0.0, -1.0), (3.0, 0.0),
             (1.0, float("nan")), (2.5, -1.5), (-2.0, 0.5), (10.0, 5.5)]  # fmt: skip
    for x, y in pairs:
        with np.errstate(divide="ignore", invalid="ignore"):  # 0**-1 and (-2)**0.5 on purpose
            want = np.power(np.array(x, "float64"), np.array(y, "float64"))
        got = run(x, y)
        if np.isnan(want):
            assert np.isnan(got), (x, y)
        else:
            assert got == pytest.approx(float(want), rel=1e-6), (x, y, got)


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: equal values with equal signs (zeros and infinities), or both NaN."""
    both_nan = np.isnan(got) & np.isnan(want)
    with np.errstate(invalid="ignore"):
        equal = (got == want) & (np.signbit(got) == np.signbit(want))
    return both_nan | equal


def _grid(run, xs: np.ndarray, ys: np.ndarray, dtype: str):  # type: ignore[no-untyped-def]
    """``run`` over the cross product of ``xs`` and ``ys``: (x, y, got) arrays of ``dtype``."""
    x, y = (a.ravel() for a in np.meshgrid(xs.astype(dtype), ys.astype(dtype), indexing="ij"))
    got = np.array([run(float(a), float(c)) for a, c in zip(x, y, strict=True)], dtype)
    return x, y, got


_INF, _NAN = float("inf"), float("nan")
_TINY = {"float32": 1e-40, "float64": 5e-324}  # subnormals


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_special_values_match_numpy(dtype: str) -> None:
    tiny = _TINY[dtype]
    xs = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1.5, -2.5, 7.0,
                   _INF, -_INF, _NAN, tiny, -tiny, 1e30, -1e30, 1e-30, 0.999, -1.001])  # fmt: skip
    ys = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 1.5, -1.5, 11.0,
                   _INF, -_INF, _NAN, tiny, -tiny, 1e-40, 1e20, -1e20, 2.0**53, 2.0**53 + 2,
                   1e6 + 1, 2047.0, -2047.0, 2049.0])  # fmt: skip
    x, y, got = _grid(_compile("pow", dtype, 2), xs, ys, dtype)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    # Special results (NaN, infinities, zeros, +-1) and their signs exactly, the rest closely.
    special = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
    bad = special & ~_same(got, want)
    assert not bad.any(), list(zip(x[bad], y[bad], got[bad], want[bad], strict=True))[:10]
    rtol = 2e-6 if dtype == "float32" else 1e-12
    close = np.isclose(got, want, rtol=rtol, atol=0.0) & (np.signbit(got) == np.signbit(want))
    bad = ~special & ~close
    assert not bad.any(), list(zip(x[bad], y[bad], got[bad], want[bad], strict=True))[:10]


def test_pow_of_minus_inf_to_a_tiny_power_is_inf() -> None:
    run = _compile("pow", "float32", 2)  # found on an H200: NaN instead of numpy's +inf
    assert run(-_INF, float(np.float32(1e-40))) == _INF
    assert run(-_INF, -float(np.float32(1e-40))) == 0.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_integer_powers_are_exact(dtype: str) -> None:
    run = _compile("pow", dtype, 2)
    mantissa = 24 if dtype == "float32" else 53
    assert (run(5.0, 2.0), run(4.0, 2.0), run(4.0, 3.0)) == (25.0, 16.0, 64.0)
    checked = 0
    for a in range(-13, 14):
        for n in range(0, 40):
            exact = a**n
            if abs(exact) < 2**mantissa:
                assert run(float(a), float(n)) == exact, (a, n)
                checked += 1
    assert checked > 300
    # Powers of two over the whole exponent range, and reciprocals (one rounding).
    top = 127 if dtype == "float32" else 1023
    for n in (1, 10, 100, top):
        assert run(2.0, float(n)) == 2.0**n and run(0.5, float(-n)) == 2.0**n, n
        assert run(-2.0, float(n)) == (-2.0) ** n, n
    for n in range(1, 20):
        got = run(10.0, float(-n))
        if dtype == "float64":  # one correctly rounded division of an exact power
            assert got == float(Fraction(1, 10**n)), n
        else:  # numpy's powf is off by one ulp at 1e-5: within an ulp of it
            want = np.power(np.float32(10.0), np.float32(-n))
            assert abs(np.float32(got) - want) <= np.spacing(want), n
    with np.errstate(over="ignore"):  # inf on both sides
        assert run(3.0, 1500.0) == np.power(np.array(3.0, dtype), np.array(1500.0, dtype))


def _mod_runner(dtype: str, floor: bool):  # type: ignore[no-untyped-def]
    def emit(gen: _Gen, values: list[ir.Value]) -> ir.Value:
        return codegen_fmod.emit_float_mod(gen, values[0], values[1], floor)

    return _compile_ir(emit, f"mod_{floor}", dtype, 2)


def _mod_operands(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    return np.array([0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 3.0, -3.0, 0.1, -7.25, 2.5, 1e-3,
                     3e-42, -3e-42, 1e-45, tiny, -tiny, 3 * tiny, float(info.tiny),
                     1e30, -1e30, 3e38, float(info.max), -float(info.max), 1e300, 1e-300,
                     _INF, -_INF, _NAN])  # fmt: skip


@pytest.mark.parametrize("floor", [False, True], ids=["mod", "floor_mod"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_mod_matches_numpy_exactly(dtype: str, floor: bool) -> None:
    reference = np.remainder if floor else np.fmod
    run = _mod_runner(dtype, floor)
    with np.errstate(all="ignore"):  # values out of range of float32 become inf on purpose
        operands = _mod_operands(dtype).astype(dtype)
    x, y, got = _grid(run, operands, operands, dtype)
    rng = np.random.default_rng(0)
    width = np.uint32 if dtype == "float32" else np.uint64
    info = np.iinfo(width)
    words = rng.integers(0, info.max, size=(2, 1500), dtype=width, endpoint=True)
    rx, ry = words.view(dtype)
    rgot = np.array([run(float(a), float(c)) for a, c in zip(rx, ry, strict=True)], dtype)
    x, y, got = np.concatenate([x, rx]), np.concatenate([y, ry]), np.concatenate([got, rgot])
    with np.errstate(all="ignore"):
        want = reference(x, y)
    bad = ~_same(got, want)
    assert not bad.any(), list(zip(x[bad], y[bad], got[bad], want[bad], strict=True))[:10]


def test_float_mod_cases_found_on_a_gpu() -> None:
    floor_mod = _mod_runner("float32", True)
    got = floor_mod(1.5, float(np.float32(-3e-42)))
    assert got == float(np.remainder(np.float32(1.5), np.float32(-3e-42))) and got < 0
    assert np.isnan(_mod_runner("float32", False)(-_INF, _INF))
    fmod64 = _mod_runner("float64", False)
    assert fmod64(3e38, 1e-45) == float(np.fmod(3e38, 1e-45))
    assert fmod64(1e308, 5e-324) == float(np.fmod(1e308, 5e-324))


@pytest.mark.parametrize("floor", [False, True], ids=["mod", "floor_mod"])
def test_float16_mod_matches_numpy_exactly(floor: bool) -> None:
    half = ir.HalfType()

    def emit(gen: _Gen, values: list[ir.Value]) -> ir.Value:  # float32 in and out
        b = gen.builder
        x, y = (b.fptrunc(v, half) for v in values)
        return b.fpext(codegen_fmod.emit_float_mod(gen, x, y, floor), _TYPES["float32"])

    run = _compile_ir(emit, "mod_half", "float32", 2)
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    x, y = np.random.default_rng(1).choice(every, size=(2, 3000))
    got = np.array([run(float(a), float(c)) for a, c in zip(x, y, strict=True)], np.float16)
    with np.errstate(all="ignore"):
        want = (np.remainder if floor else np.fmod)(x, y)
    bad = ~_same(got, want)
    assert not bad.any(), list(zip(x[bad], y[bad], got[bad], want[bad], strict=True))[:10]
