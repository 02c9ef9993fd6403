"""TVM's TIR forms beyond plain loops: block-level ``T.match_buffer``, ``T.decl_buffer``,
opaque ``T.handle`` parameters, ``T.Let`` and ``T.launch_thread``: parsing, printing back
(print -> parse -> structurally equal), running on the interpreter against numpy, errors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMTypeError
from relaxvm.ir.tir import (
    BlockRealize,
    Buffer,
    DeclBuffer,
    For,
    ForKind,
    Let,
    PrimFunc,
    assert_structural_equal,
    lower_blocks,
    run_prim_func,
)
from relaxvm.ir.tir import Var as TirVar
from relaxvm.registry.extensions import list_target_kinds
from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T
from relaxvm.testing import interpreter_target, registered_target

# Each 4x4 tile of A, viewed through a block-level match_buffer, is transposed into B.
TILES = """
@T.prim_func
def tiles(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for io, jo in T.grid(2, 2):
        with T.block("tile"):
            vi, vj = T.axis.remap("SS", [io, jo])
            T.reads(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])
            T.writes(B[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4])
            A_sub = T.match_buffer(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4))
            B_sub = T.match_buffer(B[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4), "float32")
            for x, y in T.grid(4, 4):
                B_sub[x, y] = A_sub[y, x] + T.float32(1)
"""

# A row sum through a 1-d view of one row (the leading region dimension has extent 1), and a
# view of that view in a nested block.
ROWS = """
@T.prim_func
def rows(A: T.Buffer((3, 6), "float32"), S: T.Buffer((3,), "float32")):
    for i in range(3):
        with T.block("row"):
            vi = T.axis.spatial(3, i)
            T.reads(A[vi, 0:6])
            T.writes(S[vi])
            row = T.match_buffer(A[vi, 0:6], (6,))
            S[vi] = T.float32(0)
            for h in range(2):
                with T.block("half"):
                    vh = T.axis.spatial(2, h)
                    T.reads(row[vh * 3:vh * 3 + 3])
                    T.writes(S[vi])
                    part = T.match_buffer(row[vh * 3:vh * 3 + 3], (3,))
                    for k in range(3):
                        S[vi] = S[vi] + part[k]
"""

# decl_buffer: a flat alias of a 2-d parameter, a same-shape alias of an allocation, and an
# allocating decl_buffer (no data).
DECL = """
@T.prim_func
def decl(A: T.Buffer((4, 6), "float32"), B: T.Buffer((24,), "float32")):
    A_flat = T.decl_buffer((24,), "float32", data=A.data)
    with T.decl_buffer((24,), "float32") as tmp:
        for i in range(24):
            tmp[i] = A_flat[i] * T.float32(2)
        tmp2 = T.decl_buffer((24,), "float32", data=tmp.data)
        for i in range(24):
            B[i] = tmp2[i] + T.float32(1)
"""

# An opaque handle bound by decl_buffer: the kernel takes an array for it.
OPAQUE_DECL = """
@T.prim_func
def shifted(a: T.handle, B: T.Buffer((4,), "float32")):
    A = T.decl_buffer((4,), "float32", data=a)
    for i in range(4):
        B[i] = A[i] + T.float32(1)
"""

LET = """
@T.prim_func
def let_poly(A: T.Buffer((5,), "float32"), B: T.Buffer((5,), "float32")):
    x = T.float32()
    for i in range(5):
        B[i] = T.Let(x * x + x, where={x: A[i] + T.float32(1)})
"""

LAUNCH = """
@T.prim_func
def launch(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.env_thread("threadIdx.x")
    T.launch_thread(tx, 32)
    B[bx * 32 + tx] = A[bx * 32 + tx] * T.float32(3)
"""

LAUNCH_WITH = """
@T.prim_func
def launch_with(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    with T.launch_thread("threadIdx.x", 8) as tx:
        B[tx] = A[tx] - T.float32(1)
"""


def _oracles() -> dict[str, tuple[str, Callable[..., np.ndarray], list[tuple[int, ...]], tuple]]:
    return {
        "tiles": (TILES, lambda a: _tiles(a) + 1, [(8, 8)], (8, 8)),
        "rows": (ROWS, lambda a: a.sum(axis=1), [(3, 6)], (3,)),
        "decl": (DECL, lambda a: a.ravel() * 2 + 1, [(4, 6)], (24,)),
        "opaque_decl": (OPAQUE_DECL, lambda a: a + 1, [(4,)], (4,)),
        "let": (LET, lambda a: (a + 1) * (a + 1) + (a + 1), [(5,)], (5,)),
        "launch": (LAUNCH, lambda a: a * 3, [(64,)], (64,)),
        "launch_with": (LAUNCH_WITH, lambda a: a - 1, [(8,)], (8,)),
    }


def _tiles(a: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    for i in range(2):
        for j in range(2):
            out[i * 4 : i * 4 + 4, j * 4 : j * 4 + 4] = a[i * 4 : i * 4 + 4, j * 4 : j * 4 + 4].T
    return out


def _parse(text: str) -> PrimFunc:
    func = from_source(text)
    assert isinstance(func, PrimFunc)
    return func


NAMES = list(_oracles())


@pytest.mark.parametrize("name", NAMES)
def test_print_round_trip(name: str) -> None:
    func = _parse(_oracles()[name][0])
    text = func.script()
    again = from_source(text)
    assert_structural_equal(func, again)
    assert again.script() == text


@pytest.mark.parametrize("name", NAMES)
def test_runs_on_the_interpreter(name: str) -> None:
    text, oracle, shapes, out_shape = _oracles()[name]
    func = _parse(text)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(shape).astype("float32") for shape in shapes]
    out = np.full(out_shape, 7.0, "float32")
    run_prim_func(func, *inputs, out)
    np.testing.assert_allclose(out, oracle(*inputs), rtol=1e-5, atol=1e-5)


def test_printed_forms_follow_tvm() -> None:
    tiles = _parse(TILES).script()
    assert (
        "A_sub = T.match_buffer(A[vi * T.int64(4):vi * T.int64(4) + T.int64(4), "
        "vj * T.int64(4):vj * T.int64(4) + T.int64(4)], (T.int64(4), T.int64(4)), "
        '"float32")' in tiles
    )
    decl = _parse(DECL).script()
    assert 'A_flat = T.decl_buffer((T.int64(24),), "float32", data=A.data)' in decl
    assert 'tmp2 = T.decl_buffer((T.int64(24),), "float32", data=tmp.data)' in decl
    # An allocating decl_buffer is an Allocate: it prints as the equivalent T.alloc_buffer.
    assert 'tmp = T.alloc_buffer((T.int64(24),), "float32")' in decl
    assert "data=a)" in _parse(OPAQUE_DECL).script()
    let = _parse(LET).script()
    assert "    x = T.float32()" in let
    assert "T.Let(x * x + x, where={x: A[i] + T.float32(1.0)})" in let
    launch = _parse(LAUNCH).script()
    assert 'for bx in T.thread_binding(T.int64(2), thread="blockIdx.x"):' in launch
    assert 'for tx in T.thread_binding(T.int64(32), thread="threadIdx.x"):' in launch


def test_nodes_and_lowering() -> None:
    tiles = _parse(TILES)
    realize = tiles.body.body.body  # type: ignore[attr-defined]
    assert isinstance(realize, BlockRealize)
    matches = realize.block.match_buffers
    assert [m.buffer.name for m in matches] == ["A_sub", "B_sub"]
    assert matches[0].source.buffer is tiles.buffer_map[tiles.params[0]]
    lowered = lower_blocks(tiles).script()
    assert "A_sub" not in lowered and "match_buffer" not in lowered
    assert "B[io * T.int64(4) + x, jo * T.int64(4) + y] = A[io * T.int64(4) + y" in lowered
    decl = _parse(DECL)
    assert isinstance(decl.body, DeclBuffer)
    assert "A[i // T.int64(6), i % T.int64(6)]" in lower_blocks(decl).script()
    opaque = lower_blocks(_parse(OPAQUE_DECL))
    # The decl_buffer over the handle becomes the parameter's buffer.
    assert opaque.buffer_map[opaque.params[0]].name == "A"
    let = _parse(LET)
    store = let.body.body  # type: ignore[attr-defined]
    assert isinstance(store.value, Let)
    assert "T.Let" not in lower_blocks(let).script()
    launch = _parse(LAUNCH)
    assert isinstance(launch.body, For) and launch.body.kind == ForKind.THREAD_BINDING
    assert launch.body.thread_binding == "blockIdx.x"


# ---- Relax --------------------------------------------------------------------------------
@I.ir_module
class CallShifted:
    @T.prim_func
    def shifted(a: T.handle, b: T.handle):
        A = T.decl_buffer((4,), "float32", data=a)
        B = T.match_buffer(b, (4,), "float32")
        for i in range(4):
            B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = CallShifted
        y = R.call_tir(cls.shifted, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y


@I.ir_module
class CallOpaque:
    @T.prim_func
    def opaque(a: T.handle, b: T.handle):
        B = T.match_buffer(b, (4,), "float32")
        for i in range(4):
            B[i] = T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = CallOpaque
        y = R.call_tir(cls.opaque, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y


def test_relax_calls_a_kernel_whose_handle_a_decl_buffer_binds() -> None:
    list_target_kinds()
    x = np.arange(4, dtype="float32")
    with registered_target(interpreter_target()):
        executable = relaxvm.compile(CallShifted, "interp")
        out = relaxvm.VirtualMachine(executable, relaxvm.cpu())["main"](x)
    np.testing.assert_allclose(out.numpy(), x + 1)


def test_relax_call_of_an_opaque_handle_kernel_names_the_parameter() -> None:
    list_target_kinds()
    with registered_target(interpreter_target()), pytest.raises(VMTypeError) as info:
        relaxvm.compile(CallOpaque, "interp")
    assert "prim_func 'opaque': parameter 'a' is an opaque T.handle" in str(info.value)
    assert "T.decl_buffer(shape, dtype, data=a)" in str(info.value)


# ---- errors -------------------------------------------------------------------------------
_HEAD = '@T.prim_func\ndef f(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):\n'
_IN_BLOCK = (
    '    for i in range(2):\n        with T.block("b"):\n            vi = T.axis.spatial(2, i)\n'
)


@pytest.mark.parametrize(
    ("body", "line", "column", "fragment"),
    [
        (
            _IN_BLOCK + "            S = T.match_buffer(A[vi * 4:vi * 4 + 4, 0:4], (4, 2))\n",
            6,
            17,
            "match_buffer 'S': the region of 'A' has extent 4 in dimension 1, but the buffer "
            "expects 2",
        ),
        (
            _IN_BLOCK + "            S = T.match_buffer(A[vi * 4:vi * 4 + 4, 0:4], (4, 4, 1))\n",
            6,
            17,
            "match_buffer 'S': a 3-d buffer cannot match a 2-d region of 'A'",
        ),
        (
            _IN_BLOCK + "            S = T.match_buffer(vi, (4,))\n",
            6,
            17,
            "T.match_buffer for 'S': expected a T.handle parameter or a buffer region",
        ),
        (
            _IN_BLOCK + '            S = T.match_buffer(A[vi, 0:4], (4,), "int32")\n',
            6,
            17,
            "match_buffer 'S': dtype int32 differs from 'A''s float32",
        ),
        (
            "    S = T.match_buffer(A[0, 0:4], (4,))\n",
            3,
            5,
            "T.match_buffer of a buffer region ('S') must be a statement directly inside a T.block",
        ),
        (
            '    S = T.decl_buffer((4,), "float32", data=B)\n',
            3,
            9,
            'data= must be a buffer\'s .data or a T.handle, got Buffer(B, (8,), "float32", '
            "global) (did you mean B.data?)",
        ),
        (
            '    tx = T.launch_thread("threadIdx.w", 4)\n',
            3,
            10,
            "T.launch_thread: unknown thread 'threadIdx.w'",
        ),
        (
            "    x = T.int64()\n    T.launch_thread(x, 4)\n",
            4,
            5,
            "T.launch_thread: 'x' is not a T.env_thread variable",
        ),
        (
            "    x = T.float32()\n    B[0] = T.Let(x, where={x: A[0, 0], B[1]: 1.0})\n",
            4,
            12,
            "T.Let: where= must be a dict with exactly one {var: value} entry",
        ),
    ],
)
def test_errors(
    script_error: Callable[..., ScriptError], body: str, line: int, column: int, fragment: str
) -> None:
    script_error(_HEAD + body, line, column, fragment)


def test_decl_buffer_of_unknown_memory_is_a_lowering_error() -> None:
    # `data` names a handle that no parameter or allocation in scope provides.
    func = _parse(
        "@T.prim_func\n"
        'def f(B: T.Buffer((4,), "float32")):\n'
        '    with T.decl_buffer((4,), "float32") as tmp:\n'
        "        tmp[0] = T.float32(1)\n"
        '    late = T.decl_buffer((4,), "float32", data=B.data)\n'
        "    late[0] = T.float32(2)\n"
    )
    lower_blocks(func)  # an alias of a parameter is fine
    orphan = Buffer("orphan", (4,), "float32", data=TirVar("nowhere", "handle"))
    bad = func.with_body(DeclBuffer(orphan, func.body))
    with pytest.raises(VMTypeError, match="decl_buffer 'orphan' declares memory 'nowhere'"):
        lower_blocks(bad)
