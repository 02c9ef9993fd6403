"""The default schedules on FuseOps + FuseTIR output (the ``zero`` pipeline).

FuseTIR moves the epilogue of a matmul or convolution into the reduction's loops (a
one-element local accumulator) and inlines padding into the convolution; the schedules must
recognise both forms, keep the epilogue in the tile, and re-materialize the padding. Each
fused kernel is checked against its unscheduled self with the interpreter, and compiled.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
from relaxvm.ir.relax import op as R
from relaxvm.ir.tir import PrimFunc, run_prim_func
from relaxvm_llvm.schedule import CpuConfig, schedule_prim_func
from relaxvm_llvm.schedule.dispatch import _schedule

SMALL = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0)


@pytest.fixture(scope="module")
def fused() -> dict[str, PrimFunc]:
    from relaxvm import transform

    pipeline = transform.get_pipeline("zero")
    n = SymVar("n")
    x = Var("x", TensorStructInfo([n, 16], "float32"))
    w = Var("w", TensorStructInfo([16, 24], "float32"))
    b = Var("b", TensorStructInfo([24], "float32"))
    img = Var("img", TensorStructInfo([1, 3, 9, 10], "float32"))
    wc = Var("wc", TensorStructInfo([5, 3, 3, 3], "float32"))
    bc = Var("bc", TensorStructInfo([1, 5, 1, 1], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x, w, b, img, wc, bc]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.add(R.matmul(x, w), b)))
            s = bb.emit(R.nn.softmax(h, axis=-1))
            c = bb.emit(R.nn.relu(R.add(R.nn.conv2d(img, wc, padding=[1, 1]), bc)))
            p = bb.emit(R.nn.max_pool2d(c, pool_size=[3, 3], strides=[2, 2], padding=[1, 1]))
            out = bb.emit_output(R.add(R.sum(p), R.sum(s)))
        bb.emit_func_output(out)
    mod = pipeline(bb.get())
    return {f.name: f for _, f in mod.items() if isinstance(f, PrimFunc)}


def _args(func: PrimFunc, rng: np.random.Generator) -> list[Any]:
    args = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = tuple(int(getattr(d, "value", 13)) for d in buffer.shape)  # n = 13
        args.append(rng.standard_normal(shape).astype(str(buffer.dtype)))
    return args


def _compare(func: PrimFunc, scheduled: PrimFunc, run: Any) -> None:
    args = _args(func, np.random.default_rng(5))
    expected, got = [a.copy() for a in args], [a.copy() for a in args]
    run_prim_func(func, *expected)
    run(*got)
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_fused_kernels_are_scheduled(fused: dict[str, PrimFunc]) -> None:
    strategies = {name: _schedule(func, SMALL, "test")[1] for name, func in fused.items()}
    matmul = next(v for k, v in strategies.items() if "matmul" in k)
    conv = next(v for k, v in strategies.items() if "conv2d" in k)
    assert matmul == ["tiled"]  # the fused epilogue stays in the tile
    assert conv == ["injective", "tiled"]  # padding re-materialized, then tiles
    for name, func in fused.items():
        scheduled = schedule_prim_func(func, SMALL)
        _compare(func, scheduled, lambda *a, f=scheduled: run_prim_func(f, *a))
        del name


def test_fused_kernels_compiled(fused: dict[str, PrimFunc]) -> None:
    from dataclasses import replace

    from relaxvm_llvm import parallel
    from relaxvm_llvm.schedule import cpu_config
    from relaxvm_llvm.target import build

    host = replace(cpu_config(None), parallel_cutoff=0)
    with parallel.always_parallel(threads=1):
        for func in fused.values():
            scheduled = schedule_prim_func(func, host)
            kernel = build(scheduled)[scheduled.name]
            _compare(func, scheduled, kernel)


def test_schedule_pass_on_a_fused_module() -> None:
    from relaxvm.ir.relax.module import IRModule
    from relaxvm_llvm.schedule import SCHEDULED_ATTR, schedule_pass
    from relaxvm_llvm.schedule import workloads as wl

    mod = IRModule({"mm": wl.matmul(8, 8, 8, bias=True, relu=True)})
    out = schedule_pass(SMALL)(mod)
    assert out["mm"].attrs[SCHEDULED_ATTR] and not mod["mm"].attrs.get(SCHEDULED_ATTR)
