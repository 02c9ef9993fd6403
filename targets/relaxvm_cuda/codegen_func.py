"""One GPU kernel's body: the LLVM CPU generator with GPU rules for loops, memory and math.

:class:`PTXFunctionCodegen` reuses :class:`relaxvm_llvm.codegen_stmt.FunctionCodegen` (loads,
stores, arithmetic, casts, serial loops) and changes what differs on a GPU:

* a loop bound to ``blockIdx``/``threadIdx`` reads the special register of its axis (plus
  the loop's ``min``), guarded when its extent may be below the launch extent; ``vthread``,
  ``parallel`` and ``vectorized`` loops run serially in the thread (no CPU vector code),
  except the injective schedule's vector loops, whose aligned accesses become 128-bit
  loads and stores (:mod:`.codegen_vector`);
* ``shared`` scratch is a static ``addrspace(3)`` array, ``local`` scratch a stack slot,
  ``global`` scratch a static ``addrspace(1)`` array in kernels launched as one thread, and
  per thread (a stack slot up to :data:`LOCAL_LIMIT_BYTES`, else the heap) when allocated
  inside the thread-bound loops of other kernels; all need a constant size, except
  ``global`` scratch of one thread, which may have a symbolic one: it comes from the device heap
  (PTX's ``malloc``/``free`` system calls) when the Allocate runs, and a failed allocation
  records :data:`HEAP_FLAG` and the byte count in the error slot and leaves the thread;
* ``T.tvm_storage_sync()`` is ``bar.sync 0``; ``T.shfl_down(v, d)`` is
  ``llvm.nvvm.shfl.sync.down.{f32,i32}`` over the full warp;
* math goes through :mod:`.codegen_math` and every LLVM intrinsic through its whitelist;
  float ``Mod``/``FloorMod`` through :mod:`.codegen_fmod` (NVPTX's ``frem`` is inexact);
* ``T.check_index`` out of range records the op, axis, index and extent in the module's
  error slot (:data:`ERROR_SYMBOL`, first failure wins) and leaves the thread.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from relaxvm.ir import FloorMod, IntImm, Mod, PrimExpr
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import Allocate, Buffer, BufferLoad, Call, Evaluate, For, ForKind, Stmt
from relaxvm.ir.tir.intrin import CheckIndex
from relaxvm.ir.tir.intrin_gpu import ShflDown, StorageSync
from relaxvm.runtime.dtype import DataType
from relaxvm_llvm.codegen_stmt import FunctionCodegen, ModuleState
from relaxvm_llvm.lltypes import I32, I64, PTR, Lane, is_float, is_signed, mem_type

from .codegen_fmod import emit_float_mod
from .codegen_math import LLVM_INTRINSICS, emit_math_call
from .codegen_vector import emit_vector_loop, match_vector_loop
from .errors import CUDABuildError

__all__ = [
    "ERROR_SYMBOL",
    "HEAP_FLAG",
    "LOCAL_LIMIT_BYTES",
    "UNSIGNED_FLAG",
    "PTXFunctionCodegen",
    "declare_error_slot",
]

#: The module global (``i64[4]``) a failed ``T.check_index`` writes, first failure only:
#: word 0 is ``op_code + 1`` (0: no failure), with :data:`UNSIGNED_FLAG` set when the index
#: has an unsigned type; words 1, 2, 3 are the axis, the index and the extent. The runtime
#: reads it after a launch, raises ``index_error_message(op_code, axis, index, extent)`` as
#: a VMIndexError and zeroes it.
ERROR_SYMBOL = "__rvm_index_error"
#: Set in word 0 of the error slot for an unsigned index.
UNSIGNED_FLAG = 1 << 16
#: Word 0 of the error slot when the device heap could not supply a symbolic scratch
#: buffer (word 2: the bytes asked for); the runtime raises an out-of-memory error.
HEAP_FLAG = 1 << 17
#: Largest ``local`` scratch buffer (per thread).
LOCAL_LIMIT_BYTES = 16 * 1024
_SREG = {"threadIdx": "tid", "blockIdx": "ctaid"}
_GLOBAL, _SHARED = 1, 3
_INT64 = DataType("int64")


def declare_error_slot(module: ir.Module, define: bool) -> ir.GlobalVariable:
    """The error slot in ``module``: defined (zeroed) once per program, declared elsewhere."""
    existing = module.globals.get(ERROR_SYMBOL)
    if existing is not None:
        return existing  # type: ignore[no-any-return]
    slot = ir.GlobalVariable(module, ir.ArrayType(I64, 4), ERROR_SYMBOL, addrspace=_GLOBAL)
    if define:
        slot.initializer = ir.Constant(ir.ArrayType(I64, 4), [0, 0, 0, 0])
    slot.align = 8
    return slot


class PTXFunctionCodegen(FunctionCodegen):
    """Generates one ``ptx_kernel`` function (see the module docstring).

    Parameters
    ----------
    state : ModuleState
    function : ir.Function
    kernel, symbol : str
    launch : dict
        The launch extent expression of each axis the kernel binds (``"threadIdx.x"`` ...).
    single_thread : bool
        Whether the launch is statically one block of one thread.
    """

    def __init__(
        self,
        state: ModuleState,
        function: ir.Function,
        kernel: str,
        symbol: str,
        launch: dict[str, PrimExpr],
        single_thread: bool,
    ) -> None:
        # in_parallel: parallel loops are never outlined (they run serially in the thread).
        super().__init__(state, function, kernel, symbol, in_parallel=True)
        self.launch = launch
        self.single_thread = single_thread
        self._statics = 0
        self._thread_depth = 0  # thread-bound loops around the statement being generated
        #: Inside a vector loop's element (:mod:`.codegen_vector`): the store's indices and,
        #: per contiguous buffer, this element's value from the vector load.
        self.lane_loads: tuple[tuple[PrimExpr, ...], dict[Buffer, ir.Value]] | None = None

    def buffer_ptr(self, buffer: Buffer) -> ir.Value:
        handle = self.handles.get(buffer.data)
        space = getattr(getattr(handle, "type", None), "addrspace", 0)
        if not space:
            return super().buffer_ptr(buffer)
        # A shared array's handle stays in its address space (see _allocate).
        elem = mem_type(buffer.dtype)
        key = (buffer.data, str(elem))
        typed = self._typed.get(key)
        if typed is None:
            typed = self._typed[key] = self.at_entry().bitcast(handle, elem.as_pointer(space))
        return typed

    def error(self, message: str) -> CUDABuildError:  # type: ignore[override]
        return CUDABuildError(f"cuda target: kernel {self.kernel!r}: {message}")

    # ---- intrinsics -----------------------------------------------------------------------
    def intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        ty = args[0].type
        suffix = {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}.get(type(ty))
        allowed = LLVM_INTRINSICS.get(name, frozenset())
        if suffix not in allowed:
            raise self.error(
                f"LLVM intrinsic llvm.{name} on {ty} has no NVPTX lowering in the whitelist"
            )
        return super().intrinsic(name, args)

    def arith(self, op: type, dtype: DataType, x: ir.Value, y: ir.Value) -> ir.Value:
        # NVPTX expands frem as x - trunc(x / y) * y: wrong for large quotients and
        # infinities, so float remainders are computed exactly from the bits.
        if op in (Mod, FloorMod) and is_float(dtype):
            return emit_float_mod(self, x, y, floor=op is FloorMod)
        return super().arith(op, dtype, x, y)

    def _call(self, expr: Call) -> Lane:
        if isinstance(expr, StorageSync):
            raise self.error(f"`{expr}` is a barrier: use it as T.evaluate(...) only")
        if isinstance(expr, ShflDown):
            return self._shfl_down(expr)
        return emit_math_call(self, expr)

    def _shfl_down(self, expr: ShflDown) -> Lane:
        value_expr, delta_expr = expr.args
        value = self.scalar(value_expr)
        suffix = "f32" if str(value_expr.dtype) == "float32" else "i32"
        shfl = self.declare(
            f"llvm.nvvm.shfl.sync.down.{suffix}", value.type, [I32, value.type, I32, I32]
        )
        mask, clamp = ir.Constant(I32, -1), ir.Constant(I32, 31)  # every lane; whole warp
        delta = self.scalar(delta_expr)
        return Lane(Lane.SCALAR, self.builder.call(shfl, [mask, value, delta, clamp]))

    def emit_load(self, expr: BufferLoad) -> Lane:
        if self.lane_loads is not None:
            indices, values = self.lane_loads
            value = values.get(expr.buffer)
            if value is not None and all(
                a is b for a, b in zip(expr.indices, indices, strict=True)
            ):
                return Lane(Lane.SCALAR, value)
        return super().emit_load(expr)

    def _check_index(self, expr: CheckIndex) -> Lane:
        index_expr, extent_expr, axis, op_code = expr.args
        b = self.builder
        index = self.cast_value(self.scalar(index_expr), index_expr.dtype, _INT64)
        extent = self.scalar(extent_expr)
        code = int(op_code.value) + 1  # type: ignore[attr-defined]
        zero = ir.Constant(I64, 0)
        if is_signed(index_expr.dtype):  # numpy's negative indices
            wrapped = b.select(b.icmp_signed("<", index, zero), b.add(index, extent), index)
        else:
            wrapped, code = index, code | UNSIGNED_FLAG
        in_range = b.icmp_unsigned("<", wrapped, extent)
        with b.if_then(b.not_(in_range), likely=False):
            slot = declare_error_slot(self.module, define=False)
            old = b.cmpxchg(
                b.gep(slot, [I32(0), I32(0)]),
                zero,
                ir.Constant(I64, code),
                "monotonic",
                "monotonic",
            )
            with b.if_then(b.extract_value(old, 1)):  # the first failure of the launch
                axis_value = ir.Constant(I64, int(axis.value))  # type: ignore[attr-defined]
                for word, value in ((1, axis_value), (2, index), (3, extent)):
                    b.store(value, b.gep(slot, [I32(0), I32(word)]))
            b.ret_void()
        return Lane(Lane.SCALAR, wrapped)

    # ---- statements -----------------------------------------------------------------------
    def emit_stmt(self, stmt: Stmt) -> None:
        if isinstance(stmt, Evaluate) and isinstance(stmt.value, StorageSync):
            barrier = self.declare("llvm.nvvm.barrier0", ir.VoidType(), [])
            self.builder.call(barrier, [])
            return
        super().emit_stmt(stmt)

    def _for(self, stmt: For) -> None:
        if stmt.kind == ForKind.THREAD_BINDING and stmt.thread_binding != "vthread":
            self._thread_loop(stmt)
            return
        if stmt.kind == ForKind.VECTORIZED:
            vector = match_vector_loop(stmt)
            if vector is not None:
                emit_vector_loop(self, vector)
                return
        extent = stmt.extent.value if isinstance(stmt.extent, IntImm) else None
        if stmt.kind == ForKind.UNROLLED or extent == 1:
            super()._for(stmt)
            return
        start, count = self.scalar(stmt.min), self.scalar(stmt.extent)
        self.serial_loop(stmt.loop_var, start, count, stmt.body)

    def _thread_loop(self, stmt: For) -> None:
        axis = str(stmt.thread_binding)
        kind, dim = axis.split(".")
        reader = self.declare(f"llvm.nvvm.read.ptx.sreg.{_SREG[kind]}.{dim}", I32, [])
        b = self.builder
        raw = b.call(reader, [])
        index = b.zext(raw, ir.IntType(stmt.loop_var.dtype.bits))
        value = b.add(self.scalar(stmt.min), index)
        saved = self.env.get(stmt.loop_var)
        self.env[stmt.loop_var] = Lane(Lane.SCALAR, value)
        launch = self.launch.get(axis)
        self._thread_depth += 1
        if launch is not None and structural_equal(launch, stmt.extent):
            self.emit_stmt(stmt.body)
        else:
            with b.if_then(b.icmp_signed("<", index, self.scalar(stmt.extent))):
                self.emit_stmt(stmt.body)
        self._thread_depth -= 1
        self._restore(stmt.loop_var, saved)

    def _allocate(self, stmt: Allocate) -> None:
        buffer = stmt.buffer
        elem = mem_type(buffer.dtype)
        extents = [e.value if isinstance(e, IntImm) else None for e in buffer.shape]
        # Global scratch allocated inside the thread-bound loops belongs to each thread (as in
        # the interpreter): a stack slot when small and constant, else the device heap.
        per_thread = buffer.scope == "global" and not self.single_thread and self._thread_depth
        if any(e is None for e in extents):
            if buffer.scope == "global" and (self.single_thread or per_thread):
                self._heap_allocate(stmt)
                return
            raise self.error(
                f"scratch buffer {buffer.name!r} ({buffer.scope}) has the symbolic shape "
                f"{tuple(str(e) for e in buffer.shape)}; GPU scratch needs a constant size"
            )
        count = max(1, math.prod(e for e in extents if e is not None))
        nbytes = count * max(1, buffer.dtype.bits // 8)
        if per_thread and nbytes > LOCAL_LIMIT_BYTES:
            self._heap_allocate(stmt)
            return
        if buffer.scope == "local" or per_thread:
            if nbytes > LOCAL_LIMIT_BYTES:
                raise self.error(
                    f"local buffer {buffer.name!r} needs {nbytes} bytes per thread (at most "
                    f"{LOCAL_LIMIT_BYTES})"
                )
            slot = self.at_entry().alloca(ir.ArrayType(elem, count))
            slot.align = 16
            pointer = self.at_entry().bitcast(slot, PTR)
        else:
            if buffer.scope == "global" and not self.single_thread:
                raise self.error(
                    f"global scratch buffer {buffer.name!r} in a kernel launched with many "
                    "threads (every thread would share it); schedule the kernel or use "
                    "local/shared scope"
                )
            space = _SHARED if buffer.scope == "shared" else _GLOBAL
            self._statics += 1
            name = f"{self.symbol}__{buffer.scope}{self._statics}"
            array = ir.GlobalVariable(self.module, ir.ArrayType(elem, count), name, space)
            array.linkage = "internal"
            array.initializer = ir.Constant(ir.ArrayType(elem, count), ir.Undefined)
            array.align = 16
            entry = self.at_entry()
            if space == _SHARED:
                # Kept in the shared address space (no generic cast): LLVM then sees the
                # array's 16-byte alignment through the index arithmetic, marks aligned
                # loads as such, and merges adjacent ones into ld.shared.v2/v4.
                pointer = entry.bitcast(array, ir.IntType(8).as_pointer(_SHARED))
            else:
                generic = entry.addrspacecast(array, ir.ArrayType(elem, count).as_pointer())
                pointer = entry.bitcast(generic, PTR)
        self._with_handle(stmt, pointer)

    def _heap_allocate(self, stmt: Allocate) -> None:
        # A one-thread kernel's scratch of symbolic size: the device heap is the only memory
        # a kernel can size at run time without a workspace argument from the runtime.
        buffer = stmt.buffer
        b = self.builder
        nbytes: ir.Value = ir.Constant(I64, max(1, buffer.dtype.bits // 8))
        for extent in buffer.shape:
            value = self.cast_value(self.scalar(extent), extent.dtype, _INT64)
            nbytes = b.mul(nbytes, value)
        nbytes = b.select(b.icmp_signed("<", nbytes, ir.Constant(I64, 1)), I64(1), nbytes)
        malloc = self.declare("malloc", PTR, [I64])
        free = self.declare("free", ir.VoidType(), [PTR])
        pointer = b.call(malloc, [nbytes])
        with b.if_then(b.icmp_unsigned("==", pointer, ir.Constant(PTR, None)), likely=False):
            slot = declare_error_slot(self.module, define=False)
            zero = ir.Constant(I64, 0)
            old = b.cmpxchg(
                b.gep(slot, [I32(0), I32(0)]), zero, ir.Constant(I64, HEAP_FLAG),
                "monotonic", "monotonic",
            )  # fmt: skip
            with b.if_then(b.extract_value(old, 1)):
                b.store(nbytes, b.gep(slot, [I32(0), I32(2)]))
            b.ret_void()
        self._with_handle(stmt, pointer)
        if not b.block.is_terminated:
            b.call(free, [pointer])

    def _with_handle(self, stmt: Allocate, pointer: ir.Value) -> None:
        buffer = stmt.buffer
        saved = self.handles.get(buffer.data)
        saved_typed = {k: v for k, v in self._typed.items() if k[0] is buffer.data}
        for key in saved_typed:
            del self._typed[key]
        self.define_handle(buffer.data, pointer)
        self.define_buffer(buffer)
        self.emit_stmt(stmt.body)
        for key in [k for k in self._typed if k[0] is buffer.data]:
            del self._typed[key]
        self._typed.update(saved_typed)
        if saved is None:
            self.handles.pop(buffer.data, None)
        else:
            self.handles[buffer.data] = saved
