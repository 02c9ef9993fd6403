"""The op registry: registration, lookup, arity and the inference entry point."""

from __future__ import annotations

import pytest

from relaxvm.errors import RelaxVMError
from relaxvm.ir.relax import Call, GlobalVar, Op, TensorStructInfo, Var, op
from relaxvm.ir.relax.op import OpError, get_op_info, infer, list_ops, register_op
from relaxvm.ir.relax.op import registry as registry_module

from .conftest import assert_shape, tvar


def test_op_error_is_a_relaxvm_value_error() -> None:
    assert issubclass(OpError, RelaxVMError)
    assert issubclass(OpError, ValueError)


def test_list_ops_covers_the_families() -> None:
    names = list_ops()
    assert names == sorted(names)
    for name in ("relax.add", "relax.sum", "relax.matmul", "relax.reshape", "relax.nn.conv2d"):
        assert name in names


def test_get_op_info_by_name_and_op() -> None:
    info = get_op_info("relax.add")
    assert info.name == "relax.add"
    assert info.num_inputs == 2
    assert info.purity is True
    assert get_op_info(Op.get("relax.add")) is info


def test_unknown_op_suggests_close_names() -> None:
    with pytest.raises(OpError, match=r"unknown Relax op 'relax.ad'.*relax.add"):
        get_op_info("relax.ad")


def test_duplicate_registration_is_an_error() -> None:
    with pytest.raises(OpError, match="already registered"):
        register_op("relax.add", num_inputs=2, infer=lambda call, ctx: TensorStructInfo(dtype=None))


def test_register_and_override_custom_op() -> None:
    def infer_first(call: Call, ctx: object) -> TensorStructInfo:
        return TensorStructInfo([7], "int32")

    register_op("test.custom_op", num_inputs=(1, None), infer=infer_first, override=True)
    try:
        assert "test.custom_op" in list_ops()
        sinfo = infer(Call(Op.get("test.custom_op"), [tvar([2])]))
        assert_shape(sinfo, [7], "int32")
        with pytest.raises(OpError, match=r"test.custom_op: expects 1 or more arguments, got 0"):
            infer(Call(Op.get("test.custom_op"), []))
    finally:
        # Keep the process-wide registry as the other tests expect it.
        registry_module._REGISTRY.pop("test.custom_op", None)


def test_register_rejects_bad_arity() -> None:
    with pytest.raises(OpError, match="num_inputs must be an int or a"):
        register_op("test.bad", num_inputs=(3, 1), infer=lambda c, x: TensorStructInfo(dtype=None))


def test_arity_is_checked_before_inference() -> None:
    call = Call(Op.get("relax.add"), [tvar([2])])
    with pytest.raises(OpError, match=r"relax.add: expects 2 argument\(s\), got 1"):
        infer(call)


def test_range_arity_message() -> None:
    x = tvar([2, 3])
    call = Call(Op.get("relax.linear"), [x])
    with pytest.raises(OpError, match=r"relax.linear: expects 2 to 3 arguments, got 1"):
        infer(call)


def test_infer_needs_an_op_callee() -> None:
    call = Call(GlobalVar("f"), [tvar([2])])
    with pytest.raises(OpError, match="the callee must be an Op"):
        infer(call)
    with pytest.raises(OpError, match="expected a relax Call"):
        infer(tvar([2]))  # type: ignore[arg-type]


def test_argument_without_struct_info_is_reported() -> None:
    call = op.add(Var("a"), tvar([2]))
    with pytest.raises(OpError, match=r"relax.add: argument 0 \(Var\) has no struct info"):
        infer(call)


def test_builders_store_attrs_and_do_not_infer() -> None:
    call = op.sum(tvar([2, 3]), axis=1, keepdims=True)
    assert call.op is Op.get("relax.sum")
    assert dict(call.attrs or {}) == {"axis": (1,), "keepdims": True}
    assert call.struct_info is None
    with pytest.raises(TypeError):
        call.attrs["axis"] = 0  # type: ignore[index]


def test_builder_rejects_non_expressions() -> None:
    with pytest.raises(OpError, match=r"relax.add: argument 1 must be a Relax expression"):
        op.add(tvar([2]), 3)  # type: ignore[arg-type]


def test_infer_struct_info_alias_and_analyzer_argument() -> None:
    from relaxvm.ir import Analyzer

    assert op.infer is op.infer_struct_info
    sinfo = op.infer_struct_info(op.add(tvar([2]), tvar([2])), Analyzer())
    assert_shape(sinfo, [2])
