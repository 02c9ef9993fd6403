"""relax.image.resize2d: the builder (attributes and their errors), StructInfo inference and
the script form; numbers are checked by the conformance matrix (cases_image)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Analyzer
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import ShapeStructInfo, TensorStructInfo, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source
from relaxvm.testing.conformance.cases_image import resize2d_ref

N, H = SymVar("n"), SymVar("h")


def tvar(shape: Sequence[Any] | None, dtype: str | None = "float32", ndim: int = -1) -> rx.Var:
    return rx.Var("t", TensorStructInfo(shape, dtype, ndim=ndim))


def same(sinfo: Any, expected: Sequence[Any]) -> bool:
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None, sinfo
    analyzer = Analyzer()
    values = list(sinfo.shape_values)
    return len(values) == len(expected) and all(
        analyzer.can_prove_equal(a, b) for a, b in zip(values, expected, strict=True)
    )


def test_resize2d_shapes_attrs_and_dtype() -> None:
    call = op.image.resize2d(tvar((N, 3, 8, 8)), (H, 12))
    assert call.attrs["method"] == "linear" and call.attrs["layout"] == "NCHW"
    assert call.attrs["coordinate_transformation_mode"] == "half_pixel"
    assert call.attrs["roi"] == (0.0, 0.0, 0.0, 0.0) and call.attrs["rounding_method"] == "round"
    assert same(infer(call), [N, 3, H, 12])
    square = infer(op.image.resize2d(tvar((1, 3, 8, 8), "int32"), 4, method="nearest_neighbor"))
    assert same(square, [1, 3, 4, 4]) and str(square.dtype) == "int32"
    typed = infer(op.image.resize2d(tvar((1, 3, 8, 8)), [5], out_dtype="float16"))
    assert same(typed, [1, 3, 5, 5]) and str(typed.dtype) == "float16"
    shape_var = rx.Var("s", ShapeStructInfo(ndim=2))
    unknown = infer(op.image.resize2d(tvar((1, 3, 8, 8)), shape_var))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 4 and unknown.shape is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layout": "NCHW4x"}, r"layout 'NCHW4x': sub-axis 'x' splits no axis of 'NCHW'"),
        ({"method": "area"},
         r"method must be one of 'nearest_neighbor', 'linear', 'cubic', got 'area'"),
        ({"coordinate_transformation_mode": "tf_half_pixel"},
         r"coordinate_transformation_mode must be one of 'half_pixel', .*got 'tf_half_pixel'"),
        ({"rounding_method": "up"}, r"rounding_method must be one of '', 'round'.*got 'up'"),
        ({"roi": (0.0, 1.0)}, r"roi must have 4 entries, got \[0\.0, 1\.0\]"),
    ],
    ids=["layout", "method", "mode", "rounding", "roi"],
)  # fmt: skip
def test_resize2d_builder_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(OpError, match=r"relax\.image\.resize2d: " + message):
        op.image.resize2d(tvar((1, 3, 8, 8)), (4, 4), **kwargs)


def test_resize2d_inference_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.image\.resize2d: data must have rank 4 "
                       r"\(NCHW layout\), got shape \(3, 8, 8\)"):  # fmt: skip
        infer(op.image.resize2d(tvar((3, 8, 8)), (4, 4)))
    with pytest.raises(OpError, match=r"relax\.image\.resize2d: size must have 2 entries"):
        infer(op.image.resize2d(tvar((1, 3, 8, 8)), rx.ShapeExpr([4, 4, 4])))
    with pytest.raises(OpError, match=r"relax\.image\.resize2d: method 'cubic' needs data with "
                       r"a float dtype, got int32"):  # fmt: skip
        infer(op.image.resize2d(tvar((1, 3, 8, 8), "int32"), (4, 4), method="cubic"))
    with pytest.raises(OpError, match=r"relax\.image\.resize2d: method 'linear' needs data with "
                       r"a float dtype, got int32"):  # fmt: skip
        infer(op.image.resize2d(tvar((1, 3, 8, 8), "int32"), (4, 4)))


def test_resize2d_script_form() -> None:
    source = """
from relaxvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 4, 4), "float32")):
        y = R.image.resize2d(x, (8, 6), method="nearest_neighbor")
        return y
"""
    assert same(from_source(source)["main"].ret_struct_info, [1, 3, 8, 6])


def test_reference_modes() -> None:
    x = np.arange(4, dtype="float32").reshape(1, 1, 1, 4)
    corners = resize2d_ref(x, (1, 7), "linear", "align_corners")
    np.testing.assert_allclose(corners[0, 0, 0], np.linspace(0, 3, 7))
    nearest = resize2d_ref(x, (1, 8), "nearest_neighbor", "asymmetric", "floor")
    np.testing.assert_array_equal(nearest[0, 0, 0], [0, 0, 1, 1, 2, 2, 3, 3])
    half = resize2d_ref(x, (1, 2), "linear", "half_pixel")
    np.testing.assert_allclose(half[0, 0, 0], [0.5, 2.5])


def test_resize2d_in_nhwc_matches_nchw() -> None:
    import relaxvm

    x = np.random.default_rng(3).random((1, 2, 4, 5), dtype="float32")
    results = []
    for layout, data in (("NCHW", x), ("NHWC", np.ascontiguousarray(x.transpose(0, 2, 3, 1)))):
        var = rx.Var("x", TensorStructInfo(data.shape, "float32"))
        bb = rx.BlockBuilder()
        with bb.function("main", [var]):
            bb.emit_func_output(bb.emit(op.image.resize2d(var, (7, 3), layout=layout)))
        mod = bb.finalize()
        assert same(mod["main"].ret_struct_info, (1, 7, 3, 2) if layout == "NHWC" else (1, 2, 7, 3))
        vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
        results.append(vm["main"](relaxvm.tensor(data)).numpy())
    np.testing.assert_allclose(results[1], results[0].transpose(0, 2, 3, 1), rtol=1e-6)
