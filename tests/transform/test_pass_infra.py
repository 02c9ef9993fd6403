"""Pass infrastructure: decorators, Sequential, PassContext gating, instruments, pipelines."""

from __future__ import annotations

import io

import pytest

from relaxvm import transform
from relaxvm.errors import CompileError
from relaxvm.ir.relax import BlockBuilder, IRModule, TensorStructInfo, Var, op
from relaxvm.ir.relax.expr_functor import ExprMutator


def _module() -> IRModule:
    bb = BlockBuilder()
    x = Var("x", TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.add(x, x))
            z = bb.emit_output(op.multiply(y, x))
        bb.emit_func_output(z)
    return bb.get()


class _AddToSubtract(ExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if getattr(call.op, "name", "") == "relax.add":
            return op.subtract(*call.args)
        return call


@transform.function_pass(opt_level=1, name="AddToSubtract")
def add_to_subtract(func, mod, ctx):
    return _AddToSubtract(mod).visit_expr(func)


@transform.module_pass
def add_attr(mod, ctx):
    return mod.with_attr("seen", True)


def _ops(mod: IRModule) -> list[str]:
    body = mod["main"].body
    return [b.value.op.name for block in body.blocks for b in block.bindings]


def test_function_pass_rewrites_and_keeps_input():
    mod = _module()
    out = add_to_subtract(mod)
    assert _ops(out) == ["relax.subtract", "relax.multiply"]
    assert _ops(mod) == ["relax.add", "relax.multiply"]  # passes never change their input
    assert add_to_subtract.name == "AddToSubtract"
    assert add_to_subtract.info.opt_level == 1


def test_sequential_runs_in_order_and_context_gates_by_opt_level():
    seq = transform.Sequential([add_to_subtract, add_attr], name="both")
    with transform.PassContext(opt_level=0):
        out = seq(_module())
    assert _ops(out) == ["relax.add", "relax.multiply"]  # opt_level 1 > 0: skipped
    assert out.get_attr("seen") is True
    with transform.PassContext(opt_level=0, required_pass=["AddToSubtract"]):
        assert _ops(seq(_module()))[0] == "relax.subtract"
    with transform.PassContext(opt_level=3, disabled_pass=["AddToSubtract"]):
        assert _ops(seq(_module()))[0] == "relax.add"
    assert len(seq) == 2 and [p.name for p in seq] == ["AddToSubtract", "add_attr"]


def test_contexts_nest():
    outer = transform.PassContext(opt_level=3)
    with outer:
        with transform.PassContext(opt_level=0) as inner:
            assert transform.PassContext.current() is inner
        assert transform.PassContext.current() is outer


def test_timing_and_print_instruments():
    timing = transform.PassTimingInstrument()
    stream = io.StringIO()
    printer = transform.PrintIRInstrument(passes=["AddToSubtract"], before=True, stream=stream)
    with transform.PassContext(opt_level=3, instruments=[timing, printer]):
        transform.Sequential([add_to_subtract, add_attr])(_module())
    names = [name for name, _ in timing.timings]
    assert names == ["AddToSubtract", "add_attr", "sequential"]
    table = timing.render()
    assert table.splitlines()[0].split() == ["pass", "ms", "calls"]
    assert "AddToSubtract" in table
    text = stream.getvalue()
    assert "IR before AddToSubtract" in text and "IR after AddToSubtract" in text
    assert "R.add" in text and "R.subtract" in text
    assert "add_attr" not in text


def test_instrument_can_skip_a_pass():
    class SkipAll(transform.PassInstrument):
        def should_run(self, mod, info):
            return info.name != "AddToSubtract"

    with transform.PassContext(opt_level=3, instruments=[SkipAll()]):
        assert _ops(add_to_subtract(_module()))[0] == "relax.add"


def test_pass_errors_name_the_pass():
    @transform.module_pass(name="Broken")
    def broken(mod, ctx):
        raise KeyError("inner")

    with pytest.raises(CompileError, match=r"pass 'Broken' failed: KeyError"):
        broken(_module())

    @transform.module_pass(name="ReturnsNone")
    def returns_none(mod, ctx):
        return None

    with pytest.raises(CompileError, match=r"'ReturnsNone' returned NoneType"):
        returns_none(_module())
    with pytest.raises(TypeError, match=r"expected an IRModule, got str"):
        add_attr("not a module")
    with pytest.raises(TypeError, match=r"item 1 is a int, not a Pass"):
        transform.Sequential([add_attr, 3])
    with pytest.raises(ValueError, match=r"opt_level must be an int in 0..4"):
        transform.PassContext(opt_level=9)
    with pytest.raises(TypeError, match=r"instruments\[0\] is a str"):
        transform.PassContext(instruments=["x"])


def test_register_and_get_pipeline():
    name = "test_only_pipeline"
    transform.register_pipeline(name, lambda target=None: transform.Sequential([add_attr]))
    try:
        assert name in transform.list_pipelines()
        assert transform.get_pipeline(name)(_module()).get_attr("seen") is True
        with pytest.raises(CompileError, match="already registered"):
            transform.register_pipeline(name, lambda target=None: add_attr)
        with pytest.raises(
            CompileError, match=r"unknown pipeline 'test_only_pipelin'.*did you mean"
        ):
            transform.get_pipeline("test_only_pipelin")
    finally:
        transform.pipeline._pipelines.pop(name, None)
    transform.register_pipeline("bad_pipeline", lambda target=None: 3)
    try:
        with pytest.raises(CompileError, match="returned int, not a Pass"):
            transform.get_pipeline("bad_pipeline")
    finally:
        transform.pipeline._pipelines.pop("bad_pipeline", None)


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="no attribute 'NoSuchPass'"):
        transform.NoSuchPass  # noqa: B018
