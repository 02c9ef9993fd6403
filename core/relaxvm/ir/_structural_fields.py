"""What structural equality and hashing look at, for each kind of IR node.

:mod:`relaxvm.ir.structural` walks any IR through :data:`REFLECTORS`: for a node's type (or
its nearest registered base) a function returns ``(is_var, values, children)``, and the
table also names the values:

``is_var``
    True for things paired by definition rather than compared by content: TIR and Relax
    variables; ``DEFINED_BY_FIRST_USE`` for TIR buffers, which are also defined where they
    are first used. Their ``children`` (a Relax variable's annotation, a buffer's shape and
    handle) are compared only where the variable is defined.
``values``
    Compared by value (dtypes, names of globals, constants); hashable, and NaN given as
    ``"nan"`` (each NaN object hashes differently).
``children``
    ``(label, child, role)`` triples walked recursively, in order; ``label`` extends the
    path in mismatch reports (``.body``, ``.args``), ``role`` is ``USE``, ``DEF``,
    ``DEF_FIRST``, ``ISOLATED`` or None to inherit the parent's (so that the ``n`` in a parameter's
    ``R.Tensor((n + 1,))`` is in a definition position too).

Lists, tuples and mappings among the children are walked by the caller. A type without an
entry (``str``, ``int``, ``DataType``, an unknown object) is a leaf compared with ``==``.
Adding a node kind means adding one function here: equality and hashing follow from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .expr import FloatImm, IntImm, PrimExpr, Range
from .expr import Var as TirVar
from .relax import struct_info as si
from .relax.block import BindingBlock, Function, MatchCast, SeqExpr, VarBinding
from .relax.expr import (
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    If,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from .relax.module import IRModule
from .structural import DEF, DEF_FIRST, DEFINED_BY_FIRST_USE, ISOLATED, USE
from .tir.block import Block, BlockRealize, BufferRegion, IterVar, MatchBufferRegion
from .tir.buffer import Buffer, BufferLoad
from .tir.function import PrimFunc
from .tir.intrin import Call as TirCall
from .tir.let_expr import Let as TirLet
from .tir.stmt import Allocate, BufferStore, DeclBuffer, Evaluate, For, IfThenElse, LetStmt, SeqStmt

__all__ = ["REFLECTORS"]

Values = tuple[Any, ...]
Children = tuple[tuple[str, Any, int | None], ...]
#: ``is_var`` is False, True or ``DEFINED_BY_FIRST_USE`` (see the module docstring).
Reflection = tuple[bool | int, Values, Children]

_NONE: Values = ()


# ---- symbolic expressions -----------------------------------------------------------------
def _prim(node: PrimExpr) -> Reflection:
    operands = node.operands
    names = node._operand_names
    if len(names) != len(operands):
        names = tuple(f"operands[{i}]" for i in range(len(operands)))
    return (
        False,
        (node.dtype,),
        tuple((f".{n}", op, None) for n, op in zip(names, operands, strict=True)),
    )


def _imm(node: IntImm | FloatImm) -> Reflection:
    value = node.value
    return False, (node.dtype, value if value == value else "nan"), ()


def _tir_var(node: TirVar) -> Reflection:
    return True, (node.dtype,), ()


def _tir_call(node: TirCall) -> Reflection:
    args = tuple((f".args[{i}]", arg, None) for i, arg in enumerate(node.args))
    return False, (node.op, node.dtype), args


def _buffer_load(node: BufferLoad) -> Reflection:
    # The buffer, not its handle operand: loads pair buffers, as stores do.
    return (
        False,
        (node.dtype,),
        ((".buffer", node.buffer, USE), (".indices", node.indices, None)),
    )


def _range(node: Range) -> Reflection:
    return False, _NONE, ((".min", node.min, None), (".extent", node.extent, None))


# ---- TIR ----------------------------------------------------------------------------------
def _buffer(node: Buffer) -> Reflection:
    # Shape, strides and offset define their symbolic variables, as a PrimFunc's
    # `A: T.Buffer((n, 4))` does; the name is a label, not structure. A buffer not defined
    # yet is defined by its first use (TVM compares buffers by content).
    return (
        DEFINED_BY_FIRST_USE,
        (node.dtype, node.scope),
        (
            (".shape", node.shape, DEF_FIRST),
            (".strides", node.strides, DEF_FIRST),
            (".elem_offset", node.elem_offset, DEF_FIRST),
            (".data", node.data, DEF),
        ),
    )


def _for(node: For) -> Reflection:
    return (
        False,
        (node.kind, node.thread_binding),
        (
            (".annotations", node.annotations, USE),
            (".min", node.min, USE),
            (".extent", node.extent, USE),
            (".loop_var", node.loop_var, DEF),
            (".body", node.body, USE),
        ),
    )


def _buffer_store(node: BufferStore) -> Reflection:
    children = (
        (".buffer", node.buffer, USE),
        (".value", node.value, USE),
        (".indices", node.indices, USE),
    )
    return False, _NONE, children


def _let(node: LetStmt) -> Reflection:
    return (
        False,
        _NONE,
        ((".value", node.value, USE), (".var", node.var, DEF), (".body", node.body, USE)),
    )


def _if_then_else(node: IfThenElse) -> Reflection:
    children = (
        (".condition", node.condition, USE),
        (".then_case", node.then_case, USE),
        (".else_case", node.else_case, USE),
    )
    return False, _NONE, children


def _allocate(node: Allocate) -> Reflection:
    return False, _NONE, ((".buffer", node.buffer, DEF), (".body", node.body, USE))


def _decl_buffer(node: DeclBuffer) -> Reflection:
    # The memory it declares is a use (another buffer's handle or a parameter), the buffer a
    # definition.
    return (
        False,
        _NONE,
        (
            (".buffer.data", node.buffer.data, USE),
            (".buffer", node.buffer, DEF),
            (".body", node.body, USE),
        ),
    )


def _tir_let(node: TirLet) -> Reflection:
    children = ((".value", node.value, USE), (".var", node.var, DEF), (".body", node.body, USE))
    return False, (node.dtype,), children


def _match_buffer_region(node: MatchBufferRegion) -> Reflection:
    return False, _NONE, ((".source", node.source, USE), (".buffer", node.buffer, DEF))


def _evaluate(node: Evaluate) -> Reflection:
    return False, _NONE, ((".value", node.value, USE),)


def _seq_stmt(node: SeqStmt) -> Reflection:
    return False, _NONE, ((".seq", node.seq, USE),)


def _iter_var(node: IterVar) -> Reflection:
    return False, (node.iter_type,), ((".dom", node.dom, USE), (".var", node.var, DEF))


def _buffer_region(node: BufferRegion) -> Reflection:
    return False, _NONE, ((".buffer", node.buffer, USE), (".region", node.region, USE))


def _tir_block(node: Block) -> Reflection:
    # Iteration variables and scratch buffers are defined before the regions and code that
    # use them. The name is a hint, neither compared nor hashed (as TVM's SEqHashIgnore).
    children = (
        (".iter_vars", node.iter_vars, USE),
        (".alloc_buffers", node.alloc_buffers, DEF),
        (".match_buffers", node.match_buffers, USE),
        (".reads", node.reads, USE),
        (".writes", node.writes, USE),
        (".annotations", node.annotations, USE),
        (".init", node.init, USE),
        (".body", node.body, USE),
    )
    return False, _NONE, children


def _block_realize(node: BlockRealize) -> Reflection:
    children = (
        (".iter_values", node.iter_values, USE),
        (".predicate", node.predicate, USE),
        (".block", node.block, USE),
    )
    return False, _NONE, children


def _prim_func(node: PrimFunc) -> Reflection:
    children: list[tuple[str, Any, int | None]] = [(".attrs", node.attrs, USE)]
    for index, param in enumerate(node.params):
        children.append((f".params[{index}]", param, DEF))
        children.append((f".buffer_map[{param.name}]", node.buffer_map.get(param), DEF))
    children.append((".body", node.body, USE))
    return False, _NONE, tuple(children)


# ---- Relax expressions --------------------------------------------------------------------
def _relax_var(node: Var) -> Reflection:
    return True, _NONE, ((".struct_info", node.struct_info, DEF_FIRST),)


def _global_var(node: GlobalVar) -> Reflection:
    return False, (node.name_hint,), ()


def _op(node: Op) -> Reflection:
    return False, (node.name,), ()


def _extern_func(node: ExternFunc) -> Reflection:
    return False, (node.global_symbol,), ()


def _immediate(node: StringImm | DataTypeImm) -> Reflection:
    return False, (node.value,), ()


def _constant(node: Constant) -> Reflection:
    data = node.data.numpy()
    return False, (str(data.dtype), tuple(data.shape), data.tobytes()), ()


def _shape_expr(node: ShapeExpr) -> Reflection:
    return False, _NONE, ((".values", node.values, None),)


def _prim_value(node: PrimValue) -> Reflection:
    return False, _NONE, ((".value", node.value, None),)


def _tuple(node: Tuple) -> Reflection:
    return False, _NONE, ((".fields", node.fields, None),)


def _tuple_get_item(node: TupleGetItem) -> Reflection:
    return False, (node.index,), ((".tuple_value", node.tuple_value, None),)


def _call(node: Call) -> Reflection:
    children = (
        (".op", node.op, USE),
        (".args", node.args, USE),
        (".attrs", node.attrs or {}, USE),  # None and {} are the same attributes
        (".sinfo_args", node.sinfo_args, USE),
    )
    return False, _NONE, children


def _if(node: If) -> Reflection:
    children = (
        (".cond", node.cond, USE),
        (".true_branch", node.true_branch, USE),
        (".false_branch", node.false_branch, USE),
    )
    return False, _NONE, children


def _seq_expr(node: SeqExpr) -> Reflection:
    return False, _NONE, ((".blocks", node.blocks, USE), (".body", node.body, USE))


def _function(node: Function) -> Reflection:
    # The body goes before the return annotation: a derived annotation may mention symbolic
    # variables that a match_cast in the body defines.
    children = (
        (".params", node.params, DEF),
        (".attrs", node.attrs, USE),
        (".body", node.body, USE),
        (".ret_struct_info", node.ret_struct_info, USE),
    )
    return False, (node.is_pure,), children


def _block(node: BindingBlock) -> Reflection:
    return False, _NONE, ((".bindings", node.bindings, USE),)


def _var_binding(node: VarBinding) -> Reflection:
    # The value first: it cannot refer to the variable the binding defines.
    return False, _NONE, ((".value", node.value, USE), (".var", node.var, DEF))


def _match_cast(node: MatchCast) -> Reflection:
    children = (
        (".value", node.value, USE),
        (".struct_info", node.struct_info, DEF_FIRST),
        (".var", node.var, DEF),
    )
    return False, _NONE, children


def _module(node: IRModule) -> Reflection:
    names = sorted(gvar.name_hint for gvar, _ in node)
    functions = tuple((f'.functions["{name}"]', node[name], ISOLATED) for name in names)
    infos = (".global_infos", node.global_infos, USE)
    return False, (tuple(names),), ((".attrs", node.attrs, USE), infos, *functions)


# ---- struct info --------------------------------------------------------------------------
def _object_sinfo(node: si.ObjectStructInfo) -> Reflection:
    return False, _NONE, ()


def _prim_sinfo(node: si.PrimStructInfo) -> Reflection:
    return False, (node.dtype,), ((".value", node.value, None),)


def _shape_sinfo(node: si.ShapeStructInfo) -> Reflection:
    return False, (node.ndim,), ((".values", node.values, None),)


def _tensor_sinfo(node: si.TensorStructInfo) -> Reflection:
    # A shape given as a Relax variable refers to it, it never defines it.
    role = USE if isinstance(node.shape, Var) else None
    return False, (node.dtype, node.ndim, node.vdevice), ((".shape", node.shape, role),)


def _tuple_sinfo(node: si.TupleStructInfo) -> Reflection:
    return False, _NONE, ((".fields", node.fields, None),)


def _func_sinfo(node: si.FuncStructInfo) -> Reflection:
    children = ((".params", node.params, DEF_FIRST), (".ret", node.ret, None))
    return False, (node.purity,), children


#: Node type -> (its reflector, the names of the values it returns, for mismatch reports);
#: subclasses use their nearest registered base.
REFLECTORS: dict[type, tuple[Callable[[Any], Reflection], tuple[str, ...]]] = {
    PrimExpr: (_prim, ("dtype",)),
    IntImm: (_imm, ("dtype", "value")),
    FloatImm: (_imm, ("dtype", "value")),
    TirVar: (_tir_var, ("dtype",)),
    TirCall: (_tir_call, ("op", "dtype")),
    BufferLoad: (_buffer_load, ("dtype",)),
    Range: (_range, ()),
    Buffer: (_buffer, ("dtype", "scope")),
    For: (_for, ("kind", "thread_binding")),
    BufferStore: (_buffer_store, ()),
    LetStmt: (_let, ()),
    IfThenElse: (_if_then_else, ()),
    Allocate: (_allocate, ()),
    Evaluate: (_evaluate, ()),
    DeclBuffer: (_decl_buffer, ()),
    TirLet: (_tir_let, ("dtype",)),
    MatchBufferRegion: (_match_buffer_region, ()),
    SeqStmt: (_seq_stmt, ()),
    IterVar: (_iter_var, ("iter_type",)),
    BufferRegion: (_buffer_region, ()),
    Block: (_tir_block, ()),
    BlockRealize: (_block_realize, ()),
    PrimFunc: (_prim_func, ()),
    Var: (_relax_var, ()),
    GlobalVar: (_global_var, ("name_hint",)),
    Op: (_op, ("name",)),
    ExternFunc: (_extern_func, ("global_symbol",)),
    StringImm: (_immediate, ("value",)),
    DataTypeImm: (_immediate, ("value",)),
    Constant: (_constant, ("dtype", "shape", "data")),
    ShapeExpr: (_shape_expr, ()),
    PrimValue: (_prim_value, ()),
    Tuple: (_tuple, ()),
    TupleGetItem: (_tuple_get_item, ("index",)),
    Call: (_call, ()),
    If: (_if, ()),
    SeqExpr: (_seq_expr, ()),
    Function: (_function, ("is_pure",)),
    BindingBlock: (_block, ()),
    VarBinding: (_var_binding, ()),
    MatchCast: (_match_cast, ()),
    IRModule: (_module, ("functions",)),
    si.ObjectStructInfo: (_object_sinfo, ()),
    si.PrimStructInfo: (_prim_sinfo, ("dtype",)),
    si.ShapeStructInfo: (_shape_sinfo, ("ndim",)),
    si.TensorStructInfo: (_tensor_sinfo, ("dtype", "ndim", "vdevice")),
    si.TupleStructInfo: (_tuple_sinfo, ()),
    si.FuncStructInfo: (_func_sinfo, ("purity",)),
}
