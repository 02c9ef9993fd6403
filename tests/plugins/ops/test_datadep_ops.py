"""unique / nonzero (packed calls with run-time extents) and quantize / dequantize, end to end.

The data-dependent ops are checked at three levels: the runtime functions against numpy, the
shape of the legalized IR (a pure packed call, then a match_cast to fresh extents), and whole
functions compiled for llvm in both exec modes, with ops after them that need the extents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import CompileError, RelaxVMError
from relaxvm.ir.relax import MatchCast, TensorStructInfo, Var, op
from relaxvm.ir.relax.expr import Call, ExternFunc
from relaxvm.script import from_source
from relaxvm.transform import LegalizeOps
from relaxvm_ops.runtime import RUNTIME_FUNCTIONS, run_nonzero, run_unique

MODES = ("bytecode", "compiled")
HEADER = """
from relaxvm.script import ir as I
from relaxvm.script import relax as R
"""


def compile_run(src: str, mode: str, *args: np.ndarray) -> Any:
    ex = relaxvm.compile(from_source(HEADER + src), target="llvm", exec_mode=mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    return vm["main"](*(relaxvm.tensor(a) for a in args))


def as_numpy(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(as_numpy(v) for v in value)
    return value.numpy()


# ---- runtime functions ----------------------------------------------------------------------
def test_runtime_functions_are_registered_by_name() -> None:
    assert RUNTIME_FUNCTIONS["relax.run.unique"] is run_unique
    assert RUNTIME_FUNCTIONS["relax.run.nonzero"] is run_nonzero


def test_run_unique_sorted_and_unsorted() -> None:
    x = np.array([3, 1, 3, 0, 1, 3], "int32")
    got = run_unique(relaxvm.tensor(x), 1, 1, 1, 1)
    assert isinstance(got, tuple) and len(got) == 4
    values, index, inverse, counts = as_numpy(got)
    np.testing.assert_array_equal(values, [0, 1, 3])
    np.testing.assert_array_equal(index, [3, 1, 0])
    np.testing.assert_array_equal(counts, [1, 2, 3])
    np.testing.assert_array_equal(values[inverse], x)
    assert index.dtype == inverse.dtype == counts.dtype == np.int64
    # Unsorted: order of first occurrence, and the extra outputs follow it.
    values, index, inverse, counts = as_numpy(run_unique(relaxvm.tensor(x), 0, 1, 1, 1))
    np.testing.assert_array_equal(values, [3, 1, 0])
    np.testing.assert_array_equal(index, [0, 1, 3])
    np.testing.assert_array_equal(counts, [3, 2, 1])
    np.testing.assert_array_equal(values[inverse], x)
    # Only the values: a tensor, not a tuple.
    only = run_unique(relaxvm.tensor(x), 0, 0, 0, 0)
    np.testing.assert_array_equal(as_numpy(only), [3, 1, 0])


def test_run_unique_along_an_axis() -> None:
    x = np.array([[1, 2], [0, 5], [1, 2]], "float32")
    np.testing.assert_array_equal(
        as_numpy(run_unique(relaxvm.tensor(x), 1, 0, 0, 0, 0)), [[0, 5], [1, 2]]
    )
    values, inverse = as_numpy(run_unique(relaxvm.tensor(x), 0, 0, 1, 0, 0))
    np.testing.assert_array_equal(values, [[1, 2], [0, 5]])
    np.testing.assert_array_equal(values[inverse], x)
    columns = as_numpy(run_unique(relaxvm.tensor(x), 0, 0, 0, 0, 1))
    np.testing.assert_array_equal(columns, x)  # no two columns are equal
    with pytest.raises(
        RelaxVMError, match=r"relax.run.unique: axis 2 is out of range for a tensor of rank 2"
    ):
        run_unique(relaxvm.tensor(x), 1, 0, 0, 0, 2)
    with pytest.raises(RelaxVMError, match=r"relax.run.unique: x must be a tensor, got int"):
        run_unique(3)


def test_run_nonzero() -> None:
    x = np.array([[0.0, 1.5, 0.0], [np.nan, 0.0, -0.0]], "float32")
    got = run_nonzero(relaxvm.tensor(x)).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [[0, 1], [1, 0]])  # NaN is nonzero, -0.0 is zero
    np.testing.assert_array_equal(
        run_nonzero(relaxvm.tensor(np.zeros((2, 3), "int8"))).numpy().shape, (2, 0)
    )
    np.testing.assert_array_equal(run_nonzero(relaxvm.tensor(np.array(7, "int32"))).numpy(), [[0]])
    with pytest.raises(RelaxVMError, match=r"relax.run.nonzero: x must be a tensor, got list"):
        run_nonzero([1, 2])


# ---- legalized IR ---------------------------------------------------------------------------
def test_legalized_unique_is_a_pure_packed_call_then_a_match_cast() -> None:
    mod = from_source(
        HEADER
        + """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        u = R.unique(x, sorted=False, return_counts=True, axis=1)
        return u
"""
    )
    bindings = LegalizeOps()(mod)["main"].body.blocks[0].bindings
    packed = bindings[0].value
    assert isinstance(packed, Call) and packed.op.name == "relax.call_pure_packed"
    callee = packed.args[0]
    assert isinstance(callee, ExternFunc) and callee.global_symbol == "relax.run.unique"
    flags = [int(a.value.value) for a in packed.args[2:]]
    assert flags == [0, 0, 0, 1, 1]  # sorted, return_index, return_inverse, return_counts, axis
    casts = [b for b in bindings if isinstance(b, MatchCast)]
    assert len(casts) == 2
    values = casts[0].struct_info
    assert (
        isinstance(values, TensorStructInfo)
        and values.ndim == 2
        and values.shape_values is not None
    )
    assert all(type(d).__name__ == "Var" for d in values.shape_values)


def test_legalization_keeps_nonzero_unknown_rank_as_is() -> None:
    mod = from_source(
        HEADER
        + """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32")):
        return R.nonzero(x)
"""
    )
    bindings = LegalizeOps()(mod)["main"].body.blocks[0].bindings
    casts = [b for b in bindings if isinstance(b, MatchCast)]
    assert len(casts) == 1  # rank 2 is known even when the input's rank is not
    out = relaxvm.compile(mod, target="llvm")
    vm = relaxvm.VirtualMachine(out, relaxvm.cpu())
    got = vm["main"](relaxvm.tensor(np.array([[0, 2], [3, 0]], "float32"))).numpy()
    np.testing.assert_array_equal(got, [[0, 1], [1, 0]])


# ---- end to end -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_unique_feeds_reductions_and_shape_dependent_ops(mode: str) -> None:
    src = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        u = R.unique(x)
        total = R.sum(u)
        col = R.expand_dims(u, axis=1)
        row = R.expand_dims(u, axis=0)
        outer = R.matmul(col, row)
        shifted = R.add(u, R.ones_like(u))
        return (total, outer, shifted, R.shape_of(u))
"""
    x = np.array([3, 1, 0, 3, 2, 1, 1], "float32")
    total, outer, shifted, shape = compile_run(src, mode, x)
    u = np.unique(x)
    np.testing.assert_allclose(total.numpy(), u.sum())
    np.testing.assert_allclose(outer.numpy(), np.outer(u, u))
    np.testing.assert_allclose(shifted.numpy(), u + 1)
    assert tuple(shape) == (4,)


@pytest.mark.parametrize("mode", MODES)
def test_unique_outputs_reconstruct_the_input(mode: str) -> None:
    src = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "int32")):
        u = R.unique(x, sorted=False, return_inverse=True, return_counts=True)
        values = u[0]
        back = R.take(values, u[1], axis=0)
        again = R.unique(values)
        return (back, R.sum(u[2]), again)
"""
    x = np.array([[5, 1, 5], [2, 2, 9]], "int32")
    back, count, again = compile_run(src, mode, x)
    np.testing.assert_array_equal(back.numpy(), x.reshape(-1))
    assert int(count.numpy()) == x.size
    np.testing.assert_array_equal(again.numpy(), [1, 2, 5, 9])


@pytest.mark.parametrize("mode", MODES)
def test_nonzero_then_take(mode: str) -> None:
    src = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        idx = R.nonzero(x)
        flat = R.reshape(idx, R.shape([-1]))
        return R.take(x, flat, axis=0)
"""
    x = np.array([0.0, 2.5, 0.0, -1.0, 0.0], "float32")
    np.testing.assert_array_equal(compile_run(src, mode, x).numpy(), [2.5, -1.0])
    # The same executable with no nonzero element: an empty result.
    np.testing.assert_array_equal(
        compile_run(src, mode, np.zeros(3, "float32")).numpy().shape, (0,)
    )


# ---- quantize / dequantize ------------------------------------------------------------------
QDQ = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), s: R.Tensor((3,), "float32"), z: R.Tensor((3,), "int8")):
        q = R.quantize(x, s, z, axis=1, out_dtype="int8")
        d = R.dequantize(q, s, z, axis=1, out_dtype="float32")
        h = R.dequantize(q, R.const(1000.0, "float32"), R.const(0, "int8"), out_dtype="float16")
        u = R.quantize(x, R.const(0.5, "float32"), R.const(250, "int32"), out_dtype="uint8")
        return (q, d, h, u)
"""


@pytest.mark.parametrize("mode", MODES)
def test_quantize_rounds_half_to_even_and_saturates(mode: str) -> None:
    x = np.array([[0.5, 1.5, -2.5], [np.inf, -np.inf, 1e9], [2.49, -0.75, 3.0]], "float32")
    s = np.array([1.0, 0.5, 1.0], "float32")
    z = np.array([0, 3, -1], "int8")
    q, d, h, u = as_numpy(compile_run(QDQ, mode, x, s, z))
    expected = np.clip(np.round(x / s) + z, -128, 127).astype("int8")
    np.testing.assert_array_equal(q, expected)
    np.testing.assert_array_equal(q[0], [0, 6, -3])  # 0.5 -> 0, 1.5/0.5=3 (+3), -2.5 -> -2 (-1)
    np.testing.assert_allclose(d, (q.astype("int64") - z).astype("float32") * s)
    # 127 * 1000 is beyond float16's largest finite value: it saturates to 65504, not inf.
    assert h.dtype == np.float16 and h[1, 0] == np.float16(65504) and h[1, 1] == np.float16(-65504)
    np.testing.assert_array_equal(u, np.clip(np.round(x / 0.5) + 250, 0, 255).astype("uint8"))


def test_qdq_legalization_needs_known_shapes() -> None:
    mod = from_source(
        HEADER
        + """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2), s: R.Tensor((), "float32"), z: R.Tensor((), "int8")):
        return R.quantize(x, s, z)
"""
    )
    with pytest.raises(
        CompileError, match=r"relax.quantize .*argument data has unknown rank, shape or dtype"
    ):
        LegalizeOps()(mod)


def test_builder_calls_compile_with_symbolic_per_axis_parameters() -> None:
    from relaxvm.ir import Var as SymVar
    from relaxvm.ir.relax import BlockBuilder

    n = SymVar("n", "int64")
    x = Var("x", TensorStructInfo([n, 2], "int32"))
    s = Var("s", TensorStructInfo([n], "float32"))
    z = Var("z", TensorStructInfo([n], "int32"))
    bb = BlockBuilder()
    with bb.function("main", [x, s, z]):
        out = bb.emit(op.dequantize(x, s, z, axis=0))
        bb.emit_func_output(out)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target="llvm"), relaxvm.cpu())
    xv = np.array([[2**31 - 1, -(2**31)], [4, 5], [0, 1]], "int32")
    sv = np.array([0.5, 2.0, 1.0], "float32")
    zv = np.array([-5, 1, 7], "int32")
    got = vm["main"](relaxvm.tensor(xv), relaxvm.tensor(sv), relaxvm.tensor(zv)).numpy()
    want = (xv.astype("int64") - zv[:, None]).astype("float32") * sv[:, None]
    np.testing.assert_array_equal(got, want)  # int64 difference: no wrap-around at the extremes
