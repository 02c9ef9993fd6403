"""The direct kernel API refuses arguments that would corrupt memory or give wrong results.

Read-only outputs (even over immutable ``bytes``), byte-swapped outputs and outputs that
overlap another argument of a ``noalias`` kernel raise ``VMValueError`` naming the kernel and
the parameter; byte-swapped inputs are converted; inputs may overlap each other. Every case
is tried on the Tensor fast path, the general path and the slow path where it applies.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm_llvm
from relaxvm.errors import VMValueError
from relaxvm.ir import Var
from relaxvm.ir.tir import Buffer, BufferLoad, BufferStore, For, ForKind, PrimFunc, te
from relaxvm.runtime import tensor
from relaxvm_llvm.signature import KernelSignature


@pytest.fixture(scope="module")
def module() -> Any:
    n = Var("n")
    a = te.placeholder((n,), "float32", name="A")
    b = te.placeholder((n,), "float32", name="B")
    c = te.compute((n,), lambda i: a[i] + b[i], name="C")
    a4 = te.placeholder((4,), "float32", name="A")
    b4 = te.placeholder((4,), "float32", name="B")
    c4 = te.compute((4,), lambda i: a4[i] * b4[i], name="C")
    # An in-place kernel (X += Y) whose only buffers are both read and one written, and the
    # same with tir.noalias off, where overlapping arguments are allowed.
    x_buf, y_buf = Buffer("X", (4,), "float32"), Buffer("Y", (4,), "float32")
    i = Var("i")
    body = For(
        i,
        0,
        4,
        ForKind.SERIAL,
        BufferStore(x_buf, BufferLoad(x_buf, i) + BufferLoad(y_buf, i), [i]),
    )
    accumulate = PrimFunc([x_buf, y_buf], body, attrs={"global_symbol": "acc"})
    aliasing = PrimFunc(
        [x_buf, y_buf], body, attrs={"global_symbol": "acc_alias", "tir.noalias": False}
    )
    return relaxvm_llvm.build(
        {
            "add": te.create_prim_func([a, b, c], name="add"),
            "mul4": te.create_prim_func([a4, b4, c4], name="mul4"),
            "acc": accumulate,
            "acc_alias": aliasing,
        }
    )


KERNELS = ["add", "mul4"]


def _expected(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b if name == "add" else a * b


def test_signature_records_outputs_and_noalias(module: Any) -> None:
    sig = module["add"].signature
    assert [p.written for p in sig.params] == [False, False, True]
    assert sig.noalias
    assert [p.written for p in module["acc"].signature.params] == [True, False]
    assert not module["acc_alias"].signature.noalias
    again = KernelSignature.from_json(sig.to_json())
    assert again == sig
    # Data from before these fields existed reads conservatively: written, noalias.
    old = sig.to_json()
    del old["noalias"]
    for param in old["params"]:
        del param["written"]
    legacy = KernelSignature.from_json(old)
    assert legacy.noalias and all(p.written for p in legacy.params)
    bad = sig.to_json()
    bad["params"][0]["written"] = "yes"
    with pytest.raises(TypeError, match="written must be a bool"):
        KernelSignature.from_json(bad)


@pytest.mark.parametrize("name", KERNELS)
def test_read_only_outputs_are_refused(module: Any, name: str) -> None:
    x = np.arange(4, dtype="float32")
    frozen = np.frombuffer(bytes(16), "float32")  # immutable memory: a write would corrupt it
    with pytest.raises(
        VMValueError, match=rf"kernel '{name}': parameter 'C' is written .* read-only"
    ):
        module[name](x, x, frozen)
    assert bytes(frozen.tobytes()) == bytes(16)
    locked = np.zeros(4, "float32")
    locked.flags.writeable = False
    with pytest.raises(VMValueError, match="read-only"):
        module[name](tensor(x), tensor(x), locked)  # mixed arguments
    with pytest.raises(VMValueError, match="read-only"):
        module[name].fast_call(x, x, locked)
    assert not locked.any()


@pytest.mark.parametrize("name", KERNELS)
def test_read_only_inputs_are_fine(module: Any, name: str) -> None:
    x = np.frombuffer(np.arange(4, dtype="float32").tobytes(), "float32")
    out = np.zeros(4, "float32")
    module[name](x, x, out)
    np.testing.assert_array_equal(out, _expected(name, x, x))


@pytest.mark.parametrize("name", KERNELS)
def test_byte_swapped_inputs_are_converted(module: Any, name: str) -> None:
    a = np.arange(4, dtype="float32")
    b = np.array([1.5, -2.0, 3.25, 8.0], "float32")
    swapped = b.astype(b.dtype.newbyteorder("S"))
    assert not swapped.dtype.isnative
    out = np.zeros(4, "float32")
    module[name](a, swapped, out)
    np.testing.assert_array_equal(out, _expected(name, a, b))
    out[:] = 0
    module[name](swapped[::-1][::-1], tensor(a), out)  # a view, mixed with a Tensor
    np.testing.assert_array_equal(out, _expected(name, b, a))


@pytest.mark.parametrize("name", KERNELS)
def test_byte_swapped_outputs_are_refused(module: Any, name: str) -> None:
    a = np.arange(4, dtype="float32")
    out = np.zeros(4, np.dtype("float32").newbyteorder("S"))
    with pytest.raises(VMValueError, match=rf"'{name}': parameter 'C' .* non-native byte order"):
        module[name](a, a, out)
    assert not out.any()


@pytest.mark.parametrize("name", KERNELS)
def test_output_overlapping_an_input_is_refused(module: Any, name: str) -> None:
    buf = np.arange(12, dtype="float32")
    pattern = rf"'{name}': output parameter 'C' overlaps parameter 'A'"
    with pytest.raises(VMValueError, match=pattern):
        module[name](buf[:4], buf[4:8], buf[:4])  # exactly aliased
    with pytest.raises(VMValueError, match=pattern):
        module[name](buf[:4], buf[8:], buf[2:6])  # partly overlapping
    with pytest.raises(VMValueError, match="overlaps parameter 'B'"):
        module[name](buf[8:], buf[:4], buf[1:5])
    np.testing.assert_array_equal(buf, np.arange(12))


@pytest.mark.parametrize("name", KERNELS)
def test_overlapping_tensors_are_refused_on_the_fast_path(module: Any, name: str) -> None:
    whole = tensor(np.arange(12, dtype="float32"))
    a, c = whole.view((4,)), whole.view((4,), relative_byte_offset=8)
    b = tensor(np.ones(4, "float32"))
    for call in (module[name], module[name].fast_call):
        with pytest.raises(VMValueError, match="output parameter 'C' overlaps parameter 'A'"):
            call(a, b, c)
        with pytest.raises(VMValueError, match="overlaps"):
            call(a, b, a)
    np.testing.assert_array_equal(whole.numpy(), np.arange(12))
    # A numpy view of a Tensor's memory counts too.
    with pytest.raises(VMValueError, match="overlaps"):
        module[name](a, b, whole.host_array()[2:6])


@pytest.mark.parametrize("name", KERNELS)
def test_inputs_may_overlap_and_disjoint_views_are_fine(module: Any, name: str) -> None:
    whole = tensor(np.arange(12, dtype="float32"))
    a = whole.view((4,))
    b = whole.view((4,), relative_byte_offset=4)  # overlaps a: both are inputs
    c = whole.view((4,), relative_byte_offset=32)  # the last four elements
    module[name].fast_call(a, b, c)
    np.testing.assert_array_equal(c.numpy(), _expected(name, np.arange(4.0), np.arange(1.0, 5)))
    buf = np.arange(12, dtype="float32")
    module[name](buf[:4], buf[:4], buf[4:8])  # the same array twice as input
    np.testing.assert_array_equal(buf[4:8], _expected(name, np.arange(4.0), np.arange(4.0)))


def test_interleaved_strided_views_do_not_overlap(module: Any) -> None:
    """Spans that interleave share no element: not an overlap (asked of numpy exactly).
    The kernel needs contiguous arguments, so this is checked through the helper."""
    from relaxvm_llvm.argcheck import overlaps

    buf = np.zeros(8, "float32")
    assert not overlaps(buf[::2], buf[1::2])
    assert overlaps(buf[::2], buf[2::2])
    assert not overlaps(buf[:0], buf)  # empty


def test_in_place_kernel_and_aliasing_opt_out(module: Any) -> None:
    x = np.arange(4, dtype="float32")
    y = np.ones(4, "float32")
    module["acc"](x, y)
    np.testing.assert_array_equal(x, np.arange(4) + 1)
    with pytest.raises(VMValueError, match="'acc': output parameter 'X' overlaps parameter 'Y'"):
        module["acc"](x, x)
    with pytest.raises(VMValueError, match="read-only"):
        module["acc"](np.frombuffer(bytes(16), "float32"), y)
    # tir.noalias=False: the kernel was compiled for aliasing arguments, so they are accepted.
    module["acc_alias"](x, x)
    np.testing.assert_array_equal(x, (np.arange(4) + 1) * 2)


def test_empty_arguments_never_overlap(module: Any) -> None:
    empty = np.zeros(0, "float32")
    module["add"](empty, empty, empty)
    module["add"].fast_call(tensor(empty), tensor(empty), tensor(empty))


@pytest.mark.parametrize("name", KERNELS)
def test_two_storages_over_one_block_are_refused_on_the_fast_path(module: Any, name: str) -> None:
    # vm.builtin.ensure_zero_offset views the same memory through a second Storage object:
    # the Tensor path compares addresses, not Storage identity.
    from relaxvm.registry import get_global_func

    whole = tensor(np.arange(32, dtype="float32"))
    aligned = get_global_func("vm.builtin.ensure_zero_offset")(
        whole.view((4,), relative_byte_offset=64)
    )
    assert aligned.storage is not whole.storage and aligned.byte_offset == 0
    a = whole.view((4,), relative_byte_offset=64)  # the same four elements, other Storage
    b = tensor(np.ones(4, "float32"))
    with pytest.raises(VMValueError, match="output parameter 'C' overlaps parameter 'A'"):
        module[name].fast_call(a, b, aligned)
    np.testing.assert_array_equal(whole.numpy(), np.arange(32))
