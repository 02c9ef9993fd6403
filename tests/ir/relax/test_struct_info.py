"""StructInfo construction, printing, equality and the is_base_of subtyping check."""

from __future__ import annotations

import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Analyzer, IntImm
from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    BaseCheckResult,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeExpr,
    ShapeStructInfo,
    TensorStructInfo,
    TupleStructInfo,
    Var,
    is_base_of,
    struct_info_base_check,
)
from relaxvm.runtime import cpu
from relaxvm.runtime.device import Device

PASS, L0, L1, L2 = (
    BaseCheckResult.PASS,
    BaseCheckResult.FAIL_L0,
    BaseCheckResult.FAIL_L1,
    BaseCheckResult.FAIL_L2,
)


# ---- construction and printing ----------------------------------------------------------------
def test_tensor_struct_info_infers_ndim_from_shape_and_prints_like_tvmscript() -> None:
    n = TirVar("n")
    sinfo = TensorStructInfo([n, 4], "float32")
    assert sinfo.ndim == 2
    assert sinfo.dtype == "float32"
    assert isinstance(sinfo.shape, ShapeExpr)
    assert sinfo.shape_values == (n, IntImm("int64", 4))
    assert str(sinfo) == 'R.Tensor((n, 4), dtype="float32")'
    assert str(TensorStructInfo([8], dtype=None)) == "R.Tensor((8,))"


def test_tensor_struct_info_with_unknown_parts() -> None:
    assert str(TensorStructInfo(dtype=None, ndim=2)) == "R.Tensor(ndim=2)"
    assert str(TensorStructInfo(dtype="int8", ndim=3)) == 'R.Tensor(dtype="int8", ndim=3)'
    unknown = TensorStructInfo(dtype=None)
    assert str(unknown) == "R.Tensor"
    assert unknown.is_unknown_ndim and unknown.is_unknown_dtype and unknown.shape is None
    for void in (None, "void", ""):
        assert TensorStructInfo(dtype=void).dtype is None


def test_tensor_struct_info_with_shape_variable_and_device() -> None:
    shape_var = Var("s", ShapeStructInfo(ndim=3))
    sinfo = TensorStructInfo(shape_var, "float16", vdevice=cpu())
    assert sinfo.shape is shape_var
    assert sinfo.ndim == 3
    assert sinfo.shape_values is None
    assert str(sinfo) == 'R.Tensor(s, dtype="float16", vdevice="cpu:0")'


def test_tensor_struct_info_errors() -> None:
    with pytest.raises(VMValueError, match=r"ndim=3 contradicts the shape"):
        TensorStructInfo([1, 2], dtype=None, ndim=3)
    with pytest.raises(VMValueError, match=r"ndim must be -1 \(unknown\) or >= 0, got -2"):
        TensorStructInfo(dtype=None, ndim=-2)
    with pytest.raises(VMTypeError, match=r"dimension 1 must be an int or an integer PrimExpr"):
        TensorStructInfo([1, "two"], dtype=None)
    with pytest.raises(VMTypeError, match=r"dimension 0 must be an integer expression"):
        TensorStructInfo([TirVar("f", "float32")], dtype=None)
    with pytest.raises(VMTypeError, match=r"cannot parse data type 'floaty'"):
        TensorStructInfo([1], "floaty")
    with pytest.raises(VMTypeError, match=r"shape variable x must have ShapeStructInfo"):
        TensorStructInfo(Var("x", TensorStructInfo(dtype=None)), dtype=None)
    with pytest.raises(VMTypeError, match=r"vdevice must be a Device"):
        TensorStructInfo([1], dtype=None, vdevice="cpu")  # type: ignore[arg-type]


def test_shape_prim_object_tuple_callable_printing() -> None:
    n = TirVar("n")
    assert str(ShapeStructInfo([n, 4])) == "R.Shape([n, 4])"
    assert ShapeStructInfo([n, 4]).ndim == 2
    assert str(ShapeStructInfo(ndim=2)) == "R.Shape(ndim=2)"
    assert str(ShapeStructInfo()) == "R.Shape(ndim=-1)"
    assert str(PrimStructInfo("int64")) == 'R.Prim("int64")'
    assert str(PrimStructInfo(value=n)) == "R.Prim(value=n)"
    assert PrimStructInfo(value=n).dtype == "int64"
    assert str(ObjectStructInfo()) == "R.Object"
    tup = TupleStructInfo([TensorStructInfo(dtype=None, ndim=1), ShapeStructInfo(ndim=0)])
    assert str(tup) == "R.Tuple(R.Tensor(ndim=1), R.Shape(ndim=0))"
    func = FuncStructInfo([TensorStructInfo([n], "float32")], TensorStructInfo([n], "float32"))
    assert str(func) == (
        'R.Callable((R.Tensor((n,), dtype="float32"),), R.Tensor((n,), dtype="float32"), True)'
    )
    opaque = FuncStructInfo.opaque_func()
    assert opaque.is_opaque and not opaque.purity
    assert str(opaque) == "R.Callable(ret=R.Object, purity=False)"


def test_prim_shape_tuple_func_errors() -> None:
    with pytest.raises(VMValueError, match=r"PrimStructInfo: give a dtype, a value, or both"):
        PrimStructInfo()
    with pytest.raises(VMTypeError, match=r"value `n` has type int64, but dtype int32"):
        PrimStructInfo("int32", TirVar("n"))
    with pytest.raises(VMValueError, match=r"ndim=1 contradicts the 2 values"):
        ShapeStructInfo([1, 2], ndim=1)
    with pytest.raises(VMTypeError, match=r"TupleStructInfo: field 1: expected a StructInfo"):
        TupleStructInfo([ObjectStructInfo(), 3])  # type: ignore[list-item]
    with pytest.raises(VMTypeError, match=r"FuncStructInfo: ret: expected a StructInfo"):
        FuncStructInfo([], "R.Tensor")  # type: ignore[arg-type]


def test_struct_info_is_immutable() -> None:
    sinfo = TensorStructInfo([2], "float32")
    with pytest.raises(AttributeError, match=r"TensorStructInfo is immutable"):
        sinfo.dtype = "int32"  # type: ignore[misc]


def test_struct_info_equality_is_structural_with_vars_by_identity() -> None:
    n, m = TirVar("n"), TirVar("n")
    assert TensorStructInfo([n, 4], "float32") == TensorStructInfo([n, 4], "float32")
    assert hash(TensorStructInfo([n, 4], "float32")) == hash(TensorStructInfo([n, 4], "float32"))
    assert TensorStructInfo([n, 4], "float32") != TensorStructInfo([m, 4], "float32")
    assert TensorStructInfo([n], "float32") != TensorStructInfo([n], "float16")
    assert TensorStructInfo(dtype=None, ndim=1) != ShapeStructInfo(ndim=1)
    assert len({ObjectStructInfo(), ObjectStructInfo()}) == 1


# ---- is_base_of -------------------------------------------------------------------------------
def test_object_is_base_of_everything_and_only_object_may_still_match() -> None:
    obj = ObjectStructInfo()
    for derived in (
        TensorStructInfo([1], "float32"),
        ShapeStructInfo(ndim=1),
        PrimStructInfo("int64"),
        TupleStructInfo([]),
        FuncStructInfo.opaque_func(),
        obj,
    ):
        assert is_base_of(obj, derived) == PASS
    assert is_base_of(TensorStructInfo(dtype=None), obj) == L1  # needs a run-time kind check
    assert is_base_of(TensorStructInfo(dtype=None), ShapeStructInfo()) == L0  # never a tensor


def test_unknown_tensor_is_base_of_specific_but_not_the_reverse() -> None:
    specific = TensorStructInfo([2, 3], "float32")
    assert is_base_of(TensorStructInfo(dtype=None), specific) == PASS
    assert is_base_of(TensorStructInfo(dtype=None, ndim=2), specific) == PASS
    assert is_base_of(TensorStructInfo(dtype="float32"), specific) == PASS
    assert is_base_of(specific, TensorStructInfo(ndim=2, dtype="float32")) == L2  # no extents
    assert is_base_of(specific, TensorStructInfo(dtype="float32")) == L1  # rank unknown
    assert is_base_of(specific, TensorStructInfo([2, 3], dtype=None)) == L1  # dtype unknown


def test_static_mismatches_fail_at_level_zero() -> None:
    specific = TensorStructInfo([2, 3], "float32")
    assert is_base_of(specific, TensorStructInfo([2, 3], "int32")) == L0
    assert is_base_of(specific, TensorStructInfo([2, 3, 1], "float32")) == L0
    assert is_base_of(specific, TensorStructInfo([2, 4], "float32")) == L0
    assert is_base_of(ShapeStructInfo(ndim=2), ShapeStructInfo(ndim=3)) == L0
    assert is_base_of(ShapeStructInfo(ndim=2), ShapeStructInfo()) == L1
    assert is_base_of(PrimStructInfo("int64"), PrimStructInfo("int32")) == L0
    assert bool(L0) is False and bool(L1) is True  # IntEnum: only L0 is falsy


def test_symbolic_dims_are_decided_by_the_analyzer() -> None:
    n, m = TirVar("n"), TirVar("m")
    base = TensorStructInfo([n * 4], "float32")
    assert is_base_of(base, TensorStructInfo([4 * n], "float32")) == PASS  # proved equal
    assert is_base_of(base, TensorStructInfo([n * 4 + 1], "float32")) == L0  # proved different
    assert is_base_of(base, TensorStructInfo([m], "float32")) == L2  # needs a run-time check
    assert is_base_of(ShapeStructInfo([n + 1 - 1]), ShapeStructInfo([n])) == PASS
    analyzer = Analyzer()
    analyzer.bind(m, n * 4)
    assert is_base_of(base, TensorStructInfo([m], "float32"), analyzer) == PASS


def test_int32_and_int64_extents_compare_by_value() -> None:
    assert is_base_of(ShapeStructInfo([IntImm("int32", 4)]), ShapeStructInfo([4])) == PASS


def test_prim_values_and_shape_variables() -> None:
    n = TirVar("n")
    assert is_base_of(PrimStructInfo("int64"), PrimStructInfo(value=n)) == PASS
    assert is_base_of(PrimStructInfo(value=n), PrimStructInfo("int64")) == L2
    assert is_base_of(PrimStructInfo(value=n + 1), PrimStructInfo(value=n)) == L0
    shape = Var("s", ShapeStructInfo(ndim=2))
    assert (
        is_base_of(TensorStructInfo(shape, dtype=None), TensorStructInfo(shape, dtype=None)) == PASS
    )
    other = Var("t", ShapeStructInfo(ndim=2))
    assert (
        is_base_of(TensorStructInfo(shape, dtype=None), TensorStructInfo(other, dtype=None)) == L2
    )


def test_tensor_device_checks() -> None:
    on_cpu = TensorStructInfo([1], "float32", vdevice=cpu())
    assert is_base_of(on_cpu, TensorStructInfo([1], "float32")) == L1
    assert is_base_of(on_cpu, TensorStructInfo([1], "float32", vdevice=Device(2, 0))) == L0
    assert is_base_of(TensorStructInfo([1], "float32"), on_cpu) == PASS


def test_tuples_take_the_weakest_field() -> None:
    n = TirVar("n")
    base = TupleStructInfo([TensorStructInfo(dtype=None, ndim=1), PrimStructInfo(value=n)])
    exact = TupleStructInfo([TensorStructInfo([3], "int8"), PrimStructInfo(value=n)])
    assert is_base_of(base, exact) == PASS
    assert (
        is_base_of(base, TupleStructInfo([TensorStructInfo(dtype=None), PrimStructInfo(value=n)]))
        == L1
    )
    assert is_base_of(base, TupleStructInfo([TensorStructInfo(dtype=None, ndim=1)])) == L0
    assert is_base_of(base, TupleStructInfo([ShapeStructInfo(), PrimStructInfo("int64")])) == L0


def test_callables_are_contravariant_in_params_and_covariant_in_return() -> None:
    tensor, any_tensor = TensorStructInfo([4], "float32"), TensorStructInfo(dtype=None)
    narrow = FuncStructInfo([tensor], tensor)
    wide = FuncStructInfo([any_tensor], tensor)
    assert is_base_of(narrow, wide) == PASS  # accepts more, returns the same
    assert is_base_of(wide, narrow) == L2  # would need a run-time argument check
    assert is_base_of(FuncStructInfo([tensor], any_tensor), narrow) == PASS
    assert is_base_of(narrow, FuncStructInfo([tensor], any_tensor)) == L1
    assert is_base_of(narrow, FuncStructInfo([tensor, tensor], tensor)) == L0
    assert is_base_of(FuncStructInfo.opaque_func(purity=False), narrow) == PASS
    assert is_base_of(narrow, FuncStructInfo.opaque_func(tensor, purity=True)) == L2


def test_purity_pure_may_replace_impure_only() -> None:
    tensor = TensorStructInfo([4], "float32")
    pure = FuncStructInfo([tensor], tensor, purity=True)
    impure = FuncStructInfo([tensor], tensor, purity=False)
    assert is_base_of(impure, pure) == PASS
    assert is_base_of(pure, impure) == L0


def test_method_shortcut_and_type_errors() -> None:
    assert ObjectStructInfo().is_base_of(TensorStructInfo(dtype=None))
    assert not TensorStructInfo([2], "float32").is_base_of(TensorStructInfo(dtype=None))
    with pytest.raises(VMTypeError, match=r"derived must be a StructInfo, got int"):
        struct_info_base_check(ObjectStructInfo(), 3)  # type: ignore[arg-type]


def test_callable_equality_binds_the_parameters_symbols() -> None:
    def signature(first: int) -> FuncStructInfo:
        # Fresh n and m each time, as two separately written annotations have.
        n, m = TirVar("n"), TirVar("m")
        x = TensorStructInfo([first, n, m], "float32")
        return FuncStructInfo([x, TensorStructInfo([first, n, 1], "float32")], x)

    a, b, c = signature(1), signature(1), signature(2)
    assert a == b
    assert (a != b) is False
    assert hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2
    # A symbol that no parameter introduces stays free: compared by identity, as TVM's ==.
    k1, k2 = TirVar("k"), TirVar("k")
    ret_only = [FuncStructInfo([], TensorStructInfo([k], "float32")) for k in (k1, k2)]
    assert ret_only[0] != ret_only[1]
    assert FuncStructInfo([], TensorStructInfo([k1], "float32")) == ret_only[0]
    assert a != TensorStructInfo([1], "float32") and a != 3
    assert a.derive_func is None and FuncStructInfo.opaque_func().derive_func is None
    # Inside a tuple the comparison is the same.
    assert TupleStructInfo([a]) == TupleStructInfo([b])


def test_tuple_struct_info_needs_a_list() -> None:
    with pytest.raises(VMTypeError, match="TupleStructInfo: fields must be a list of StructInfo"):
        TupleStructInfo(1)  # type: ignore[arg-type]
    fields = (TensorStructInfo([2], "float32"), ObjectStructInfo())
    assert TupleStructInfo(field for field in fields).fields == fields
