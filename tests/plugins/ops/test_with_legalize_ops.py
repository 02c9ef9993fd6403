"""The legalizations driven by the LegalizeOps pass on a small model, executed end to end."""

from __future__ import annotations

import numpy as np
import pytest
from _ops_harness import execute, prim_funcs, run

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, op
from relaxvm.transform import legalize_ops


def test_mlp_block_with_symbolic_batch() -> None:
    n = SymVar("n")
    x = Var("x", TensorStructInfo((n, 4), "float32"))
    w = Var("w", TensorStructInfo((6, 4), "float32"))
    b = Var("b", TensorStructInfo((6,), "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            y = bb.emit(op.nn.relu(op.linear(x, w, b)))
            parts = bb.emit(op.split(op.nn.softmax(y), 2, axis=1))
            joined = bb.emit(op.concat(parts, axis=0))
            gv = bb.emit_output(op.sum(joined, axis=1, keepdims=True))
        bb.emit_func_output(gv)
    mod = legalize_ops.LegalizeOps()(bb.get())
    funcs = prim_funcs(mod)
    assert {"matmul", "add", "relu", "softmax", "split", "concatenate", "sum"} <= set(funcs)
    rng = np.random.default_rng(4)
    xs, ws, bs = (rng.normal(size=s).astype("float32") for s in ((3, 4), (6, 4), (6,)))
    got = execute(mod, mod["main"].params, [xs, ws, bs])
    h = np.maximum(xs @ ws.T + bs, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    want = np.concatenate(np.split(s, 2, axis=1), axis=0).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_compound_extent_input_passes_its_variable() -> None:
    # x has shape (n * 2,): n is not a dim of any buffer, so the kernel takes it as a scalar.
    n = SymVar("n")
    xs, ys = np.arange(6, dtype="float32"), np.zeros((3,), "float32")
    got = run(lambda x, y: op.sum(x), [("x", (n * 2,), "float32"), ("y", (n,), "float32")],
              [xs, ys])  # fmt: skip
    assert got == pytest.approx(15.0)
