"""The CUDA target's math (built from whitelisted intrinsics only) is accurate.

No GPU is needed: the same IR the CUDA code generator emits for a math call is compiled for
the host CPU (the whitelisted intrinsics lower there too) and run on arrays, against numpy.
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from relaxvm.runtime.dtype import DataType
from relaxvm_cuda import codegen_math
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
    ty = _TYPES[dtype]
    module = ir.Module(name=f"math_{name}")
    module.triple = jit.process_triple()
    ptr = ty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr, ptr]), "f")
    builder = ir.IRBuilder(fn.append_basic_block())
    gen = _Gen(module, builder)
    values = [builder.load(fn.args[k]) for k in range(arity)]
    # computed in the type the code generator picks (float64 for most float32 functions)
    wide = codegen_math.compute_type(name, DataType(dtype))
    if wide != DataType(dtype):
        values = [builder.fpext(v, _TYPES[str(wide)]) for v in values]
    result = codegen_math._compute(gen, name, values, wide)
    if wide != DataType(dtype):
        result = builder.fptrunc(result, ty)
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


_REFS = {
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
