"""Reductions, softmax and cumsum legalizations against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

from relaxvm.ir.relax import op

RNG = np.random.default_rng(1)

REDUCE = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
    "prod": np.prod,
    "variance": np.var,
}
AXES = [None, 1, (0, 2), -1]


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_float_reductions(name: str, axis: object, keepdims: bool) -> None:
    x = RNG.uniform(0.5, 1.5, size=(2, 3, 2)).astype("float32")
    got = run(
        lambda t: getattr(op, name)(t, axis=axis, keepdims=keepdims),
        [("x", (2, 3, 2), "float32")],
        [x],
    )
    want = REDUCE[name](x, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod"])
def test_int_reductions_symbolic(name: str) -> None:
    x = RNG.integers(-4, 5, size=(3, 4)).astype("int32")
    got = run(lambda t: getattr(op, name)(t, axis=1), [("x", ("n", "m"), "int32")], [x])
    np.testing.assert_array_equal(got, REDUCE[name](x, axis=1).astype("int32"))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_reductions(name: str, axis: int | None, keepdims: bool) -> None:
    # Ties everywhere: the first occurrence must win, as in numpy.
    x = RNG.integers(0, 3, size=(3, 4)).astype("int32")
    got = run(lambda t: getattr(op, name)(t, axis=axis, keepdims=keepdims),
              [("x", (3, 4), "int32")], [x])  # fmt: skip
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_argmax_float_symbolic() -> None:
    x = RNG.normal(size=(2, 5)).astype("float32")
    got = run(lambda t: op.argmax(t, axis=1), [("x", (2, "n"), "float32")], [x])
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax(axis: int) -> None:
    x = RNG.normal(size=(3, 4)).astype("float32") * 3
    params = [("x", ("n", 4), "float32")]
    got = run(lambda t: op.nn.softmax(t, axis=axis), params, [x])
    np.testing.assert_allclose(got, _softmax(x, axis), rtol=1e-5, atol=1e-6)
    got = run(lambda t: op.nn.log_softmax(t, axis=axis), params, [x])
    np.testing.assert_allclose(got, np.log(_softmax(x, axis)), rtol=1e-5, atol=1e-5)


def test_softmax_has_separate_stages() -> None:
    mod, _, _ = legalize(op.nn.softmax, [("x", (2, 3), "float32")])
    func = prim_funcs(mod)["softmax"]
    text = func.script()
    for stage in ("T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum", "T_softmax_norm"):
        assert stage in text
    assert func.attrs["op_pattern"] == 4


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum(axis: int | None, exclusive: bool) -> None:
    x = RNG.integers(-3, 4, size=(2, 3)).astype("int32")
    got = run(lambda t: op.cumsum(t, axis=axis, exclusive=exclusive),
              [("x", ("n", 3), "int32")], [x])  # fmt: skip
    want = np.cumsum(x, axis=axis).astype("int32")
    if exclusive:
        want = want - (x.reshape(-1) if axis is None else x)
    np.testing.assert_array_equal(got, want)


def test_cumsum_float_with_dtype() -> None:
    x = RNG.normal(size=(4,)).astype("float32")
    got = run(lambda t: op.cumsum(t, axis=0, dtype="float64"), [("x", (4,), "float32")], [x])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.cumsum(x.astype("float64")), rtol=1e-6)


def test_reduction_patterns() -> None:
    for build, name in ((op.sum, "sum"), (op.prod, "prod"), (op.argmax, "argmax")):
        mod, _, _ = legalize(build, [("x", (2, 3), "float32")])
        assert prim_funcs(mod)[name].attrs["op_pattern"] == 3


@pytest.mark.parametrize("name", ["sum", "max", "prod", "mean", "argmax"])
def test_reduce_zero_dim(name: str) -> None:
    a = np.array(2.5, "float32")
    got = run(getattr(op, name), [("a", (), "float32")], [a])
    np.testing.assert_array_equal(got, getattr(np, name)(a))
