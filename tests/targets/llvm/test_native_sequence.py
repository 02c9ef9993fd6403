"""The whole-function entry builder (relaxvm_llvm.sequence) and Kernel.native_call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
import relaxvm_llvm
from relaxvm.errors import VMIndexError, VMValueError
from relaxvm.ir import Var
from relaxvm.ir.tir import te
from relaxvm.runtime import tensor
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm_llvm.sequence import build_sequence, sequence_ir


@pytest.fixture(scope="module")
def module() -> Any:
    n = Var("n")
    a = te.placeholder((n,), "float32", name="A")
    b = te.placeholder((n,), "float32", name="B")
    add = te.create_prim_func([a, b, te.compute((n,), lambda i: a[i] + b[i], name="C")], name="add")
    mul = te.create_prim_func([a, b, te.compute((n,), lambda i: a[i] * b[i], name="C")], name="mul")
    return relaxvm_llvm.build({"add": add, "mul": mul})


def test_native_call_describes_the_call(module: Any) -> None:
    a, b, c = (tensor(np.full(6, v, "float32")) for v in (1.0, 2.0, 0.0))
    builder, address, pointers, ints, written = module["add"].native_call(a, b, c)
    assert builder is relaxvm_llvm.kernel._build_sequence
    assert isinstance(address, int) and address != 0
    assert pointers == (a.data_ptr, b.data_ptr, c.data_ptr)
    assert ints == (6,) and written == (False, False, True)
    np.testing.assert_array_equal(c.numpy(), 0.0)  # describing does not call


def test_native_call_declines_what_the_call_would_reject_or_convert(module: Any) -> None:
    a, b = tensor(np.ones(6, "float32")), tensor(np.ones(6, "float32"))
    assert module["add"].native_call(a, b, tensor(np.ones(5, "float32"))) is None
    assert module["add"].native_call(a, b, tensor(np.ones(6, "float64"))) is None
    assert module["add"].native_call(a, b, np.ones(6, "float32")) is None  # not a Tensor
    assert module["add"].native_call(a, b) is None
    assert module["add"].native_call(a, b, a) is None  # the output overlaps an input


def test_sequence_runs_kernels_in_order(module: Any) -> None:
    n = 8
    x = tensor(np.arange(n, dtype="float32"))
    y = tensor(np.full(n, 3.0, "float32"))
    tmp = tensor(np.zeros(n, "float32"))  # an intermediate at an absolute address
    out = tensor(np.zeros(n, "float32"))
    add, mul = module["add"].native_call(x, y, tmp), module["mul"].native_call(tmp, x, out)
    steps = [
        (add[1], [(0, 0), (1, 0), (-1, tmp.data_ptr)], list(add[3])),
        (mul[1], [(-1, tmp.data_ptr), (0, 0), (2, 0)], list(mul[3])),
    ]
    seq = build_sequence(3, steps)
    assert seq.num_bases == 3 and seq.num_steps == 2
    assert seq.run(x.data_ptr, y.data_ptr, out.data_ptr) == 0
    xs = np.arange(n, dtype="float32")
    np.testing.assert_array_equal(out.numpy(), (xs + 3) * xs)
    # New bases: other inputs and output, same plan.
    x2, out2 = tensor(np.ones(n, "float32")), tensor(np.zeros(n, "float32"))
    assert seq.run(x2.data_ptr, y.data_ptr, out2.data_ptr) == 0
    np.testing.assert_array_equal(out2.numpy(), np.full(n, 4.0))
    # Offsets from a base: the second half of x.
    half = build_sequence(
        2, [(add[1], [(0, 16), (0, 16), (1, 0)], [4])]
    )  # add(x[4:], x[4:]) into out[:4]
    assert half.run(x.data_ptr, out.data_ptr) == 0
    np.testing.assert_array_equal(out.numpy()[:4], 2 * xs[4:])


def test_sequence_reports_the_failing_step() -> None:
    @I.ir_module
    class Take:
        @R.function
        def main(x: R.Tensor((8,), "float32"), i: R.Tensor((2,), "int64")):
            return R.take(x, i, axis=0)

    ex = relaxvm.compile(Take, target="llvm")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    kernel = next(f for f in vm._pool if "take" in getattr(f, "name", ""))
    x, out = tensor(np.arange(8, dtype="float32")), tensor(np.zeros(2, "float32"))
    good, bad = tensor(np.array([1, 2], "int64")), tensor(np.array([1, 12], "int64"))
    _, address, _, ints, _ = kernel.native_call(x, good, out)
    seq = build_sequence(3, [(address, [(0, 0), (1, 0), (2, 0)], list(ints))] * 2)
    assert seq.run(x.data_ptr, good.data_ptr, out.data_ptr) == 0
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0])
    assert seq.run(x.data_ptr, bad.data_ptr, out.data_ptr) != 0
    assert seq.failed_step() == 0
    # The failure's error slot was discarded: the ordinary call reports its own.
    with pytest.raises(VMIndexError, match="index 12 is out of range"):
        kernel(x, bad, out)


def test_malformed_steps_are_refused() -> None:
    with pytest.raises(VMValueError, match="base 3 of 2"):
        sequence_ir(2, [(1234, [(3, 0)], [])])
    with pytest.raises(VMValueError, match="not a 64-bit int"):
        sequence_ir(1, [(1234, [(0, 0)], [1 << 70])])
    with pytest.raises(VMValueError, match="number of bases"):
        build_sequence(-1, [])


def test_kernels_name_the_builder(module: Any) -> None:
    a, b, c = (tensor(np.ones(4, "float32")) for _ in range(3))
    builder = module["add"].native_call(a, b, c)[0]
    assert builder is module["mul"].native_call(a, b, c)[0]
    seq = builder(0, [])
    assert seq.run() == 0 and seq.failed_step() == -1
