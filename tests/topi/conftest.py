"""Runners for the topi tests: lower a topi function of numpy inputs and run it with the TIR
interpreter, or build it with ``BlockBuilder.emit_te`` and run it compiled for llvm."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import IntImm
from relaxvm.ir import relax as rx
from relaxvm.ir.relax.block_builder import BlockBuilder
from relaxvm.ir.tir import run_prim_func, te

Runner = Callable[..., Any]


def _interp(build: Callable[..., Any], *arrays: np.ndarray, **kwargs: Any) -> Any:
    """``build(*placeholders, **kwargs)`` run on ``arrays`` by the TIR interpreter."""
    inputs = [te.placeholder(a.shape, str(a.dtype), name=f"p{i}") for i, a in enumerate(arrays)]
    result = build(*inputs, **kwargs)
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    func = te.create_prim_func([*inputs, *outs])
    buffers = []
    for out in outs:
        shape = []
        for extent in out.shape:
            assert isinstance(extent, IntImm), f"output extent {extent} is not constant"
            shape.append(int(extent.value))
        buffers.append(np.zeros(shape, str(out.dtype)))
    run_prim_func(func, *arrays, *buffers)
    return buffers if isinstance(result, (list, tuple)) else buffers[0]


def _llvm(
    build: Callable[..., Any],
    *arrays: np.ndarray,
    shapes: Sequence[Sequence[Any]] | None = None,
    **kwargs: Any,
) -> np.ndarray:
    """``bb.emit_te(build, *params, **kwargs)`` compiled for llvm and run on ``arrays``.

    ``shapes`` gives the parameters' (possibly symbolic) shapes; default the arrays' own.
    """
    params = [
        rx.Var(f"x{i}", rx.TensorStructInfo(list(shapes[i] if shapes else a.shape), str(a.dtype)))
        for i, a in enumerate(arrays)
    ]
    bb = BlockBuilder()
    with bb.function("main", params):
        out = bb.emit_te(build, *params, **kwargs)
        bb.emit_func_output(out)
    ex = relaxvm.compile(bb.get(), target="llvm")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    return vm["main"](*(relaxvm.tensor(a) for a in arrays)).numpy()


@pytest.fixture
def interp() -> Runner:
    """Run a topi function with the TIR interpreter (static shapes)."""
    return _interp


@pytest.fixture
def llvm() -> Runner:
    """Run a topi function through emit_te, compiled for llvm."""
    return _llvm
