"""The default schedules on the op plugin's real legalizations.

Each op is legalized with the registered legalization (static shapes with odd sizes), then
every PrimFunc it produces is scheduled for a small vector width with the parallel cutoff at
zero and run by the reference interpreter next to the unscheduled PrimFunc on the same
random arguments: all arguments must agree afterwards. Ops whose legalization is missing are
skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
from relaxvm.ir.relax import op as R
from relaxvm.ir.tir import PrimFunc, run_prim_func
from relaxvm.registry import extensions
from relaxvm_llvm.schedule import CpuConfig, cpu_config, schedule_prim_func

CONFIG = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0)
#: The host's vector width (what the compiled kernels run with), parallel paths forced.
HOST = replace(cpu_config(None), num_threads=2, parallel_cutoff=0)


@pytest.fixture(autouse=True)
def _always_parallel() -> Iterator[None]:
    """Dispatch every parallel loop to the thread pool, however small its work."""
    try:
        from relaxvm_llvm import parallel
    except ImportError:  # no llvmlite: only the interpreter tests run
        yield
        return
    with parallel.always_parallel():
        yield


F32 = "float32"

# name -> (builder of the relax call, parameter shapes and dtypes)
CASES: dict[str, tuple[Callable[..., Any], list[tuple[tuple[int, ...], str]]]] = {
    "add_broadcast": (R.add, [((3, 1, 7), F32), ((5, 7), F32)]),
    "multiply": (R.multiply, [((6, 9), F32), ((6, 9), F32)]),
    "exp": (R.exp, [((4, 11), F32)]),
    "sigmoid": (R.sigmoid, [((13,), F32)]),
    "relu": (R.nn.relu, [((2, 3, 5), F32)]),
    "gelu": (R.nn.gelu, [((3, 10), F32)]),
    "where": (lambda c, a, b: R.where(c, a, b), [((4, 6), "bool"), ((4, 6), F32), ((6,), F32)]),
    "astype": (lambda a: R.astype(a, "int32"), [((5, 9), F32)]),
    "permute_dims": (lambda a: R.permute_dims(a, [1, 0, 2]), [((3, 4, 5), F32)]),
    "matmul": (R.matmul, [((13, 11), F32), ((11, 10), F32)]),
    "matmul_batch": (R.matmul, [((2, 7, 5), F32), ((5, 9), F32)]),
    "matmul_int": (R.matmul, [((9, 6), "int32"), ((6, 10), "int32")]),
    "linear": (lambda x, w, b: R.linear(x, w, b), [((7, 12), F32), ((9, 12), F32), ((9,), F32)]),
    "sum_last": (lambda a: R.sum(a, axis=[1]), [((5, 19), F32)]),
    "sum_first_keepdims": (lambda a: R.sum(a, axis=[0], keepdims=True), [((9, 10), F32)]),
    "mean": (lambda a: R.mean(a, axis=[1, 2]), [((3, 4, 6), F32)]),
    "max": (lambda a: R.max(a, axis=[1]), [((6, 17), F32)]),
    "variance": (lambda a: R.variance(a, axis=[1]), [((4, 13), F32)]),
    "softmax": (lambda a: R.nn.softmax(a, axis=-1), [((5, 21), F32)]),
    "log_softmax": (lambda a: R.nn.log_softmax(a, axis=-1), [((3, 10), F32)]),
    "layer_norm": (
        lambda x, g, b: R.nn.layer_norm(x, g, b, axes=[-1]),
        [((4, 18), F32), ((18,), F32), ((18,), F32)],
    ),
    "rms_norm": (lambda x, g: R.nn.rms_norm(x, g, axes=[-1]), [((3, 17), F32), ((17,), F32)]),
    "conv2d": (
        lambda x, w: R.nn.conv2d(x, w, padding=[1, 1]),
        [((1, 3, 7, 9), F32), ((5, 3, 3, 3), F32)],
    ),
    "conv2d_stride2": (
        lambda x, w: R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1]),
        [((2, 2, 9, 8), F32), ((4, 2, 3, 3), F32)],
    ),
    "max_pool2d": (
        lambda x: R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1]),
        [((1, 2, 9, 9), F32)],
    ),
    "avg_pool2d": (
        lambda x: R.nn.avg_pool2d(x, pool_size=[2, 2], strides=[1, 1]),
        [((1, 3, 6, 7), F32)],
    ),
    "adaptive_avg_pool2d": (
        lambda x: R.nn.adaptive_avg_pool2d(x, output_size=[1, 1]),
        [((1, 4, 5, 6), F32)],
    ),
    "concat": (lambda a, b: R.concat([a, b], axis=1), [((3, 4), F32), ((3, 7), F32)]),
    "strided_slice": (
        lambda a: R.strided_slice(a, axes=[1], begin=[1], end=[9], strides=[2]),
        [((4, 10), F32)],
    ),
    "cumsum": (lambda a: R.cumsum(a, axis=1), [((3, 9), F32)]),
}


def _prim_funcs(name: str) -> list[PrimFunc]:
    build, shapes = CASES[name]
    params = [Var(f"p{k}", TensorStructInfo(list(s), d)) for k, (s, d) in enumerate(shapes)]
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            call = bb.normalize(build(*params))
            legalize = extensions.get_legalization(call.op.name, None)
            assert legalize is not None, f"no legalization for {call.op.name}"
            out = bb.emit_output(legalize(bb, call))
        bb.emit_func_output(out)
    mod = bb.get()
    return [func for _, func in mod.items() if isinstance(func, PrimFunc)]


def _random_args(func: PrimFunc, rng: np.random.Generator) -> list[Any]:
    args: list[Any] = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        assert buffer is not None, f"{func.name}: scalar parameter {param.name}"
        shape = tuple(int(getattr(d, "value", -1)) for d in buffer.shape)
        assert all(d >= 0 for d in shape), f"{func.name}: symbolic buffer {buffer.name}"
        dtype = str(buffer.dtype)
        if dtype == "bool":
            args.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.startswith("float"):
            args.append(rng.standard_normal(shape).astype(dtype))
        else:
            args.append(rng.integers(-4, 5, shape).astype(dtype))
    return args


@pytest.mark.parametrize("name", sorted(CASES))
def test_scheduled_legalization_matches(name: str) -> None:
    funcs = _prim_funcs(name)
    assert funcs, f"{name}: the legalization produced no PrimFunc"
    rng = np.random.default_rng(7)
    for func in funcs:
        scheduled = schedule_prim_func(func, CONFIG)
        args = _random_args(func, rng)
        expected = [a.copy() for a in args]
        got = [a.copy() for a in args]
        run_prim_func(func, *expected)
        run_prim_func(scheduled, *got)
        for position, (e, g) in enumerate(zip(expected, got, strict=True)):
            if e.dtype.kind == "f":
                np.testing.assert_allclose(
                    g, e, rtol=1e-5, atol=1e-5, err_msg=f"{func.name} argument {position}"
                )
            else:
                np.testing.assert_array_equal(g, e, err_msg=f"{func.name} argument {position}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_scheduled_legalization_matches(name: str) -> None:
    from relaxvm_llvm.target import build

    funcs = _prim_funcs(name)
    rng = np.random.default_rng(11)
    for func in funcs:
        scheduled = schedule_prim_func(func, HOST)
        kernel = build(scheduled)[scheduled.name]
        args = _random_args(func, rng)
        expected = [a.copy() for a in args]
        got = [a.copy() for a in args]
        run_prim_func(func, *expected)
        kernel(*got)
        for position, (e, g) in enumerate(zip(expected, got, strict=True)):
            if e.dtype.kind == "f":
                np.testing.assert_allclose(
                    g, e, rtol=1e-4, atol=1e-4, err_msg=f"{func.name} argument {position}"
                )
            else:
                np.testing.assert_array_equal(g, e, err_msg=f"{func.name} argument {position}")
