"""quantize / dequantize with a float16 zero point (TVM allows int8 or float16), end to end on
llvm and checked against numpy: a fractional zero point must not be truncated."""

from __future__ import annotations

import numpy as np

import relaxvm
from relaxvm.script import from_source

SRC = """
from relaxvm.script import ir as I
from relaxvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), q: R.Tensor((2, 3), "int8"),
             s: R.Tensor((3,), "float32"), z: R.Tensor((3,), "float16")):
        a = R.quantize(x, s, z, axis=1, out_dtype="int8")
        b = R.dequantize(q, s, z, axis=1, out_dtype="float32")
        c = R.quantize(x, s, z, axis=1, out_dtype="float8_e4m3fn")
        d = R.dequantize(c, s, z, axis=1, out_dtype="float32")
        return (a, b, d)
"""


def test_float16_zero_point_matches_numpy() -> None:
    ex = relaxvm.compile(from_source(SRC), target="llvm")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.array([[0.5, 1.5, -2.5], [10.0, -300.0, 3.0]], "float32")
    q = np.array([[0, -1, 7], [127, -128, 3]], "int8")
    s = np.array([1.0, 0.5, 2.0], "float32")
    z = np.array([0.5, -1.25, 3.0], "float16")
    a, b, d = (t.numpy() for t in vm["main"](*(relaxvm.tensor(v) for v in (x, q, s, z))))
    zf = z.astype("float32")
    np.testing.assert_array_equal(a, np.clip(np.round(x / s) + zf, -128, 127).astype("int8"))
    # Integer data with a fractional zero point subtracts in float32, not in int64.
    np.testing.assert_array_equal(b, (q.astype("float32") - zf) * s)
    assert b[0, 0] == -0.5 and b[0, 1] == 0.125
    # float8: x / s + z rounded to e4m3fn (small values here are exact), then back.
    np.testing.assert_allclose(d[0], ((x[0] / s + zf) - zf) * s, rtol=0.07)
