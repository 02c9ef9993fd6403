"""The lowering passes' output run through the VM (interpreter kernels, both exec modes).

Each test compiles with the default pipeline or with the lowering passes applied by hand
(then ``relax_pipeline=None``), runs the result and compares with numpy. An instrument counts
the storage allocations the VM actually performs, to check that memory planning reused them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import RelaxVMError
from relaxvm.ir import relax as rx
from relaxvm.script import from_source
from relaxvm.testing import interpreter_target, registered_target
from relaxvm.transform import (
    AttachGlobalSymbol,
    CallTIRRewrite,
    ComputePrimValue,
    KillAfterLastUse,
    LowerAllocTensor,
    LowerRuntimeBuiltin,
    RemovePurityChecking,
    Sequential,
    StaticPlanBlockMemory,
    ToNonDataflow,
    VMShapeLower,
)

HEADER = "from relaxvm.script import ir as I, relax as R, tir as T\n"


@pytest.fixture(autouse=True)
def _interp() -> Iterator[None]:
    with registered_target(interpreter_target()):
        yield


@pytest.fixture(params=("bytecode", "compiled"))
def exec_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def lower_by_hand() -> Sequential:
    """The lowering half of the default pipeline, without legalization or fusion."""
    return Sequential(
        [
            ToNonDataflow(),
            RemovePurityChecking(),
            CallTIRRewrite(),
            StaticPlanBlockMemory(),
            LowerAllocTensor(),
            KillAfterLastUse(),
            LowerRuntimeBuiltin(),
            ComputePrimValue(),
            VMShapeLower(),
            AttachGlobalSymbol(),
        ]
    )


def build(
    source: str, exec_mode: str, by_hand: bool = True
) -> tuple[relaxvm.VirtualMachine, rx.IRModule]:
    mod = from_source(HEADER + source)
    lowered = lower_by_hand()(mod) if by_hand else mod
    pipeline = None if by_hand else "default"
    ex = relaxvm.compile(lowered, "interp", relax_pipeline=pipeline, exec_mode=exec_mode)
    return relaxvm.VirtualMachine(ex, relaxvm.cpu()), lowered


def count_calls(vm: relaxvm.VirtualMachine, name: str) -> Callable[[], int]:
    """Install an instrument counting calls of builtin ``name``; returns the reader."""
    seen = {"n": 0}

    def instrument(func: Any, symbol: str, before: bool, ret: Any, *args: Any) -> None:
        if before and symbol == name:
            seen["n"] += 1

    vm.set_instrument(instrument)
    return lambda: seen["n"]


def op_count(mod: rx.IRModule, op_name: str, func: str = "main") -> int:
    return sum(
        1
        for block in mod[func].body.blocks
        for binding in block.bindings
        if isinstance(binding.value, rx.Call)
        and isinstance(binding.value.op, rx.Op)
        and binding.value.op.name == op_name
    )


KERNELS = """
    @T.prim_func
    def add_one(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i] + T.float32(1)

    @T.prim_func
    def double(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i] * T.float32(2)
"""

CHAIN = (
    """
@I.ir_module
class Chain:
"""
    + KERNELS
    + """
    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        with R.dataflow():
            a = R.call_tir(Chain.add_one, (x,), out_sinfo=R.Tensor((8,), "float32"))
            b = R.call_tir(Chain.double, (a,), out_sinfo=R.Tensor((8,), "float32"))
            c = R.call_tir(Chain.add_one, (b,), out_sinfo=R.Tensor((8,), "float32"))
            d = R.call_tir(Chain.double, (c,), out_sinfo=R.Tensor((8,), "float32"))
            e = R.call_tir(Chain.add_one, (d,), out_sinfo=R.Tensor((8,), "float32"))
            R.output(e)
        return e
"""
)


def test_planned_chain_runs_and_reuses_storage(exec_mode: str) -> None:
    vm, lowered = build(CHAIN, exec_mode)
    # a, b, c, d are intermediates: two storages alternate; e is returned (its own storage).
    assert op_count(lowered, "relax.vm.alloc_storage") == 3
    assert op_count(lowered, "relax.vm.alloc_tensor") == 5
    allocations = count_calls(vm, "vm.builtin.alloc_storage")
    x = np.arange(8, dtype="float32")
    expected = ((((x + 1) * 2) + 1) * 2) + 1
    for _ in range(2):  # twice: killed registers and reused storage leave the VM sound
        np.testing.assert_allclose(vm["main"](x).numpy(), expected)
    assert allocations() == 6


def test_default_pipeline_gives_the_same_result(exec_mode: str) -> None:
    vm, _ = build(CHAIN, exec_mode, by_hand=False)
    x = np.linspace(-1, 1, 8).astype("float32")
    np.testing.assert_allclose(vm["main"](x).numpy(), ((((x + 1) * 2) + 1) * 2) + 1)


def test_returned_alias_and_tuple_outputs_are_not_killed(exec_mode: str) -> None:
    source = (
        """
@I.ir_module
class Tup:
"""
        + KERNELS
        + """
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        a = R.call_tir(Tup.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
        b = a
        c = R.call_tir(Tup.double, (b,), out_sinfo=R.Tensor((4,), "float32"))
        t = (b, c)
        return (t, x)
"""
    )
    vm, lowered = build(source, exec_mode)
    assert op_count(lowered, "relax.vm.alloc_storage") == 2  # both escape: one storage each
    x = np.arange(4, dtype="float32")
    (first, second), same = vm["main"](x)
    np.testing.assert_allclose(first.numpy(), x + 1)
    np.testing.assert_allclose(second.numpy(), (x + 1) * 2)
    np.testing.assert_allclose(same.numpy(), x)


def test_symbolic_shapes_with_upper_bound_plan_fixed_storage(exec_mode: str) -> None:
    source = (
        """
@I.ir_module
class Dyn:
"""
        + KERNELS
        + """
    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"tir_var_upper_bound": {"n": 16}})
        a = R.call_tir(Dyn.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
        b = R.call_tir(Dyn.double, (a,), out_sinfo=R.Tensor((n,), "float32"))
        c = R.call_tir(Dyn.add_one, (b,), out_sinfo=R.Tensor((n,), "float32"))
        return c
"""
    )
    vm, lowered = build(source, exec_mode)
    sizes = [
        [int(v) for v in binding.value.args[0].values]
        for block in lowered["main"].body.blocks
        for binding in block.bindings
        if isinstance(binding.value, rx.Call)
        and isinstance(binding.value.op, rx.Op)
        and binding.value.op.name == "relax.vm.alloc_storage"
        and isinstance(binding.value.args[0], rx.ShapeExpr)
    ]
    assert [64] in sizes  # 16 float32 elements: the planned (bounded) storage
    for n in (1, 5, 16):
        x = np.arange(n, dtype="float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), (x + 1) * 2 + 1)
    # Far beyond the declared bound the planned storage is too small: a run-time error.
    # (Just past it may still fit: the pooled allocator rounds storage up to pages.)
    with pytest.raises(RelaxVMError, match="storage allocation failure"):
        vm["main"](np.zeros(5000, dtype="float32"))
    # The VM stays usable afterwards.
    np.testing.assert_allclose(vm["main"](np.ones(3, dtype="float32")).numpy(), [5.0] * 3)


def test_unbounded_symbolic_shapes_are_sized_at_run_time(exec_mode: str) -> None:
    source = (
        """
@I.ir_module
class Dyn:
"""
        + KERNELS
        + """
    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        a = R.call_tir(Dyn.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
        b = R.call_tir(Dyn.double, (a,), out_sinfo=R.Tensor((n,), "float32"))
        return b
"""
    )
    vm, lowered = build(source, exec_mode)
    assert op_count(lowered, "relax.vm.alloc_storage") == 2
    for n in (2, 33):
        x = np.arange(n, dtype="float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), (x + 1) * 2)


def test_call_tir_inplace_and_tir_vars(exec_mode: str) -> None:
    source = """
@I.ir_module
class Mod:
    @T.prim_func
    def add_scalar(a: T.handle, b: T.handle, m: T.int64):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i] + T.Cast("float32", m)

    @T.prim_func
    def scale_inplace(a: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        for i in range(n):
            A[i] = A[i] * T.float32(10)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        y = R.call_tir(Mod.add_scalar, (x,), out_sinfo=R.Tensor((n,), "float32"),
                       tir_vars=R.shape([n]))
        z = R.call_tir_inplace(Mod.scale_inplace, (y,), 0, out_sinfo=R.Tensor((n,), "float32"))
        return z
"""
    vm, lowered = build(source, exec_mode)
    text = lowered["main"].script()
    assert "vm.builtin.call_tir_dyn" in text
    x = np.arange(3, dtype="float32")
    np.testing.assert_allclose(vm["main"](x).numpy(), (x + 3) * 10)


def test_call_dps_packed_reaches_a_python_function(exec_mode: str) -> None:
    calls: list[int] = []

    def add_two(a: Any, out: Any) -> None:
        calls.append(1)
        out.copyfrom(a.numpy() + 2)  # destination passing: write into the given output

    relaxvm.register_func("test.lower_e2e.add_two", add_two, override=True)
    try:
        source = """
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.call_dps_packed("test.lower_e2e.add_two", (x,), out_sinfo=R.Tensor((4,), "float32"))
        z = R.call_dps_packed("test.lower_e2e.add_two", (y,), out_sinfo=R.Tensor((4,), "float32"))
        return z
"""
        vm, _ = build(source, exec_mode)
        x = np.arange(4, dtype="float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), x + 4)
        assert len(calls) == 2
    finally:
        relaxvm.remove_global_func("test.lower_e2e.add_two")


def test_reshape_shape_of_and_closures_lowered_to_builtins(exec_mode: str) -> None:
    source = (
        """
@I.ir_module
class Mod:
"""
        + KERNELS
        + """
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        flat = R.reshape(x, R.shape([6]))
        y = R.call_tir(Mod.add_one, (flat,), out_sinfo=R.Tensor((6,), "float32"))
        s = R.shape_of(y)
        back = R.reshape(y, R.shape([3, 2]))
        return (back, s)
"""
    )
    vm, lowered = build(source, exec_mode)
    text = lowered["main"].script()
    assert "vm.builtin.reshape" in text and "vm.builtin.shape_of" in text
    x = np.arange(6, dtype="float32").reshape(2, 3)
    back, shape = vm["main"](x)
    np.testing.assert_allclose(back.numpy(), (x.reshape(6) + 1).reshape(3, 2))
    assert tuple(shape) == (6,)


CLOSURE = (
    """
@I.ir_module
class Clo:
"""
    + KERNELS
    + """
    @R.function(private=True)
    def lifted(y: R.Tensor((4,), "float32"), x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        z = R.call_tir(Clo.add_one, (y,), out_sinfo=R.Tensor((4,), "float32"))
        w = R.call_tir(Clo.double, (z,), out_sinfo=R.Tensor((4,), "float32"))
        return w

    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((4,), "float32"):
        clo = R.make_closure(Clo.lifted, (x,))
        if c:
            a = R.call_tir(Clo.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
            r = R.invoke_closure(clo, (a,), sinfo_args=(R.Tensor((4,), "float32"),))
        else:
            r = R.call_tir(Clo.double, (x,), out_sinfo=R.Tensor((4,), "float32"))
        s = R.call_tir(Clo.add_one, (r,), out_sinfo=R.Tensor((4,), "float32"))
        return s
"""
)


def test_closures_and_branches_with_allocations_inside(exec_mode: str) -> None:
    vm, lowered = build(CLOSURE, exec_mode)
    text = lowered["main"].script()
    assert "vm.builtin.make_closure" in text and "vm.builtin.invoke_closure" in text
    x = np.arange(4, dtype="float32")
    np.testing.assert_allclose(vm["main"](x, np.array(True)).numpy(), (x + 2) * 2 + 1)
    np.testing.assert_allclose(vm["main"](x, np.array(False)).numpy(), x * 2 + 1)


@pytest.mark.parametrize("source", [CHAIN, CLOSURE], ids=["chain", "closure"])
def test_every_lowering_step_keeps_the_module_well_formed(source: str) -> None:
    mod = from_source(HEADER + source)
    for step in lower_by_hand():
        mod = step(mod)
        rx.well_formed(mod)  # raises WellFormedError naming the problem
