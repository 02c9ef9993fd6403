"""tril/triu/flip/tile/repeat/stack/meshgrid/collapse_sum/eye legalizations against numpy, on
the cases the conformance matrix does not reach: symbolic diagonal offsets, 0-d inputs, a
single stacked tensor, three meshgrid axes."""

from __future__ import annotations

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

from relaxvm.ir.relax import op
from relaxvm_ops._kernel import OpPattern

X = np.arange(20, dtype="float32").reshape(4, 5)
SYM = [("x", ("n", 5), "float32")]


def _lead(x):  # type: ignore[no-untyped-def]
    return x.struct_info.shape_values[0]


@pytest.mark.parametrize(("name", "ref"), [("tril", np.tril), ("triu", np.triu)])
def test_triangle_with_a_symbolic_offset(name: str, ref) -> None:  # type: ignore[no-untyped-def]
    # k = n - 3 is only known at run time (1 for n = 4): it reaches the kernel as a scalar.
    got = run(lambda x: getattr(op, name)(x, _lead(x) - 3), SYM, [X])
    np.testing.assert_array_equal(got, ref(X, 1))


def test_eye_with_a_symbolic_offset() -> None:
    got = run(lambda x: op.eye(3, 5, _lead(x) - 6, dtype="int32"), SYM, [X])
    np.testing.assert_array_equal(got, np.eye(3, 5, -2, dtype="int32"))


def test_zero_dim_inputs() -> None:
    scalar = np.array(2.5, dtype="float32")
    params = [("s", (), "float32")]
    np.testing.assert_array_equal(run(lambda s: op.repeat(s, 3), params, [scalar]), [2.5] * 3)
    got = run(lambda s: op.tile(s, [2, 3]), params, [scalar])
    np.testing.assert_array_equal(got, np.tile(scalar, [2, 3]))


def test_stack_of_one_and_meshgrid_of_three() -> None:
    np.testing.assert_array_equal(run(lambda x: op.stack([x], axis=-1), SYM, [X]), X[..., None])
    vectors = [np.arange(k, dtype="int32") for k in (2, 3, 4)]
    params = [("a", (2,), "int32"), ("b", (3,), "int32"), ("c", ("m",), "int32")]
    got = run(lambda a, b, c: op.meshgrid([a, b, c], "xy"), params, vectors)
    want = np.meshgrid(*vectors, indexing="xy")
    for grid, ref in zip(got, want, strict=True):
        np.testing.assert_array_equal(grid, ref)


def test_collapse_sum_kernels() -> None:
    params = [*SYM, ("t", (1,), "float32")]
    got = run(lambda x, t: op.collapse_sum_like(x, t), params, [X, np.zeros(1, "float32")])
    np.testing.assert_array_equal(got, X.sum(keepdims=True)[0])
    got = run(lambda x: op.collapse_sum_to(x, (1, 5)), SYM, [X])
    np.testing.assert_array_equal(got, X.sum(axis=0, keepdims=True))
    mod, _, _ = legalize(lambda x: op.collapse_sum_to(x, (5,)), SYM)
    (func,) = prim_funcs(mod).values()
    assert func.attrs["op_pattern"] == OpPattern.COMM_REDUCE


def test_copy_kernels_are_injective() -> None:
    for build in (lambda x: op.flip(x, 1), lambda x: op.tile(x, 2), lambda x: op.tril(x)):
        mod, _, _ = legalize(build, SYM)
        (func,) = prim_funcs(mod).values()
        assert func.attrs["op_pattern"] == OpPattern.INJECTIVE
