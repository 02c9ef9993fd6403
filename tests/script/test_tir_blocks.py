"""TIR block form in the script: parsing TVM's block syntax, printing it back, running it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir.tir import (
    Block,
    BlockRealize,
    IterVarType,
    PrimFunc,
    assert_structural_equal,
    lower_blocks,
    run_prim_func,
)
from relaxvm.registry.extensions import list_target_kinds
from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T
from relaxvm.testing import interpreter_target, registered_target

ADD = """
@T.prim_func
def add(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"global_symbol": "add", "tir.noalias": True})
    A = T.match_buffer(a, (128, 128), "float32")
    B = T.match_buffer(b, (128, 128), "float32")
    C = T.match_buffer(c, (128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj], B[vi, vj])
            T.writes(C[vi, vj])
            C[vi, vj] = A[vi, vj] + B[vi, vj]
"""

MATMUL = """
@T.prim_func
def matmul(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (16, 8), "float32")
    B = T.match_buffer(b, (8, 12), "float32")
    C = T.match_buffer(c, (16, 12), "float32")
    for i, j, k in T.grid(16, 12, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""

# Root block, a split loop with T.where, explicit axes, a region slice, block-local scratch.
ROOT = """
@T.prim_func
def scale_shift(A: T.Buffer((10,), "float32"), C: T.Buffer((10,), "float32")):
    with T.block("root"):
        T.reads()
        T.writes()
        S = T.alloc_buffer((10,), "float32")
        for io, ii in T.grid(3, 4):
            with T.block("S"):
                v = T.axis.spatial(10, io * 4 + ii)
                T.where(io * 4 + ii < 10)
                T.reads(A[v])
                T.writes(S[v])
                S[v] = A[v] * 2.0
        for i in range(10):
            with T.block("C"):
                vi = T.axis.S(10, i)
                T.reads([S[0:10]])
                T.writes(C[vi])
                tmp = T.alloc_buffer((1,), "float32", scope="local")
                tmp[0] = S[vi] + 1.0
                C[vi] = tmp[0]
"""

# A row sum with the reduction axis declared explicitly and an offset domain.
ROWSUM = """
@T.prim_func
def rowsum(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        for k in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                vk = T.axis.reduce((2, 6), k + 2)
                T.reads(A[vi, 2:6])
                T.writes(B[vi])
                T.block_attr({"note": "tail"})
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
"""


def _interp() -> Any:
    # Plugins load before the snapshot that registered_target restores, so llvm stays.
    list_target_kinds()
    return registered_target(interpreter_target())


def _parse(text: str) -> PrimFunc:
    func = from_source(text)
    assert isinstance(func, PrimFunc)
    return func


def _oracles() -> dict[str, tuple[str, Callable[..., list[np.ndarray]], list[tuple[int, ...]]]]:
    return {
        "add": (ADD, lambda a, b: [a + b], [(128, 128), (128, 128)]),
        "matmul": (MATMUL, lambda a, b: [a @ b], [(16, 8), (8, 12)]),
        "scale_shift": (ROOT, lambda a: [a * 2 + 1], [(10,)]),
        "rowsum": (ROWSUM, lambda a: [a[:, 2:].sum(axis=1)], [(4, 6)]),
    }


def _inputs(shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype("float32") for shape in shapes]


def _outputs(func: PrimFunc, count: int) -> list[np.ndarray]:
    params = func.params[len(func.params) - count :]
    # Garbage in the outputs: the init of a reduction must overwrite it.
    return [np.full([int(d) for d in func.buffer_map[p].shape], 7.0, "float32") for p in params]


def test_add_parses_to_a_block_realize() -> None:
    func = _parse(ADD)
    loop = func.body
    realize = loop.body.body  # type: ignore[attr-defined]
    assert isinstance(realize, BlockRealize)
    block = realize.block
    assert block.name_hint == "C"
    assert [iv.var.name for iv in block.iter_vars] == ["vi", "vj"]
    assert all(iv.iter_type == IterVarType.DATA_PAR for iv in block.iter_vars)
    assert [int(iv.dom.extent) for iv in block.iter_vars] == [128, 128]
    assert realize.iter_values[0] is loop.loop_var  # type: ignore[attr-defined]
    assert [r.buffer.name for r in block.reads] == ["A", "B"]
    assert [r.buffer.name for r in block.writes] == ["C"]
    assert func.attrs["tir.noalias"] is True


def test_matmul_has_a_reduction_axis_and_init() -> None:
    block = _parse(MATMUL).body.body.body.body.block  # type: ignore[attr-defined]
    assert isinstance(block, Block)
    kinds = [iv.iter_type for iv in block.iter_vars]
    assert kinds == [IterVarType.DATA_PAR, IterVarType.DATA_PAR, IterVarType.COMM_REDUCE]
    assert block.init is not None
    assert "T.float32(0.0)" in str(block.init)


@pytest.mark.parametrize("name", ["add", "matmul", "scale_shift", "rowsum"])
def test_print_round_trip(name: str) -> None:
    func = _parse(_oracles()[name][0])
    text = func.script()
    assert "with T.block(" in text and "T.reads(" in text and "T.writes(" in text
    assert_structural_equal(func, from_source(text))


def test_printed_form_matches_tvm() -> None:
    text = _parse(MATMUL).script()
    assert 'vi, vj, vk = T.axis.remap("SSR", [i, j, k])' in text
    assert "T.reads(A[vi, vk], B[vk, vj])" in text
    assert "with T.init():" in text
    root = _parse(ROOT).script()
    assert "v = T.axis.spatial(T.int64(10), io * T.int64(4) + ii)" in root
    assert "T.where(io * T.int64(4) + ii < T.int64(10))" in root
    assert "T.reads(S[T.int64(0):T.int64(10)])" in root
    assert 'tmp = T.alloc_buffer((T.int64(1),), "float32", scope="local")' in root
    # A lone loop-bound axis prints as T.axis.spatial, as TVM does.
    assert "vi = T.axis.spatial(T.int64(10), i)" in root
    rowsum = _parse(ROWSUM).script()
    assert "vk = T.axis.reduce((T.int64(2), T.int64(6)), k + T.int64(2))" in rowsum
    assert 'T.block_attr({"note": "tail"})' in rowsum


@pytest.mark.parametrize("name", ["add", "matmul", "scale_shift", "rowsum"])
def test_runs_on_the_interpreter(name: str) -> None:
    text, oracle, shapes = _oracles()[name]
    func = _parse(text)
    inputs = _inputs(shapes)
    expected = oracle(*inputs)
    outputs = _outputs(func, len(expected))
    run_prim_func(func, *inputs, *outputs)
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["add", "matmul", "scale_shift", "rowsum"])
def test_runs_on_llvm_after_lowering(name: str) -> None:
    relaxvm_llvm = pytest.importorskip("relaxvm_llvm")
    text, oracle, shapes = _oracles()[name]
    func = _parse(text)
    module = relaxvm_llvm.build(lower_blocks(func))
    inputs = _inputs(shapes)
    expected = oracle(*inputs)
    outputs = _outputs(func, len(expected))
    module[func.name](*inputs, *outputs)
    for got, want in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@I.ir_module
class CallMatmul:
    @T.prim_func
    def matmul(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (16, 8), "float32")
        B = T.match_buffer(b, (8, 12), "float32")
        C = T.match_buffer(c, (16, 12), "float32")
        for i, j, k in T.grid(16, 12, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @R.function
    def main(x: R.Tensor((16, 8), "float32"), y: R.Tensor((8, 12), "float32")):
        cls = CallMatmul
        z = R.call_tir(cls.matmul, (x, y), out_sinfo=R.Tensor((16, 12), "float32"))
        return z


@pytest.mark.parametrize("target", ["interp", "llvm"])
def test_relax_build_runs_a_block_kernel(target: str) -> None:
    if target == "llvm":
        pytest.importorskip("relaxvm_llvm")
    a, b = _inputs([(16, 8), (8, 12)])
    # lower_blocks on the module: the llvm target does not lower blocks itself yet.
    mod = lower_blocks(CallMatmul)
    assert mod is not CallMatmul
    if target == "llvm":
        executable = relaxvm.compile(mod, target)
    else:
        with _interp():
            executable = relaxvm.compile(mod, target)
    out = relaxvm.VirtualMachine(executable, relaxvm.cpu())["main"](a, b)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_interp_target_lowers_blocks_itself() -> None:
    a, b = _inputs([(16, 8), (8, 12)])
    with _interp():
        executable = relaxvm.compile(CallMatmul, "interp")
        out = relaxvm.VirtualMachine(executable, relaxvm.cpu())["main"](a, b)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5, atol=1e-5)


# ---- errors ---------------------------------------------------------------------------------
def _body(*lines: str) -> str:
    head = [
        "@T.prim_func",
        'def f(A: T.Buffer((4,), "float32"), k: T.int64):',
    ]
    return "\n".join(head + ["    " + line for line in lines]) + "\n"


@pytest.mark.parametrize(
    ("lines", "line", "column", "fragment"),
    [
        (["T.reads(A[0])"], 3, 5, "T.reads may only appear directly inside a T.block"),
        (["T.where(k < 2)"], 3, 5, "T.where may only appear directly inside a T.block"),
        (
            ["with T.init():", "    A[0] = 1.0"],
            3,
            5,
            "`with T.init():` may only appear directly inside a T.block",
        ),
        (
            ['with T.block("b"):', '    vk = T.axis.remap("S", [k])', "    A[0] = 1.0"],
            4,
            14,
            "the binding of 'vk' must be a loop variable of an enclosing loop",
        ),
        (
            ["for i in range(4):", '    with T.block("b"):', '        vi = T.axis.remap("X", [i])'],
            5,
            18,
            "unknown iteration kind 'X'",
        ),
        (
            ["for i in range(4):", '    with T.block("b"):', "        T.reads(A[0:2, 1])"],
            5,
            21,
            "region of 'A' has 2 indices for 1 dimensions",
        ),
        (
            [
                "for i in range(4):",
                '    with T.block("b"):',
                "        vi = T.axis.spatial(4, i)",
                "        with T.init():",
                "            A[vi] = 0.0",
                "        with T.init():",
                "            A[vi] = 0.0",
            ],
            8,
            13,
            "a block has at most one `with T.init():`",
        ),
    ],
)
def test_block_errors(
    script_error: Callable[..., ScriptError],
    lines: list[str],
    line: int,
    column: int,
    fragment: str,
) -> None:
    script_error(_body(*lines), line, column, fragment)


def test_unmatched_handle_is_opaque_and_cannot_run() -> None:
    # TVM accepts a T.handle that no buffer binds (an opaque pointer); running it cannot work.
    text = '@T.prim_func\ndef f(a: T.handle, B: T.Buffer((4,), "float32")):\n    B[0] = 1.0\n'
    func = _parse(text)
    assert "a: T.handle" in func.script()
    with pytest.raises(relaxvm.errors.VMTypeError, match="parameter 'a' is an opaque T.handle"):
        run_prim_func(func, 0, np.zeros(4, "float32"))


def test_block_parses_in_a_decorated_function() -> None:
    @T.prim_func
    def copy(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    a = np.arange(4, dtype="int32")
    b = np.zeros(4, "int32")
    copy(a, b)
    np.testing.assert_array_equal(b, a)
    block = copy.body.body.block  # type: ignore[attr-defined]
    # Completed from the code, as TVM's parser does for a block without T.reads/T.writes.
    (vi,) = (iv.var for iv in block.iter_vars)
    assert [(r.buffer.name, [x.min for x in r.region]) for r in block.reads] == [("A", [vi])]
    assert [(r.buffer.name, [x.min for x in r.region]) for r in block.writes] == [("B", [vi])]
