"""Inference of sort, argsort, topk and einsum: TVM's shapes, symbolic extents, unknown ranks,
dtypes, attributes and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from relaxvm.ir import Analyzer, PrimExpr
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import ShapeStructInfo, StructInfo, TensorStructInfo, TupleStructInfo, Var, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.einsum_spec import parse_einsum
from relaxvm.script import from_source

N = SymVar("n", "int64")


def tvar(shape: Sequence[Any] | None = None, dtype: str | None = "float32", ndim: int = -1) -> Var:
    return Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


def assert_shape(sinfo: StructInfo, expected: Sequence[Any], dtype: str | None = "float32") -> None:
    assert isinstance(sinfo, TensorStructInfo), sinfo
    values = sinfo.shape_values
    assert values is not None, sinfo
    assert len(values) == len(expected), f"{sinfo} vs {expected}"
    analyzer = Analyzer()
    for got, want in zip(values, expected, strict=True):
        assert isinstance(got, PrimExpr)
        assert analyzer.can_prove_equal(got, want), f"{sinfo}: {got} != {want}"
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo


def assert_rank(sinfo: StructInfo, ndim: int, dtype: str | None = "float32") -> None:
    assert isinstance(sinfo, TensorStructInfo), sinfo
    assert sinfo.shape_values is None and sinfo.ndim == ndim, sinfo
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo


# ---- sort / argsort -------------------------------------------------------------------------
def test_sort_keeps_shape_and_dtype() -> None:
    assert_shape(infer(op.sort(tvar([N, 4]))), [N, 4])
    assert_shape(infer(op.sort(tvar([3, 4], "int8"), axis=0, descending=True)), [3, 4], "int8")
    assert_rank(infer(op.sort(tvar(ndim=3))), 3)
    assert_rank(infer(op.sort(tvar(None, None))), -1, None)
    call = op.sort(tvar([3]), axis=0, descending=True)
    assert call.attrs["axis"] == 0 and call.attrs["descending"] is True


def test_argsort_dtype_attribute() -> None:
    assert_shape(infer(op.argsort(tvar([N, 4]))), [N, 4], "int32")
    assert_shape(infer(op.argsort(tvar([N, 4]), dtype="int64")), [N, 4], "int64")
    # dtype=None: TVM falls back to the data's dtype.
    assert_shape(infer(op.argsort(tvar([2], "float16"), dtype=None)), [2], "float16")
    assert_rank(infer(op.argsort(tvar(ndim=2), axis=1)), 2, "int32")
    call = op.argsort(tvar([3]), descending=True)
    assert call.attrs == {"axis": -1, "descending": True, "dtype": "int32"}


def test_sort_errors() -> None:
    with pytest.raises(OpError, match=r"relax.sort: axis 2 is out of range for a tensor of rank 2"):
        infer(op.sort(tvar([3, 4]), axis=2))
    with pytest.raises(OpError, match=r"relax.argsort: axis -3 is out of range"):
        infer(op.argsort(tvar([3, 4]), axis=-3))
    with pytest.raises(OpError, match=r"relax.sort: descending must be a bool, got 1"):
        op.sort(tvar([3]), descending=1)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.argsort: axis must be an int, got 'a'"):
        op.argsort(tvar([3]), axis="a")  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.argsort: invalid dtype 'int33'"):
        op.argsort(tvar([3]), dtype="int33")
    with pytest.raises(OpError, match=r"relax.sort: data must be a tensor"):
        infer(op.sort(Var("s", ShapeStructInfo(ndim=1))))


# ---- topk -----------------------------------------------------------------------------------
def test_topk_shapes_follow_tvm() -> None:
    both = infer(op.topk(tvar([N, 6]), k=2))
    assert isinstance(both, TupleStructInfo) and len(both.fields) == 2
    assert_shape(both.fields[0], [N, 2])
    assert_shape(both.fields[1], [N, 2], "int32")
    # A symbolic axis extent takes k, as TVM does.
    assert_shape(infer(op.topk(tvar([3, N]), k=4, ret_type="values")), [3, 4])
    # k < 1, or k at least the constant extent: the whole axis.
    assert_shape(infer(op.topk(tvar([3, 5]), k=0, ret_type="values")), [3, 5])
    assert_shape(infer(op.topk(tvar([3, 5]), k=-1, ret_type="values")), [3, 5])
    assert_shape(infer(op.topk(tvar([3, 5]), k=9, axis=1, ret_type="values")), [3, 5])
    assert_shape(infer(op.topk(tvar([3, 5]), k=2, axis=0, ret_type="indices")), [2, 5], "int32")
    assert_shape(
        infer(op.topk(tvar([4], "int8"), k=1, ret_type="indices", dtype="int64")), [1], "int64"
    )
    assert_shape(infer(op.topk(tvar([4]), ret_type="indices", dtype=None)), [1], "float32")
    unknown = infer(op.topk(tvar(ndim=2), k=2))
    assert isinstance(unknown, TupleStructInfo)
    assert_rank(unknown.fields[0], 2)
    assert_rank(unknown.fields[1], 2, "int32")


def test_topk_attrs_and_errors() -> None:
    call = op.topk(tvar([3]), k=2, largest=False)
    assert call.attrs == {
        "k": 2, "axis": -1, "ret_type": "both", "largest": False, "dtype": "int32",
    }  # fmt: skip
    with pytest.raises(
        OpError, match=r"relax.topk: ret_type must be one of both, values, indices, got 'all'"
    ):
        op.topk(tvar([3]), ret_type="all")
    with pytest.raises(OpError, match=r"relax.topk: k must be an int, got 2.5"):
        op.topk(tvar([3]), k=2.5)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.topk: largest must be a bool, got 'yes'"):
        op.topk(tvar([3]), largest="yes")  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.topk: axis 1 is out of range for a tensor of rank 1"):
        infer(op.topk(tvar([3]), axis=1))


# ---- einsum ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("subscripts", "shapes", "expected"),
    [
        ("ij,jk->ik", [[N, 3], [3, 5]], [N, 5]),
        ("ij,jk", [[N, 3], [3, 5]], [N, 5]),
        ("ij->ji", [[N, 3]], [3, N]),
        ("ii->i", [[4, 4]], [4]),
        ("ii", [[4, 4]], []),
        ("i,j->ij", [[N], [3]], [N, 3]),
        ("ij,ij->", [[N, 3], [N, 3]], []),
        ("Ba", [[2, 3]], [2, 3]),  # implicit output: ASCII order, capitals first
        ("bA", [[2, 3]], [3, 2]),
        ("...ij,jk->...ik", [[7, N, 2, 3], [3, 4]], [7, N, 2, 4]),
        ("...ij,...jk", [[7, 1, 2, 3], [5, 3, 4]], [7, 5, 2, 4]),
        ("i...->...", [[3, N, 2]], [N, 2]),
        ("ij,j->i", [[N, 3], [1]], [N]),
        (" i j , j k -> i k ", [[2, 3], [3, 4]], [2, 4]),
    ],
)
def test_einsum_shapes(subscripts: str, shapes: list[list[Any]], expected: list[Any]) -> None:
    operands = [tvar(s) for s in shapes]
    assert_shape(infer(op.einsum(operands, subscripts)), expected)


def test_einsum_unknown_shapes_and_dtypes() -> None:
    assert_rank(infer(op.einsum([tvar(ndim=2), tvar([3, 4])], "ij,jk->ik")), 2)
    assert_rank(infer(op.einsum([tvar(ndim=-1), tvar([3, 4])], "ij,jk->ik")), -1)
    assert_shape(infer(op.einsum([tvar([2, 3], None)], "ij->j")), [3], None)
    assert_shape(infer(op.einsum([tvar([2, 3], "int32")], "ij->j")), [3], "int32")
    call = op.einsum((tvar([2]),), "i")
    assert call.attrs == {"subscripts": "i"}


@pytest.mark.parametrize(
    ("operands", "subscripts", "message"),
    [
        ([[2, 3]], "ij,jk->ik", r"subscripts 'ij,jk->ik' name 2 operand\(s\), but 1 operand"),
        (
            [[2, 3]],
            "ijk",
            r"operand 0 subscripts 'ijk' name 3 dimension\(s\), but the operand has rank 2",
        ),
        ([[2, 3]], "ij->k", r"output label 'k' does not occur in any operand"),
        ([[2, 3]], "ij->ii", r"output label\(s\) i repeat"),
        ([[2, 3]], "i1", r"has the character '1'"),
        ([[2, 3]], "......", r"has more than one '...'"),
        ([[2, 3]], "ij->i->j", r"more than one '->'"),
        ([[2, 3, 4]], "...i->i", r"the output subscripts must contain '...'"),
        ([[2, 3], [4, 5]], "ij,jk->ik", r"label 'j' has extents 3 and 4"),
        ([[2, 3], [4, 5]], "...,...", r"broadcast dimension has extents"),
    ],
)
def test_einsum_errors(operands: list[list[int]], subscripts: str, message: str) -> None:
    with pytest.raises(OpError, match=rf"relax.einsum: .*{message}"):
        infer(op.einsum([tvar(s) for s in operands], subscripts))


def test_einsum_operand_errors() -> None:
    with pytest.raises(
        OpError, match=r"relax.einsum: operands must have the same dtype, got float32, int32"
    ):
        infer(op.einsum([tvar([2]), tvar([2], "int32")], "i,i"))
    with pytest.raises(OpError, match=r"relax.einsum: operands must hold at least one tensor"):
        infer(op.einsum([], ""))
    with pytest.raises(OpError, match=r"relax.einsum: subscripts must be a str, got 3"):
        op.einsum([tvar([2])], 3)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.einsum: operands must be a tuple of tensors"):
        infer(op.einsum(tvar([2]), "i"))


def test_parse_einsum_expands_ellipsis_right_aligned() -> None:
    spec = parse_einsum("...ij,j...", [4, 2])
    assert spec.inputs == (("0", "1", "i", "j"), ("j", "1"))
    assert spec.output == ("0", "1", "i")
    assert spec.reduced == ("j",)


# ---- script ---------------------------------------------------------------------------------
def test_script_namespace_has_the_ops() -> None:
    mod = from_source(
        """
from relaxvm.script import ir as I, relax as R

@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        s = R.sort(x, axis=0, descending=True)
        a = R.argsort(x, dtype="int64")
        t = R.topk(x, k=2, ret_type="indices")
        e = R.einsum((x, s), "ij,ij->i")
        return (s, a, t, e)
"""
    )
    text = mod.script()
    for piece in (
        "R.sort(x, axis=0, descending=True)",
        'R.argsort(x, axis=-1, descending=False, dtype="int64")',
        'R.topk(x, k=2, axis=-1, ret_type="indices", largest=True, dtype="int32")',
        'R.einsum((x, s), subscripts="ij,ij->i")',
        'R.Tensor((n, 2), dtype="int32")',
    ):
        assert piece in text, text
