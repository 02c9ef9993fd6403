"""Calls in TVM's packed layouts (NCHW4c, OIHW4i4o) print with their layout strings and parse
back to the same module."""

from __future__ import annotations

from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.script import from_source


def _module() -> rx.IRModule:
    n = SymVar("n")
    x = rx.Var("x", rx.TensorStructInfo([n, 2, 8, 8, 4], "float32"))
    w = rx.Var("w", rx.TensorStructInfo([2, 2, 3, 3, 4, 4], "float32"))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(x, w, padding=1, data_layout="NCHW4c",
                                     kernel_layout="OIHW4i4o", out_layout="NHWC8c"))  # fmt: skip
            z = bb.emit(op.nn.max_pool2d(y, 2, 2, layout="NHWC8c", out_layout="NCHW"))
            r = bb.emit(op.image.resize2d(x, (4, 4), layout="NCHW4c"))
            out = bb.emit_output(rx.Tuple([z, r]))
        bb.emit_func_output(out)
    return bb.get()


def test_packed_layouts_print_and_parse_back() -> None:
    mod = _module()
    text = mod.script()
    assert 'data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NHWC8c"' in text
    assert 'layout="NHWC8c", out_layout="NCHW"' in text
    assert 'R.Tensor((n, 8, 8, 1, 8), dtype="float32")' in text  # 8 channels in one block
    parsed = from_source(text)
    rx.assert_structural_equal(parsed, mod)
    assert parsed.script() == text
