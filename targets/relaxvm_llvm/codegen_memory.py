"""Buffer loads and stores: address arithmetic, vector accesses, gathers and scatters."""

from __future__ import annotations

import llvmlite.ir as ir

from relaxvm.ir import IntImm, PrimExpr
from relaxvm.ir.tir import Buffer, BufferLoad
from relaxvm.runtime.dtype import DataTypeCode

from .lltypes import I8, I32, I64, Lane, mem_type

__all__ = ["MemoryCodegen"]


class MemoryCodegen:
    """Memory access lowering; mixed into :class:`~.codegen_expr.ExprCodegen`, which provides
    ``builder``, ``lanes``, ``emit``, ``to_index``, ``materialize``, ``vtype``, and the
    buffer helpers ``buffer_ptr``/``buffer_strides``."""

    builder: ir.IRBuilder
    lanes: int

    # Provided by the expression and statement generators.
    def emit(self, expr: PrimExpr) -> Lane:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_index(self, expr: PrimExpr) -> Lane:  # pragma: no cover - abstract
        raise NotImplementedError

    def materialize(self, lane: Lane) -> ir.Value:  # pragma: no cover - abstract
        raise NotImplementedError

    def splat(self, value: ir.Value) -> ir.Value:  # pragma: no cover - abstract
        raise NotImplementedError

    def vtype(self, scalar: ir.Type) -> ir.Type:  # pragma: no cover - abstract
        raise NotImplementedError

    def buffer_ptr(self, buffer: Buffer) -> ir.Value:  # pragma: no cover - abstract
        raise NotImplementedError

    def buffer_strides(self, buffer: Buffer) -> list[int | ir.Value]:  # pragma: no cover
        raise NotImplementedError

    def flat_index(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> Lane:
        """The element offset of ``buffer[indices]`` from the buffer's data pointer."""
        strides = self.buffer_strides(buffer)
        total: Lane | None = None
        for index, stride in zip(indices, strides, strict=True):
            term = self.to_index(index)
            if isinstance(stride, int):
                if stride == 0:
                    continue
                if stride != 1:
                    term = self._mul_const(term, stride)
            else:
                term = self._mul_value(term, stride)
            total = term if total is None else self._add(total, term)
        if not (isinstance(buffer.elem_offset, IntImm) and buffer.elem_offset.value == 0):
            offset = self.to_index(buffer.elem_offset)
            total = offset if total is None else self._add(total, offset)
        return total if total is not None else Lane(Lane.SCALAR, ir.Constant(I64, 0))

    def _mul_const(self, lane: Lane, factor: int) -> Lane:
        b = self.builder
        if lane.kind == Lane.VEC:
            const = ir.Constant(lane.value.type, [factor] * self.lanes)
            return Lane(Lane.VEC, b.mul(lane.value, const, flags=("nsw",)))
        value = b.mul(lane.value, ir.Constant(I64, factor), flags=("nsw",))
        return Lane(lane.kind, value, lane.stride * factor)

    def _mul_value(self, lane: Lane, factor: ir.Value) -> Lane:
        b = self.builder
        if lane.kind == Lane.SCALAR:
            return Lane(Lane.SCALAR, b.mul(lane.value, factor, flags=("nsw",)))
        vec = self.materialize(lane)
        return Lane(Lane.VEC, b.mul(vec, self.splat(factor), flags=("nsw",)))

    def _add(self, x: Lane, y: Lane) -> Lane:
        b = self.builder
        if x.kind == Lane.VEC or y.kind == Lane.VEC:
            return Lane(Lane.VEC, b.add(self.materialize(x), self.materialize(y), flags=("nsw",)))
        kind = Lane.RAMP if Lane.RAMP in (x.kind, y.kind) else Lane.SCALAR
        return Lane(kind, b.add(x.value, y.value, flags=("nsw",)), x.stride + y.stride)

    def element_ptr(self, buffer: Buffer, offset: ir.Value) -> ir.Value:
        return self.builder.gep(self.buffer_ptr(buffer), [offset], inbounds=True)

    def emit_load(self, expr: BufferLoad) -> Lane:
        buffer = expr.buffer
        b = self.builder
        offset = self.flat_index(buffer, expr.indices)
        elem = mem_type(buffer.dtype)
        align = max(1, buffer.dtype.bits // 8)
        if offset.kind == Lane.SCALAR or (offset.kind == Lane.RAMP and offset.stride == 0):
            value = b.load(self.element_ptr(buffer, offset.value), align=align)
        elif offset.kind == Lane.RAMP and offset.stride == 1:
            ptr = b.bitcast(self.element_ptr(buffer, offset.value), self.vtype(elem).as_pointer())
            value = b.load(ptr, align=align)
        else:
            offsets = self.materialize(offset)
            value = ir.Constant(self.vtype(elem), None)
            for lane in range(self.lanes):
                item_ptr = self.element_ptr(buffer, b.extract_element(offsets, I32(lane)))
                value = b.insert_element(value, b.load(item_ptr, align=align), I32(lane))
        if buffer.dtype.code == DataTypeCode.BOOL:
            value = b.icmp_unsigned("!=", value, ir.Constant(value.type, None))
        return Lane.of(value)

    def emit_store(
        self, buffer: Buffer, value_expr: PrimExpr, indices: tuple[PrimExpr, ...]
    ) -> None:
        """``buffer[indices] = value`` (a vector store or a scatter inside vectorized loops)."""
        b = self.builder
        value = self.emit(value_expr)
        offset = self.flat_index(buffer, indices)
        align = max(1, buffer.dtype.bits // 8)
        is_bool = buffer.dtype.code == DataTypeCode.BOOL
        if offset.kind == Lane.SCALAR or (offset.kind == Lane.RAMP and offset.stride == 0):
            item = value.value
            if value.kind != Lane.SCALAR:
                # Every lane writes the same element: the last iteration wins.
                item = b.extract_element(self.materialize(value), I32(self.lanes - 1))
            if is_bool:
                item = b.zext(item, I8)
            b.store(item, self.element_ptr(buffer, offset.value), align=align)
            return
        vec = self.materialize(value)
        if is_bool:
            vec = b.zext(vec, self.vtype(I8))
        if offset.kind == Lane.RAMP and offset.stride == 1:
            ptr = b.bitcast(self.element_ptr(buffer, offset.value), vec.type.as_pointer())
            b.store(vec, ptr, align=align)
            return
        offsets = self.materialize(offset)
        for lane in range(self.lanes):
            item_ptr = self.element_ptr(buffer, b.extract_element(offsets, I32(lane)))
            b.store(b.extract_element(vec, I32(lane)), item_ptr, align=align)
