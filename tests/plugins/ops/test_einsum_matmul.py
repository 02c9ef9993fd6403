"""einsum subscripts that are a matrix product legalize to relax.matmul's kernels (with
``permute_dims`` where the labels are in another order); the others keep one TE kernel.
Both paths are checked against numpy (TIR interpreter and the llvm target)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _ops_harness import run

import relaxvm
from relaxvm import relax
from relaxvm.ir import IntImm, structural_equal
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op.einsum_spec import parse_einsum
from relaxvm.ir.tir import PrimFunc
from relaxvm.transform import LegalizeOps
from relaxvm_ops.einsum import matmul_plan

RNG = np.random.default_rng(11)

Build = Callable[..., Any]


def _t(x: Any, axes: list[int] | None = None) -> Any:
    return op.permute_dims(x, axes)


def _kernels(build: Build, shapes: list[tuple[Any, ...]], dtype: str) -> list[tuple[str, Any]]:
    """``(name, PrimFunc)`` of every kernel of ``main(params) = build(*params)``, legalized."""
    syms: dict[str, SymVar] = {}
    params = [
        relax.Var(
            f"x{k}",
            relax.TensorStructInfo(
                [syms.setdefault(d, SymVar(d)) if isinstance(d, str) else d for d in s], dtype
            ),
        )
        for k, s in enumerate(shapes)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(build(*params)))
    mod = LegalizeOps()(bb.get())
    return [(gv.name_hint, f) for gv, f in mod.items() if isinstance(f, PrimFunc)]


# subscripts, operand shapes, the same product written with matmul/linear/permute_dims.
MATMUL_SHAPED: list[tuple[str, list[tuple[Any, ...]], Build]] = [
    ("ij,jk->ik", [(6, 4), (4, 5)], lambda x, y: op.matmul(x, y)),
    ("ij,jk", [(6, 4), (4, 5)], lambda x, y: op.matmul(x, y)),
    ("ik,jk->ij", [(6, 4), (5, 4)], lambda x, y: op.linear(x, y)),
    ("ji,jk->ik", [(4, 6), (4, 5)], lambda x, y: op.matmul(_t(x), y)),
    ("ij,jk->ki", [(6, 4), (4, 5)], lambda x, y: _t(op.matmul(x, y))),
    ("bij,bjk->bik", [(3, 6, 4), (3, 4, 5)], lambda x, y: op.matmul(x, y)),
    ("bij,bkj->bik", [(3, 6, 4), (3, 5, 4)], lambda x, y: op.matmul(x, _t(y, [0, 2, 1]))),
    ("bik,jk->bij", [(3, 6, 4), (5, 4)], lambda x, y: op.linear(x, y)),
    ("...ij,...jk->...ik", [(2, 3, 6, 4), (3, 4, 5)], lambda x, y: op.matmul(x, y)),
    ("...ij,...jk->...ik", [(2, 1, 6, 4), (3, 4, 5)], lambda x, y: op.matmul(x, y)),
    ("ij,j->i", [(6, 4), (4,)], lambda x, y: op.matmul(x, y)),
    ("j,jk->k", [(4,), (4, 5)], lambda x, y: op.matmul(x, y)),
    ("j,ij->i", [(4,), (6, 4)], lambda x, y: op.linear(x, y)),
    ("jk,ij->ik", [(4, 5), (6, 4)], lambda x, y: op.matmul(y, x)),
    ("i,i->", [(4,), (4,)], lambda x, y: op.matmul(x, y)),
    ("ij,jk->ik", [("n", 4), (4, "m")], lambda x, y: op.matmul(x, y)),
    ("bij,bjk->bik", [("b", "n", 4), ("b", 4, 5)], lambda x, y: op.matmul(x, y)),
]


@pytest.mark.parametrize(("subscripts", "shapes", "reference"), MATMUL_SHAPED)
def test_matrix_products_get_the_matmul_kernels(
    subscripts: str, shapes: list[tuple[Any, ...]], reference: Build
) -> None:
    got = _kernels(lambda *xs: op.einsum(list(xs), subscripts), shapes, "float32")
    want = _kernels(reference, shapes, "float32")
    assert [name for name, _ in got] == [name for name, _ in want]
    assert any(name == "matmul" for name, _ in got)
    for (name, kernel), (_, expected) in zip(got, want, strict=True):
        assert structural_equal(kernel, expected), name
        assert kernel.attrs["op_pattern"] == expected.attrs["op_pattern"]


GENERIC: list[tuple[str, list[tuple[Any, ...]], str]] = [
    ("ii->i", [(4, 4)], "float32"),  # a diagonal
    ("ij->ji", [(3, 4)], "float32"),  # one operand
    ("i,j->ij", [(3,), (4,)], "float32"),  # an outer product: nothing summed
    ("ij,ij->i", [(3, 4), (3, 4)], "float32"),  # a row-wise dot: no rows/cols of a matmul
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)], "float32"),  # two summed labels
    ("ij,jk->k", [(3, 4), (4, 5)], "float32"),  # i summed within one operand
    ("ij,j->i", [(3, 4), (1,)], "float32"),  # the summed label broadcasts
    ("ij,jk->ik", [(3, 4), (4, 5)], "bool"),  # logical einsum
    ("ijk,ikl,l->jk", [(2, 3, 4), (2, 4, 3), (3,)], "float32"),  # three operands
    ("bij,bjk->bik", [("b", 3, 4), ("c", 4, 5)], "float32"),  # batch extents not proven equal
]


@pytest.mark.parametrize(("subscripts", "shapes", "dtype"), GENERIC)
def test_other_einsums_keep_one_einsum_kernel(
    subscripts: str, shapes: list[tuple[Any, ...]], dtype: str
) -> None:
    kernels = _kernels(lambda *xs: op.einsum(list(xs), subscripts), shapes, dtype)
    assert [name for name, _ in kernels] == ["einsum"]


@pytest.mark.parametrize(
    ("subscripts", "shapes", "expected"),
    [
        # (x1, x2, permuted x1, permuted x2, x2 read as (cols, k), permuted output)
        ("ij,jk->ik", [(6, 4), (4, 5)], (0, 1, None, None, False, None)),
        ("ik,jk->ij", [(6, 4), (5, 4)], (0, 1, None, None, True, None)),
        ("ji,jk->ik", [(4, 6), (4, 5)], (0, 1, (1, 0), None, False, None)),
        ("ij,jk->ki", [(6, 4), (4, 5)], (0, 1, None, None, False, (1, 0))),
        ("kj,ij->ki", [(5, 4), (6, 4)], (0, 1, None, None, True, None)),
        # y @ x: in operand order it copies x and the output; swapped it copies nothing.
        ("jk,ij->ik", [(4, 5), (6, 4)], (1, 0, None, None, False, None)),
        ("bij,bkj->bik", [(3, 6, 4), (3, 5, 4)], (0, 1, None, (0, 2, 1), False, None)),
        ("j,ij->i", [(4,), (6, 4)], (0, 1, None, None, True, None)),
    ],
)
def test_matmul_plan(
    subscripts: str, shapes: list[tuple[int, ...]], expected: tuple[Any, ...]
) -> None:
    dims = [[IntImm("int64", d) for d in s] for s in shapes]
    spec = parse_einsum(subscripts, [len(s) for s in shapes])
    out = np.einsum(subscripts, *[np.zeros(s) for s in shapes]).shape
    plan = matmul_plan(spec, dims, [IntImm("int64", d) for d in out], relaxvm.DataType("float32"))
    assert plan is not None
    got = (plan.left, plan.right, plan.left_axes, plan.right_axes, plan.transpose_right,
           plan.out_axes)  # fmt: skip
    assert got == expected


def test_matmul_plan_is_none_for_bool_and_other_shapes() -> None:
    dims = [[IntImm("int64", 3), IntImm("int64", 4)], [IntImm("int64", 4), IntImm("int64", 5)]]
    out = [IntImm("int64", 3), IntImm("int64", 5)]
    spec = parse_einsum("ij,jk->ik", [2, 2])
    assert matmul_plan(spec, dims, out, relaxvm.DataType("bool")) is None
    assert matmul_plan(spec, dims, out, None) is None
    outer = parse_einsum("ij,kl->ijkl", [2, 2])
    four = [*out[:1], *dims[0][1:], *dims[1]]
    assert matmul_plan(outer, dims, four, relaxvm.DataType("float32")) is None


def _arrays(shapes: list[tuple[int, ...]], dtype: str) -> list[np.ndarray]:
    # Small integers: float32 sums are exact, so both dtypes compare exactly.
    return [RNG.integers(-3, 4, size=s).astype(dtype) for s in shapes]


def _concrete(shape: tuple[Any, ...]) -> tuple[int, ...]:
    sizes = {"n": 7, "m": 3, "b": 2}
    return tuple(sizes[d] if isinstance(d, str) else d for d in shape)


@pytest.mark.parametrize(("subscripts", "shapes", "reference"), MATMUL_SHAPED)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matrix_products_match_numpy(
    subscripts: str, shapes: list[tuple[Any, ...]], reference: Build, dtype: str
) -> None:
    arrays = _arrays([_concrete(s) for s in shapes], dtype)
    params = [(f"a{i}", s, dtype) for i, s in enumerate(shapes)]
    got = run(lambda *ts: op.einsum(list(ts), subscripts), params, arrays)
    want = np.einsum(subscripts, *arrays)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ij,jk->ik", [("n", 64), (64, 48)]),
        ("ik,jk->ij", [(33, 64), (40, 64)]),
        ("ij,jk->ki", [(33, 64), (64, 40)]),
        ("bij,bkj->bik", [("b", 17, 32), ("b", 24, 32)]),
        ("...ij,...jk->...ik", [(2, 1, 9, 16), (3, 16, 20)]),
        ("ij,j->i", [("n", 64), (64,)]),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matrix_products_on_llvm(
    subscripts: str, shapes: list[tuple[Any, ...]], dtype: str
) -> None:
    syms: dict[str, SymVar] = {}
    params = [
        relax.Var(
            f"x{k}",
            relax.TensorStructInfo(
                [syms.setdefault(d, SymVar(d)) if isinstance(d, str) else d for d in s], dtype
            ),
        )
        for k, s in enumerate(shapes)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(op.einsum(list(params), subscripts)))
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target="llvm"), relaxvm.cpu())
    arrays = _arrays([_concrete(s) for s in shapes], dtype)
    got = vm["main"](*[relaxvm.tensor(a) for a in arrays]).numpy()
    want = np.einsum(subscripts, *arrays)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
