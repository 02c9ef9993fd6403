"""Layout, indexing and creation legalizations against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import PrimValue, Tuple, op

RNG = np.random.default_rng(3)
X = RNG.integers(-50, 50, size=(2, 3, 4)).astype("int32")
P = [("x", (2, 3, 4), "int32")]
PS = [("x", ("n", 3, 4), "int32")]  # symbolic leading dim


@pytest.mark.parametrize("params", [P, PS])
@pytest.mark.parametrize(
    ("build", "ref"),
    [
        (lambda x: op.reshape(x, (-1, 6)), lambda x: x.reshape(-1, 6)),
        (lambda x: op.flatten(x), lambda x: x.reshape(-1)),
        (lambda x: op.expand_dims(x, [0, -1]), lambda x: x[None, ..., None]),
        (lambda x: op.permute_dims(x), lambda x: x.transpose()),
        (lambda x: op.permute_dims(x, [1, 0, 2]), lambda x: x.transpose(1, 0, 2)),
        (
            lambda x: op.strided_slice(x, [1, 2], [0, -1], [3, 0], [2, -1]),
            lambda x: x[:, 0:3:2, -1:0:-1],
        ),
        (lambda x: op.strided_slice(x, [2], [-3], [100]), lambda x: x[:, :, -3:100]),
    ],
)
def test_layout_ops(params: list, build, ref) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_array_equal(run(build, params, [X]), ref(X))


def test_reshape_kernels_are_marked() -> None:
    for build, name in (
        (lambda x: op.reshape(x, (6, 4)), "reshape"),
        (op.flatten, "flatten"),
        (lambda x: op.expand_dims(x, 1), "expand_dims"),
    ):
        mod, _, _ = legalize(build, P)
        func = prim_funcs(mod)[name]
        assert func.attrs["relax.reshape_like"] is True and func.attrs["op_pattern"] == 2
    mod, _, _ = legalize(op.permute_dims, P)
    assert "relax.reshape_like" not in prim_funcs(mod)["transpose"].attrs


def test_reshape_symbolic_target_passes_tir_var() -> None:
    n = SymVar("n")
    x = RNG.normal(size=(3, 4)).astype("float32")
    got = run(lambda t: op.reshape(t, (n * 2, 2)), [("x", (n, 4), "float32")], [x])
    np.testing.assert_array_equal(got, x.reshape(6, 2))


def test_squeeze() -> None:
    x = RNG.normal(size=(1, 3, 1)).astype("float32")
    params = [("x", (1, 3, 1), "float32")]
    np.testing.assert_array_equal(run(op.squeeze, params, [x]), x.squeeze())
    np.testing.assert_array_equal(run(lambda t: op.squeeze(t, 2), params, [x]), x.squeeze(2))


def test_broadcast_to() -> None:
    got = run(lambda t: op.broadcast_to(t, (2, 2, 3, 4)), P, [X])
    np.testing.assert_array_equal(got, np.broadcast_to(X, (2, 2, 3, 4)))


def test_broadcast_to_symbolic_source() -> None:
    x = RNG.normal(size=(1, 3)).astype("float32")
    got = run(lambda t: op.broadcast_to(t, (2, 3)), [("x", ("n", 3), "float32")], [x])
    np.testing.assert_array_equal(got, np.broadcast_to(x, (2, 3)))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis: int) -> None:
    a, b, c = (RNG.normal(size=(2, 2)).astype("float32") for _ in range(3))
    params = [(n, (2, 2), "float32") for n in "abc"]
    got = run(lambda *t: op.concat(list(t), axis=axis), params, [a, b, c])
    np.testing.assert_array_equal(got, np.concatenate([a, b, c], axis=axis))


def test_concat_symbolic_and_tuple_variable() -> None:
    a, b = RNG.normal(size=(2, 3)).astype("float32"), RNG.normal(size=(1, 3)).astype("float32")
    params = [("a", ("n", 3), "float32"), ("b", ("m", 3), "float32")]
    got = run(lambda x, y: op.concat(Tuple([x, y])), params, [a, b])
    np.testing.assert_array_equal(got, np.concatenate([a, b]))


@pytest.mark.parametrize("spec", [2, [1, 3], [2, 10]])
def test_split(spec: int | list[int]) -> None:
    x = RNG.normal(size=(4, 2)).astype("float32")
    got = run(lambda t: op.split(t, spec, axis=0), [("x", (4, 2), "float32")], [x])
    want = np.split(x, spec, axis=0)
    assert isinstance(got, tuple) and len(got) == len(want)
    for piece, ref in zip(got, want, strict=True):
        np.testing.assert_array_equal(piece, ref)


def test_split_symbolic_axis() -> None:
    x = RNG.normal(size=(2, 6)).astype("float32")
    got = run(lambda t: op.split(t, 3, axis=1), [("x", ("n", 6), "float32")], [x])
    for piece, ref in zip(got, np.split(x, 3, axis=1), strict=True):
        np.testing.assert_array_equal(piece, ref)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take(axis: int | None) -> None:
    x = RNG.normal(size=(3, 4)).astype("float32")
    idx = np.array([[0, 2], [-1, 1]], dtype="int64")
    got = run(lambda t, i: op.take(t, i, axis=axis),
              [("x", ("n", 4), "float32"), ("i", (2, 2), "int64")], [x, idx])  # fmt: skip
    np.testing.assert_array_equal(got, np.take(x, idx, axis=axis))


def test_full_zeros_ones_like() -> None:
    x = RNG.normal(size=(2, 3)).astype("float32")
    params = [("x", ("n", 3), "float32")]
    np.testing.assert_array_equal(run(op.zeros_like, params, [x]), np.zeros_like(x))
    np.testing.assert_array_equal(run(lambda t: op.ones_like(t, "int32"), params, [x]),
                                  np.ones((2, 3), "int32"))  # fmt: skip
    np.testing.assert_array_equal(run(lambda t: op.full_like(t, 7), params, [x]),
                                  np.full((2, 3), 7, "float32"))  # fmt: skip


def test_full_zeros_ones_static_and_symbolic() -> None:
    n = SymVar("n")
    x = np.zeros((3,), "float32")
    params = [("x", (n,), "float32")]
    got = run(lambda t: op.full((n, 2), PrimValue(2.5), "float32"), params, [x])
    np.testing.assert_array_equal(got, np.full((3, 2), 2.5, "float32"))
    np.testing.assert_array_equal(run(lambda t: op.zeros((2, n), "int64"), params, [x]),
                                  np.zeros((2, 3), "int64"))  # fmt: skip
    np.testing.assert_array_equal(run(lambda t: op.ones((2,), "bool"), params, [x]),
                                  np.ones((2,), bool))  # fmt: skip


def test_full_from_0d_tensor() -> None:
    v = np.array(4, dtype="int32")
    got = run(lambda t: op.full((2, 2), t), [("v", (), "int32")], [v])
    np.testing.assert_array_equal(got, np.full((2, 2), 4, "int32"))


@pytest.mark.parametrize(
    ("args", "dtype"), [((5,), None), ((1, 7, 2), "int32"), ((0.5, 2.0, 0.5), "float32")]
)
def test_arange(args: tuple, dtype: str | None) -> None:
    x = np.zeros((1,), "float32")
    got = run(lambda t: op.arange(*args, dtype=dtype), [("x", (1,), "float32")], [x])
    want = np.arange(*args, dtype=dtype or "int64")
    np.testing.assert_allclose(got, want)
    assert got.dtype == want.dtype


def test_arange_symbolic_end() -> None:
    n = SymVar("n")
    x = np.zeros((4,), "float32")
    got = run(lambda t: op.arange(n), [("x", (n,), "float32")], [x])
    np.testing.assert_array_equal(got, np.arange(4))


def test_reshape_to_a_runtime_shape_stays_reshape() -> None:
    from relaxvm.ir.relax import BlockBuilder, ShapeStructInfo, TensorStructInfo, Var
    from relaxvm.registry.extensions import get_legalization

    x = Var("x", TensorStructInfo((2, 3), "float32"))
    s = Var("s", ShapeStructInfo(ndim=2))
    bb = BlockBuilder()
    with bb.function("main", [x, s]):
        call = bb.normalize(op.reshape(x, s))
        legal = get_legalization("relax.reshape")
        assert legal is not None and legal(bb, call) is call
        bb.emit_func_output(x)


@pytest.mark.parametrize(
    ("build", "ref"),
    [
        (lambda a: op.add(a, a), lambda a: a + a),
        (lambda a: op.sum(a), lambda a: a.sum()),
        (lambda a: op.reshape(a, (1, 1)), lambda a: a.reshape(1, 1)),
        (lambda a: op.expand_dims(a, 0), lambda a: a[None]),
    ],
)
def test_zero_dim_tensors(build, ref) -> None:  # type: ignore[no-untyped-def]
    a = np.array(1.5, "float32")
    np.testing.assert_array_equal(run(build, [("a", (), "float32")], [a]), ref(a))
