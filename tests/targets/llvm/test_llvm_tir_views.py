"""Native kernels written with block-level ``T.match_buffer``, ``T.decl_buffer``, ``T.Let``
and ``T.launch_thread``: the llvm target lowers them to loops over the underlying buffers;
results agree with numpy and with the interpreter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir.tir import PrimFunc, lower_blocks
from relaxvm.script import from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T

relaxvm_llvm = pytest.importorskip("relaxvm_llvm")

# A 3x8 matrix: each row is split into two 4-wide views (match_buffer), each view summed
# through a flat alias (decl_buffer) of the output, with a T.Let for the square.
KERNEL = """
@T.prim_func
def views(A: T.Buffer((3, 8), "float32"), S: T.Buffer((3, 2), "float32")):
    S_flat = T.decl_buffer((6,), "float32", data=S.data)
    x = T.float32()
    for i, h in T.grid(3, 2):
        with T.block("half"):
            vi, vh = T.axis.remap("SS", [i, h])
            T.reads(A[vi, vh * 4:vh * 4 + 4])
            T.writes(S[vi, vh])
            part = T.match_buffer(A[vi, vh * 4:vh * 4 + 4], (4,))
            S_flat[vi * 2 + vh] = T.float32(0)
            for k in range(4):
                S_flat[vi * 2 + vh] = S_flat[vi * 2 + vh] + T.Let(x * x, where={x: part[k]})
"""

TILES = """
@T.prim_func
def tiles(a: T.handle, B: T.Buffer((8, 8), "float32")):
    A = T.decl_buffer((8, 8), "float32", data=a)
    for io, jo in T.grid(2, 2):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [io, jo])
            T.reads(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])
            T.writes(B[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])
            A_sub = T.match_buffer(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4))
            B_sub = T.match_buffer(B[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4))
            for x, y in T.grid(4, 4):
                B_sub[x, y] = A_sub[y, x]
"""


def _tiles(a: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    for i in range(2):
        for j in range(2):
            out[i * 4 : i * 4 + 4, j * 4 : j * 4 + 4] = a[i * 4 : i * 4 + 4, j * 4 : j * 4 + 4].T
    return out


CASES: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray], tuple[int, ...], tuple]] = {
    "views": (KERNEL, lambda a: (a.reshape(3, 2, 4) ** 2).sum(axis=2), (3, 8), (3, 2)),
    "tiles": (TILES, _tiles, (8, 8), (8, 8)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_numpy_and_the_interpreter(
    name: str,
    run_both: Callable[..., tuple[list[Any], list[Any]]],
    assert_same: Callable[..., None],
) -> None:
    text, oracle, shape, out_shape = CASES[name]
    func = from_source(text)
    assert isinstance(func, PrimFunc)
    module = relaxvm_llvm.build(func)  # the target lowers the views itself
    a = np.random.default_rng(2).standard_normal(shape).astype("float32")
    args = [a, np.full(out_shape, 5.0, "float32")]
    ref, out = run_both(lower_blocks(func), module[func.name], args)
    assert_same(ref, out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1], oracle(a), rtol=1e-5, atol=1e-5)


def test_launch_thread_needs_a_gpu_target_as_thread_binding_does() -> None:
    func = from_source(
        "@T.prim_func\n"
        'def launch(A: T.Buffer((8,), "float32")):\n'
        '    tx = T.launch_thread("threadIdx.x", 8)\n'
        "    A[tx] = T.float32(1)\n"
    )
    with pytest.raises(relaxvm.errors.RelaxVMError, match="bound to threadIdx.x; thread bindings"):
        relaxvm_llvm.build(func)


@I.ir_module
class CallViews:
    @T.prim_func
    def shifted(a: T.handle, b: T.handle):
        A = T.decl_buffer((2, 4), "float32", data=a)
        B = T.match_buffer(b, (8,), "float32")
        B_2d = T.decl_buffer((2, 4), "float32", data=B.data)
        for i, j in T.grid(2, 4):
            B_2d[i, j] = A[i, j] + T.float32(1)

    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        cls = CallViews
        y = R.call_tir(cls.shifted, (x,), out_sinfo=R.Tensor((8,), "float32"))
        return y


def test_relax_module_compiles_and_runs() -> None:
    executable = relaxvm.compile(CallViews, "llvm")
    x = np.arange(8, dtype="float32").reshape(2, 4)
    out = relaxvm.VirtualMachine(executable, relaxvm.cpu())["main"](x)
    np.testing.assert_allclose(out.numpy(), x.ravel() + 1)
