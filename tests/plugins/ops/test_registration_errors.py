"""The plugin registers a legalization for every computing op; structural ops become packed
calls; calls that cannot be legalized fail with errors naming the op; targets can override."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _ops_harness import execute, legalize, prim_funcs, run

import relaxvm
from relaxvm.ir.relax import BlockBuilder, Call, TensorStructInfo, Var, op
from relaxvm.ir.relax.expr import ExternFunc
from relaxvm.ir.relax.op import list_ops
from relaxvm.registry import extensions
from relaxvm.testing import isolated_plugins
from relaxvm_ops import LegalizationError, OpPattern, call_te
from relaxvm_ops.runtime import RelaxAssertionError

#: Every op of docs/ops.md that computes on tensors (plus print/assert_op, lowered to packed
#: calls): each must have a generic legalization.
COMPUTING_OPS = [
    f"relax.{name}"
    for name in [
        "abs",
        "add",
        "arange",
        "argmax",
        "argmin",
        "assert_op",
        "astype",
        "broadcast_to",
        "ceil",
        "clip",
        "concat",
        "cumsum",
        "divide",
        "equal",
        "erf",
        "exp",
        "expand_dims",
        "flatten",
        "floor",
        "floor_divide",
        "full",
        "full_like",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "linear",
        "log",
        "logical_and",
        "logical_not",
        "logical_or",
        "logical_xor",
        "matmul",
        "max",
        "maximum",
        "mean",
        "min",
        "minimum",
        "multiply",
        "negative",
        "nn.adaptive_avg_pool2d",
        "nn.avg_pool2d",
        "nn.batch_norm",
        "nn.conv2d",
        "nn.gelu",
        "nn.layer_norm",
        "nn.log_softmax",
        "nn.max_pool2d",
        "nn.relu",
        "nn.rms_norm",
        "nn.silu",
        "nn.softmax",
        "not_equal",
        "ones",
        "ones_like",
        "permute_dims",
        "power",
        "print",
        "prod",
        "reshape",
        "round",
        "rsqrt",
        "sigmoid",
        "split",
        "sqrt",
        "squeeze",
        "strided_slice",
        "subtract",
        "sum",
        "take",
        "tanh",
        "variance",
        "where",
        "zeros",
        "zeros_like",
    ]
]
#: Ops lowered by the VM passes rather than to kernels: deliberately not legalized.
NOT_KERNELS = [
    "relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed",
    "relax.call_pure_packed", "relax.shape_of", "relax.tensor_to_shape", "relax.make_closure",
    "relax.invoke_closure", "relax.null_value", "relax.to_vdevice",
]  # fmt: skip


def test_every_computing_op_has_a_generic_legalization() -> None:
    known = set(list_ops())
    assert set(COMPUTING_OPS) <= known
    missing = [n for n in COMPUTING_OPS if extensions.get_legalization(n) is None]
    assert not missing
    sources = extensions.list_legalizations()
    assert sources[("relax.add", None)] == "plugin 'ops'"
    for name in NOT_KERNELS:
        assert extensions.get_legalization(name) is None


def test_runtime_functions_are_registered() -> None:
    assert relaxvm.get_global_func("relax.run.print") is not None
    assert relaxvm.get_global_func("relax.run.assert_op") is not None


def test_print_becomes_packed_call(capsys: pytest.CaptureFixture[str]) -> None:
    params = [("x", (2,), "int32")]
    mod, relax_params, _ = legalize(lambda x: op.print(x, format="x = {}"), params)
    main = mod["main"]
    value = main.body.blocks[0].bindings[0].value
    assert isinstance(value.op, ExternFunc) and value.op.global_symbol == "relax.run.print"
    execute(mod, relax_params, [np.array([1, 2], "int32")])
    assert capsys.readouterr().out == "x = [1 2]\n"


def test_assert_op_passes_and_fails() -> None:
    params = [("c", (), "bool"), ("v", (), "int32")]
    build = lambda c, v: op.assert_op(c, [v], format="bad value {}")  # noqa: E731
    mod, relax_params, _ = legalize(build, params)
    execute(mod, relax_params, [np.array(True), np.array(3, "int32")])
    with pytest.raises(AssertionError, match="bad value 3"):
        execute(mod, relax_params, [np.array(False), np.array(3, "int32")])
    with pytest.raises(RelaxAssertionError, match="Assertion Failed"):
        relaxvm.get_global_func("relax.run.assert_op")(False, "")


def _unknown(**kwargs: object) -> Var:
    return Var("x", TensorStructInfo(**kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("sinfo", "builder", "message"),
    [
        (
            {"ndim": -1, "dtype": "float32"},
            op.exp,
            "relax.exp: cannot legalize: argument 0 has unknown rank",
        ),
        (
            {"ndim": 2, "dtype": "float32"},
            lambda x: op.sum(x, axis=1),
            "relax.sum: cannot legalize",
        ),
        ({"shape": (2, 3), "dtype": None}, op.nn.relu, "relax.nn.relu: cannot legalize"),
        (
            {"ndim": -1, "dtype": "float32"},
            lambda x: op.matmul(x, x),
            "relax.matmul: cannot legalize",
        ),
    ],
)
def test_unknown_shapes_give_named_errors(sinfo, builder, message) -> None:  # type: ignore[no-untyped-def]
    x = _unknown(**sinfo)
    bb = BlockBuilder()
    with bb.function("main", [x]):
        call = bb.normalize(builder(x))
        func = extensions.get_legalization(call.op.name)
        with pytest.raises(LegalizationError, match=message):
            func(bb, call)
        bb.emit_func_output(x)


def test_legalization_error_is_a_value_error() -> None:
    assert issubclass(LegalizationError, ValueError)
    assert issubclass(LegalizationError, relaxvm.errors.RelaxVMError)


def test_identical_kernels_are_shared() -> None:
    x = Var("x", TensorStructInfo((2, 3), "float32"))
    bb = BlockBuilder()
    legal = extensions.get_legalization("relax.exp")
    with bb.function("main", [x]):
        a = bb.emit(legal(bb, bb.normalize(op.exp(x))))
        b = bb.emit(legal(bb, bb.normalize(op.exp(a))))
        bb.emit_func_output(b)
    assert list(prim_funcs(bb.get())) == ["tir_exp"]


def test_target_override_wins_for_its_target_only() -> None:
    def my_exp(bb: BlockBuilder, call: Call) -> Call:
        def kernel(t):  # type: ignore[no-untyped-def]
            from relaxvm.ir.tir import te

            return te.compute(t.shape, lambda *i: t[i] * 2.0, name="doubled")

        return call_te(bb, kernel, call.args[0], primfunc_name_hint="my_exp",
                       op_pattern=OpPattern.ELEMWISE)  # fmt: skip

    with isolated_plugins():
        generic = extensions.get_legalization("relax.exp")
        extensions.register_legalization("relax.exp", my_exp, target="llvm")
        assert extensions.get_legalization("relax.exp", "llvm") is my_exp
        assert extensions.get_legalization("relax.exp", "cuda") is generic
        with pytest.raises(relaxvm.errors.RegistryError, match="already legalized"):
            extensions.register_legalization("relax.exp", my_exp)
        extensions.register_legalization("relax.exp", my_exp, override=True)
        x = np.array([1.0, 2.0], "float32")
        np.testing.assert_array_equal(run(op.exp, [("x", (2,), "float32")], [x]), 2 * x)


def test_catalog_matches_the_family_modules() -> None:
    from relaxvm_ops.catalog import LEGALIZED_OPS
    from relaxvm_ops.legalizations import all_legalizations

    assert sorted(all_legalizations()) == list(LEGALIZED_OPS)


def test_loading_the_plugin_does_not_import_the_ir() -> None:
    # The loader runs every hook when a VM starts: ours must not pull in the IR.
    code = (
        "import sys\n"
        "from relaxvm.registry.loader import FunctionRegistrar, LegalizationRegistrar\n"
        "from relaxvm_ops import plugin\n"
        "plugin.relaxvm_register_legalizations(LegalizationRegistrar('ops'))\n"
        "plugin.relaxvm_register_builtins(FunctionRegistrar('ops'))\n"
        "print(sorted(m for m in sys.modules if m.startswith('relaxvm.ir')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
