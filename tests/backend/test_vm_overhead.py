"""Per-call VM overhead cuts: reused make_shape results, inline static match_shape, and
recycled shape heaps. Each must keep results and errors exactly as before, in both modes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import relaxvm
from relaxvm.backend.vm_codegen import _Label
from relaxvm.backend.vm_peephole import reuse_make_shape
from relaxvm.errors import VMError
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
from relaxvm.ir.relax import op as R
from relaxvm.vm.bytecode import Arg, ArgKind

MS = "vm.builtin.make_shape"


def reg(i: int) -> Arg:
    return Arg(ArgKind.REGISTER, i)


def imm(i: int) -> Arg:
    return Arg(ArgKind.IMMEDIATE, i)


HEAP = reg(1)
SHAPE_ARGS = [HEAP, imm(1), imm(1), imm(0)]


def calls_of(instrs: list[tuple], name: str) -> list[tuple]:
    return [ins for ins in instrs if ins[0] == "call" and ins[1] == name]


# -- reuse_make_shape on hand-made instruction lists ----------------------------------------
def test_a_repeat_is_dropped_and_its_readers_renamed() -> None:
    instrs = [
        ("call", MS, list(SHAPE_ARGS), reg(2)),
        ("call", "use", [reg(2)], reg(3)),
        ("call", MS, list(SHAPE_ARGS), reg(4)),
        ("call", "use", [reg(4)], reg(5)),
        ("ret", reg(4)),
    ]
    out = reuse_make_shape(instrs)
    assert len(calls_of(out, MS)) == 1
    assert out[2] == ("call", "use", [reg(2)], reg(5))
    assert out[3] == ("ret", reg(2))


def test_different_arguments_are_kept() -> None:
    instrs = [
        ("call", MS, [HEAP, imm(1), imm(1), imm(0)], reg(2)),
        ("call", MS, [HEAP, imm(1), imm(1), imm(1)], reg(3)),
        ("ret", reg(3)),
    ]
    assert reuse_make_shape(instrs) == instrs


def test_a_call_given_the_heap_ends_reuse() -> None:
    instrs = [
        ("call", MS, list(SHAPE_ARGS), reg(2)),
        ("call", "shape_func", [HEAP], reg(3)),  # may write the heap slot
        ("call", MS, list(SHAPE_ARGS), reg(4)),
        ("ret", reg(4)),
    ]
    assert len(calls_of(reuse_make_shape(instrs), MS)) == 2


def test_a_register_written_twice_is_never_shared() -> None:
    instrs = [
        ("call", MS, list(SHAPE_ARGS), reg(2)),
        ("call", "vm.builtin.null_value", [], reg(2)),  # a kill of the first result
        ("call", MS, list(SHAPE_ARGS), reg(4)),
        ("ret", reg(4)),
    ]
    assert len(calls_of(reuse_make_shape(instrs), MS)) == 2


def test_no_reuse_across_a_jump_target_and_labels_move() -> None:
    else_label, end_label = _Label(), _Label()
    instrs = [
        ("call", MS, list(SHAPE_ARGS), reg(2)),
        ("call", MS, list(SHAPE_ARGS), reg(3)),  # dropped: same stretch
        ("if", reg(0), else_label),
        ("call", MS, list(SHAPE_ARGS), reg(4)),  # kept: after an If
        ("goto", end_label),
        ("call", MS, list(SHAPE_ARGS), reg(5)),  # kept: a jump target
        ("ret", reg(3)),
    ]
    else_label.pc, end_label.pc = 5, 6
    out = reuse_make_shape(instrs)
    assert len(calls_of(out, MS)) == 3
    assert (else_label.pc, end_label.pc) == (4, 5)
    assert out[else_label.pc][3] == reg(5)
    assert out[end_label.pc] == ("ret", reg(2))


# -- end to end ------------------------------------------------------------------------------
def mlp(width: int) -> relaxvm.ir.relax.IRModule:
    n = SymVar("n", "int64")
    x = Var("x", TensorStructInfo((n, width), "float32"))
    params = [Var(f"w{i}", TensorStructInfo((width, width), "float32")) for i in range(3)]
    bb = BlockBuilder()
    with bb.function("main", [x, *params]):
        with bb.dataflow():
            h = x
            for w in params:
                h = bb.emit(R.nn.relu(R.matmul(h, w)))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


@pytest.fixture
def built(interp: str, exec_mode: str) -> relaxvm.VirtualMachine:
    ex = relaxvm.compile(mlp(4), target=interp, exec_mode=exec_mode)
    return relaxvm.VirtualMachine(ex, relaxvm.cpu())


def weights() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal((4, 4)).astype("float32") for _ in range(3)]


def test_shapes_are_made_once_per_distinct_shape(built: relaxvm.VirtualMachine) -> None:
    text = built.executable.as_text()
    # One make_shape for the byte count and one for the (n, 4) shape, not one per layer.
    assert len(re.findall(r"call +vm\.builtin\.make_shape", text)) == 2


def test_results_match_numpy_for_several_batches(built: relaxvm.VirtualMachine) -> None:
    ws = weights()
    for batch in (1, 3, 1):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype("float32")
        expected = x
        for w in ws:
            expected = np.maximum(expected @ w, 0)
        got = built["main"](x, *ws).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_wrong_static_dimension_keeps_its_error(built: relaxvm.VirtualMachine) -> None:
    ws = weights()
    ws[1] = np.zeros((4, 3), "float32")
    with pytest.raises(VMError, match=r"shape\[1\] mismatch to specified constant: expected 4, "):
        built["main"](np.zeros((2, 4), "float32"), *ws)


def test_a_wrong_kind_of_value_keeps_its_error(built: relaxvm.VirtualMachine) -> None:
    ws = weights()
    with pytest.raises(relaxvm.errors.RelaxVMError) as info:
        built["main"](np.zeros((2, 4), "float32"), ws[0], relaxvm.runtime.Shape((4, 4)), ws[2])
    assert "Tensor" in str(info.value)


def test_shape_heaps_are_recycled_between_calls(built: relaxvm.VirtualMachine) -> None:
    ws = [relaxvm.tensor(w) for w in weights()]
    x = relaxvm.tensor(np.ones((2, 4), "float32"))
    built["main"](x, *ws)
    stats = built.allocators[-1].stats
    before = stats.allocations
    for _ in range(5):
        built["main"](x, *ws)
    # Three planned storages per call; the heap comes back from the allocator's spares.
    assert stats.allocations - before == 5 * 3


def test_a_heap_still_referenced_is_not_handed_out_again(built: relaxvm.VirtualMachine) -> None:
    from relaxvm.registry import functions as registry

    alloc_shape_heap = registry.get_global_func("vm.builtin.alloc_shape_heap")
    vm = built
    first = alloc_shape_heap(vm, 3)
    second = alloc_shape_heap(vm, 3)
    assert first is not second
    first_id = id(first)
    del first
    third = alloc_shape_heap(vm, 3)
    assert id(third) == first_id and third is not second


def test_a_wrong_dtype_or_ndim_keeps_its_error(built: relaxvm.VirtualMachine) -> None:
    ws = weights()
    x = np.zeros((2, 4), "float32")
    with pytest.raises(ValueError, match=r"expect Tensor with dtype float32 but get float64"):
        built["main"](x, ws[0], ws[1].astype("float64"), ws[2])
    with pytest.raises(ValueError, match=r"expect Tensor with ndim 2 but get 3"):
        built["main"](x, ws[0], ws[1], ws[2][None])


# -- the inline fast paths against their builtins, on hand-written bytecode ------------------
def checks_executable(exec_mode: str) -> relaxvm.vm.executable.executable.Executable:
    """main(x, storage, shape): check x is a 2-d float32 (4, 2) tensor, then view storage."""
    from relaxvm import ExecBuilder
    from relaxvm.runtime import DataType

    f32 = DataType("float32")
    ib = ExecBuilder()
    with ib.function("main", num_inputs=3, param_names=["x", "storage", "shape"]):
        ib.emit_call("vm.builtin.check_tensor_info", args=[ib.r(0), 2, f32, "ctx: "], dst=ib.r(3))
        ib.emit_call(
            "vm.builtin.match_shape",
            args=[ib.r(0), ib.void_arg(), 2, 0, 4, 0, 2, "ctx: "],
            dst=ib.r(4),
        )
        ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(1), 8, ib.r(2), f32], dst=ib.r(5))
        ib.emit_ret(ib.r(5))
    ex = ib.get()
    ex.exec_mode = exec_mode
    return ex


def test_inline_checks_and_views_match_the_builtins(exec_mode: str) -> None:
    from relaxvm.errors import VMTypeError, VMValueError
    from relaxvm.runtime import Shape

    vm = relaxvm.VirtualMachine(checks_executable(exec_mode), relaxvm.cpu())
    main = vm["main"]
    x = relaxvm.tensor(np.zeros((4, 2), "float32"))
    storage = relaxvm.runtime.get_allocator(relaxvm.cpu()).alloc(64)
    view = main(x, storage, Shape((2, 3)))
    assert view.shape == (2, 3) and view.byte_offset == 8 and view.storage is storage
    with pytest.raises(VMValueError, match=r"storage allocation failure, attempted to allo"):
        main(x, storage, Shape((32, 32)))
    with pytest.raises(VMTypeError, match=r"alloc_tensor: shape must be a Shape, got str"):
        main(x, storage, "(2, 3)")
    with pytest.raises(VMValueError, match=r"^ctx: expect Tensor with dtype float32 but get int32"):
        main(relaxvm.tensor(np.zeros((4, 2), "int32")), storage, Shape((2,)))
    with pytest.raises(VMTypeError, match=r"^ctx: expect a Tensor but get"):
        main(Shape((4, 2)), storage, Shape((2,)))
    with pytest.raises(VMError, match=r"^ctx: match_cast error, shape\[0\] mismatch to specified"):
        main(relaxvm.tensor(np.zeros((3, 2), "float32")), storage, Shape((2,)))
