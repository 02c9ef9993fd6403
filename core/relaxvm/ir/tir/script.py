"""TVMScript text for TIR statements and PrimFuncs (``@T.prim_func``), in a form that parses back.

The text follows TVM's printer so that a TVM user reads it at a glance, and is deterministic
(attributes sorted, one spelling per construct):

* ``@T.prim_func`` when the ``global_symbol`` attribute names the function (it is then left
  out of ``T.func_attr({...})``), ``@T.prim_func(private=True)`` when there is none; attribute
  values print as Python literals (``{"tir.noalias": True}``);
* every number names its type (``T.int64(4)``, ``T.float32(0.5)``; bools print ``True``), so a
  parser reads the same types back whatever it takes a bare literal to mean;
* a parameter buffer whose extents are all known when it is declared prints inline as
  ``A: T.Buffer((T.int64(3), T.int64(4)), "float32")``; one with symbolic extents (or strides,
  an offset, a non-global scope) becomes a handle ``A_handle: T.handle``, its new symbolic
  variables are declared (``n = T.int64()``) and it is bound with
  ``A = T.match_buffer(A_handle, (n, T.int64(4)), "float32")``;
* loops: ``range(e)`` / ``range(a, a + e)`` for plain serial loops, ``T.grid(...)`` for a
  perfect nest of them, ``T.serial``/``T.parallel``/``T.vectorized``/``T.unroll``/
  ``T.thread_binding(e, thread="threadIdx.x")`` otherwise, with ``annotations={...}``;
* a ``LetStmt`` or ``Allocate`` that ends its block prints concisely (``x: T.int64 = v`` or
  ``B = T.alloc_buffer(shape, "float32", scope="local")``) and owns the statements after it;
  one followed by further statements prints as ``with T.LetStmt(v) as x:`` /
  ``with T.alloc_buffer(...) as B:`` so the scope stays explicit;
* ``T.evaluate(e)``, ``if``/``else``, stores ``B[i] = e``, loads ``A[i, j]`` (``A[()]`` for a
  0-d buffer), ``T.Select``, ``T.Cast``, ``T.if_then_else`` and the math intrinsics ``T.exp``...

Two distinct variables (or buffers) that share a name get distinct names (``i``, ``i_1``), and
names that are not Python identifiers or would hide ``T``/``R``/``I`` are adjusted, so the text
always reads back as the same tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import VMTypeError
from ..expr import IntImm, PrimExpr, Var
from ..expr_functor import free_vars
from ..printer import INDENT, Namer, expr_to_str, literal, quote
from .analysis import undefined_vars
from .block import Block, BlockRealize
from .buffer import Buffer
from .function import PrimFunc
from .let_expr import let_vars
from .lower_blocks import lower_for_analysis
from .script_block import print_block
from .stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = ["TirPrinter", "prim_func_lines", "prim_func_to_str", "stmt_to_str"]

#: The comment lines TVM puts above a printed PrimFunc.
TIR_HEADER = "# from relaxvm.script import tir as T"
_KIND_CALL = {
    ForKind.SERIAL: "T.serial",
    ForKind.PARALLEL: "T.parallel",
    ForKind.VECTORIZED: "T.vectorized",
    ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding",
}


class TirPrinter:
    """Prints statements into lines, naming variables and buffers through a :class:`Namer`."""

    def __init__(self, namer: Namer | None = None) -> None:
        self.namer = namer or Namer()
        self.lines: list[str] = []
        #: The loops printed so far by variable (``T.axis.remap`` needs their domains).
        self.loops: dict[Var, For] = {}
        #: The buffer that owns each data handle, to print ``data=A.data``.
        self.data_owner: dict[Var, Buffer] = {}

    def define_buffer(self, buffer: Buffer) -> str:
        """Name ``buffer`` in the current scope; its handle prints as ``name.data``."""
        self.data_owner.setdefault(buffer.data, buffer)
        return self.namer.define(buffer, buffer.name)

    def data_text(self, data: Var) -> str:
        """``A.data`` for a named buffer's handle, else the handle variable's name."""
        owner = self.data_owner.get(data)
        if owner is not None and self.namer.get(owner) is not None:
            return f"{self.namer.name(owner)}.data"
        return self.namer.name(data)

    # ---- expressions -----------------------------------------------------------------------
    def expr(self, expr: PrimExpr) -> str:
        """The text of ``expr``, every literal typed."""
        return expr_to_str(expr, "tir", self.namer.name)

    def _shape(self, values: Iterable[PrimExpr]) -> str:
        parts = [self.expr(value) for value in values]
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"

    def buffer_args(self, buffer: Buffer, scope_kw: bool = True) -> str:
        """``shape, "dtype"`` plus the non-default strides, offset and scope."""
        parts = [self._shape(buffer.shape), quote(str(buffer.dtype))]
        if buffer.strides:
            parts.append(f"strides={self._shape(buffer.strides)}")
        offset = buffer.elem_offset
        if not (isinstance(offset, IntImm) and offset.value == 0 and offset.dtype == "int64"):
            parts.append(f"elem_offset={self.expr(offset)}")
        if scope_kw and buffer.scope != "global":
            parts.append(f"scope={quote(buffer.scope)}")
        return ", ".join(parts)

    def declare_vars(self, exprs: Iterable[PrimExpr], depth: int) -> None:
        """Declare (``n = T.int64()``) the variables in ``exprs`` that have no name yet."""
        for expr in exprs:
            for var in free_vars(expr):
                self.declare_var(var, depth)

    def declare_var(self, var: Var, depth: int) -> None:
        """Declare one variable unless it is named already (handles are never declared)."""
        if self.namer.get(var) is not None or str(var.dtype) == "handle":
            return
        name = self.namer.define(var, var.name)
        self.lines.append(f"{INDENT * depth}{name} = T.{var.dtype}()")

    # ---- statements ------------------------------------------------------------------------
    def stmt(self, stmt: Stmt, depth: int, tail: bool = True) -> None:
        """Append the lines of ``stmt``; ``tail`` says nothing follows it in its block."""
        pad = INDENT * depth
        if isinstance(stmt, SeqStmt):
            if not stmt.seq:
                self.lines.append(f"{pad}T.evaluate(0)")
            last = len(stmt.seq) - 1
            for index, item in enumerate(stmt.seq):
                self.stmt(item, depth, tail and index == last)
        elif isinstance(stmt, For):
            self._for(stmt, depth)
        elif isinstance(stmt, BufferStore):
            target = self._load_text(stmt.buffer, stmt.indices)
            self.lines.append(f"{pad}{target} = {self.expr(stmt.value)}")
        elif isinstance(stmt, LetStmt):
            value = self.expr(stmt.value)
            if tail:
                name = self.namer.define(stmt.var, stmt.var.name)
                self.lines.append(f"{pad}{name}: T.{stmt.var.dtype} = {value}")
                self.stmt(stmt.body, depth, True)
            else:
                self.namer.push()
                name = self.namer.define(stmt.var, stmt.var.name)
                self.lines.append(f"{pad}with T.LetStmt({value}) as {name}:")
                self.stmt(stmt.body, depth + 1, True)
                self.namer.pop()
        elif isinstance(stmt, IfThenElse):
            self.lines.append(f"{pad}if {self.expr(stmt.condition)}:")
            self._scoped(stmt.then_case, depth + 1)
            if stmt.else_case is not None:
                self.lines.append(f"{pad}else:")
                self._scoped(stmt.else_case, depth + 1)
        elif isinstance(stmt, Allocate):
            self.declare_vars(stmt.buffer.shape, depth)
            decl = f"T.alloc_buffer({self.buffer_args(stmt.buffer)})"
            self._buffer_scope(stmt.buffer, decl, stmt.body, depth, tail)
        elif isinstance(stmt, DeclBuffer):
            buffer = stmt.buffer
            self.declare_vars((*buffer.shape, *buffer.strides, buffer.elem_offset), depth)
            args = f"{self.buffer_args(buffer)}, data={self.data_text(buffer.data)}"
            self._buffer_scope(buffer, f"T.decl_buffer({args})", stmt.body, depth, tail)
        elif isinstance(stmt, Evaluate):
            self.lines.append(f"{pad}T.evaluate({self.expr(stmt.value)})")
        elif isinstance(stmt, (Block, BlockRealize)):
            print_block(self, stmt, depth)
        else:
            raise VMTypeError(f"script: cannot print a {type(stmt).__name__}")

    def _buffer_scope(self, buffer: Buffer, decl: str, body: Stmt, depth: int, tail: bool) -> None:
        # `B = decl` owns the rest of the block; `with decl as B:` when statements follow.
        pad = INDENT * depth
        if tail:
            self.lines.append(f"{pad}{self.define_buffer(buffer)} = {decl}")
            self.stmt(body, depth, True)
        else:
            self.namer.push()
            self.lines.append(f"{pad}with {decl} as {self.define_buffer(buffer)}:")
            self.stmt(body, depth + 1, True)
            self.namer.pop()

    def _scoped(self, stmt: Stmt, depth: int) -> None:
        self.namer.push()
        self.stmt(stmt, depth, True)
        self.namer.pop()

    def _load_text(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> str:
        inner = ", ".join(self.expr(index) for index in indices) or "()"
        return f"{self.namer.name(buffer)}[{inner}]"

    def _for(self, loop: For, depth: int) -> None:
        pad = INDENT * depth
        grid = _grid(loop)
        self.namer.push()
        if len(grid) > 1:
            extents = ", ".join(self.expr(item.extent) for item in grid)
            names = ", ".join(self.namer.define(item.loop_var, item.loop_var.name) for item in grid)
            self.lines.append(f"{pad}for {names} in T.grid({extents}):")
            self.loops.update((item.loop_var, item) for item in grid)
            self.stmt(grid[-1].body, depth + 1, True)
            self.namer.pop()
            return
        zero_min = isinstance(loop.min, IntImm) and loop.min.value == 0
        args = (
            [self.expr(loop.extent)]
            if zero_min
            else [
                self.expr(loop.min),
                self.expr(loop.min + loop.extent),
            ]
        )
        if loop.thread_binding is not None:
            args.append(f"thread={quote(loop.thread_binding)}")
        if loop.annotations:
            args.append(f"annotations={literal(loop.annotations, self.expr)}")
        if loop.kind == ForKind.SERIAL and not loop.annotations:
            call = "range"
        else:
            call = _KIND_CALL[loop.kind]
        var = self.namer.define(loop.loop_var, loop.loop_var.name)
        self.lines.append(f"{pad}for {var} in {call}({', '.join(args)}):")
        self.loops[loop.loop_var] = loop
        self.stmt(loop.body, depth + 1, True)
        self.namer.pop()

    # ---- functions -------------------------------------------------------------------------
    def prim_func(self, func: PrimFunc, name: str, depth: int, private: bool) -> None:
        """Append the ``@T.prim_func`` definition of ``func`` printed as ``name``."""
        pad = INDENT * depth
        params: list[str] = []
        bound_later: list[tuple[str, Buffer]] = []
        for param in func.params:
            buffer = func.buffer_map.get(param)
            if buffer is not None and self._inline(buffer):
                buffer_name = self.define_buffer(buffer)
                params.append(f"{buffer_name}: T.Buffer({self.buffer_args(buffer)})")
            elif buffer is not None:
                handle = self.namer.define(param, param.name)
                params.append(f"{handle}: T.handle")
                bound_later.append((handle, buffer))
            else:
                params.append(f"{self.namer.define(param, param.name)}: T.{param.dtype}")
        decorator = "@T.prim_func(private=True)" if private else "@T.prim_func"
        self.lines += [pad + decorator, f"{pad}def {name}({', '.join(params)}):"]
        attrs = dict(func.attrs)
        if not private and attrs.get("global_symbol") == name:
            del attrs["global_symbol"]
        if attrs:
            self.lines.append(f"{pad}{INDENT}T.func_attr({literal(attrs, self.expr)})")
        for handle, buffer in bound_later:
            self.declare_vars((*buffer.shape, *buffer.strides, buffer.elem_offset), depth + 1)
            buffer_name = self.define_buffer(buffer)
            self.lines.append(
                f"{pad}{INDENT}{buffer_name} = T.match_buffer({handle}, {self.buffer_args(buffer)})"
            )
        # Variables the function uses without defining them: declared, as TVM does.
        for var in undefined_vars(lower_for_analysis(func)):  # block iteration vars are defined
            self.declare_var(var, depth + 1)
        for var in let_vars(func.body):  # T.Let(..., where={x: v}) needs `x = T.int64()`
            self.declare_var(var, depth + 1)
        self.stmt(func.body, depth + 1, True)

    def _inline(self, buffer: Buffer) -> bool:
        if buffer.strides or buffer.scope != "global":
            return False
        offset = buffer.elem_offset
        if not (isinstance(offset, IntImm) and offset.value == 0 and offset.dtype == "int64"):
            return False
        return all(
            self.namer.get(var) is not None for dim in buffer.shape for var in free_vars(dim)
        )


def _grid(loop: For) -> list[For]:
    """The loops of a perfect nest that ``T.grid`` can print (serial, from 0, independent)."""
    grid: list[For] = []
    loop_vars: set[Var] = set()
    node: Stmt = loop
    while isinstance(node, For):
        zero_min = isinstance(node.min, IntImm) and node.min.value == 0
        if node.kind != ForKind.SERIAL or not zero_min or node.annotations:
            break
        if any(var in loop_vars for var in free_vars(node.extent)):
            break
        grid.append(node)
        loop_vars.add(node.loop_var)
        node = node.body
    return grid


def stmt_to_str(stmt: Stmt, indent: int = 0) -> str:
    """The text of ``stmt``, each line indented by ``indent`` levels."""
    printer = TirPrinter()
    printer.stmt(stmt, indent, True)
    return "\n".join(printer.lines)


def prim_func_lines(func: PrimFunc, name: str, depth: int, private: bool) -> list[str]:
    """The lines of ``func`` as a ``@T.prim_func`` named ``name`` (for a module's class)."""
    printer = TirPrinter()
    printer.prim_func(func, name, depth, private)
    return printer.lines


def prim_func_to_str(func: PrimFunc) -> str:
    """``@T.prim_func`` text for ``func`` on its own, with TVM's import comment on top.

    The function is printed under its ``global_symbol``; without one it is private and
    printed as ``main``.
    """
    private = "global_symbol" not in func.attrs
    lines = prim_func_lines(func, func.name, 0, private)
    return "\n".join([TIR_HEADER, "", *lines])
