"""VMShapeLower: type checks and symbolic shapes as VM builtin calls (TVM's ``VMShapeLower``).

For every Relax function this pass

* allocates the *shape heap* (``vm.builtin.alloc_shape_heap``), one int64 slot per symbolic
  variable (``n``) and per composite expression (``n * 2``, ``n // 2 + 1``) the function uses;
* checks each parameter against its annotation: ``check_tensor_info`` / ``check_shape_info``
  / ``check_prim_value_info`` / ``check_tuple_info`` / ``check_func_info`` for the kind, ndim
  and dtype, then ``match_shape`` / ``match_prim_value`` for the dimensions. Matching runs in
  two rounds: the first binds every variable (``STORE_TO_HEAP``) or checks it
  (``ASSERT_EQUAL_TO_IMM`` / ``ASSERT_EQUAL_TO_LOAD``) and skips composite dimensions
  (``NO_OP``); a host *shape function* (a TIR PrimFunc over the heap) then computes the
  composite expressions, and a second round checks them. So a symbol may be defined by any
  parameter, including one after its first use;
* lowers ``match_cast`` bindings and the return value the same way;
* replaces symbolic :class:`ShapeExpr` / :class:`PrimValue` values by ``make_shape`` /
  ``make_prim_value`` from heap slots.

Every check carries an ``err_ctx`` string naming the function, the parameter (or binding) and
the annotation, which the builtins put in front of their messages. With the ``num_input``
function attribute, the first ``num_input`` parameters (the run-time inputs) are matched
before the others (the weights), so symbols are bound from the inputs; a malformed
``num_input`` is a :class:`~relaxvm.errors.CompileError`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CompileError
from ..ir import IntImm, PrimExpr, cast, free_vars, substitute
from ..ir import Var as SymVar
from ..ir.relax import (
    Binding,
    BindingBlock,
    Call,
    ExternFunc,
    FuncStructInfo,
    Function,
    GlobalVar,
    If,
    IRModule,
    MatchCast,
    ObjectStructInfo,
    Op,
    PrimStructInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeStructInfo,
    StringImm,
    StructInfo,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
)
from ..ir.relax import RelaxExpr as Expr
from ..ir.relax.expr import DataTypeImm
from ..ir.relax.subtype import BaseCheckResult, struct_info_base_check
from ..ir.tir import Buffer, BufferLoad, BufferStore, PrimFunc, SeqStmt
from ..transform.pass_infra import Pass, PassContext, module_pass

__all__ = ["MakeShapeCode", "MatchShapeCode", "VMShapeLower", "lower_shapes"]


class MatchShapeCode:
    """``vm.builtin.match_shape`` codes (as the builtins plugin defines them)."""

    ASSERT_EQUAL_TO_IMM = 0
    STORE_TO_HEAP = 1
    NO_OP = 2
    ASSERT_EQUAL_TO_LOAD = 3


class MakeShapeCode:
    """``vm.builtin.make_shape`` codes."""

    USE_IMM = 0
    LOAD_SHAPE = 1


_VOID = TupleStructInfo([])
_HEAP_SINFO = TensorStructInfo(None, "int64", ndim=1)


def VMShapeLower(emit_err_ctx: bool = True) -> Pass:
    """The pass: lower type checks and symbolic shapes of every Relax function.

    Parameters
    ----------
    emit_err_ctx : bool
        Pass an ``err_ctx`` string (function, parameter, annotation) to every check.
    """

    @module_pass(opt_level=0, name="VMShapeLower")
    def transform(mod: IRModule, ctx: PassContext) -> IRModule:
        return lower_shapes(mod, emit_err_ctx)

    return transform  # type: ignore[no-any-return]


def lower_shapes(mod: IRModule, emit_err_ctx: bool = True) -> IRModule:
    """Apply the lowering to ``mod`` (a new module; ``mod`` is unchanged)."""
    out = mod.copy()
    for gvar, func in list(mod.functions.items()):
        if isinstance(func, Function):
            lowered = _FunctionLowerer(out, gvar.name_hint, func, emit_err_ctx).run()
            out.update_func(gvar, lowered)
    return out


class _Todo:
    """A dimension list still to be matched: value, expected dims, kind, err_ctx."""

    __slots__ = ("dims", "err_ctx", "is_prim", "value")

    def __init__(self, value: Expr, dims: Sequence[PrimExpr], err_ctx: str, is_prim: bool) -> None:
        self.value = value
        self.dims = list(dims)
        self.err_ctx = err_ctx
        self.is_prim = is_prim


class _FunctionLowerer:
    def __init__(self, mod: IRModule, name: str, func: Function, emit_err_ctx: bool) -> None:
        self.mod = mod
        self.name = name
        self.func = func
        self.emit_err_ctx = emit_err_ctx
        self.slots: dict[PrimExpr, int] = {}  # symbolic var or composite expr -> heap slot
        self.defined: set[PrimExpr] = set()  # slots whose value is in the heap now
        self.heap = Var("shape_heap", _HEAP_SINFO)
        self.bindings: list[Binding] = []
        self.binding_name = "<parameters>"
        self.counter = 0
        self._heap_used = False

    # -- helpers ------------------------------------------------------------------------------
    def error(self, reason: str) -> CompileError:
        return CompileError(
            f"VMShapeLower: in function {self.name!r}, binding {self.binding_name}: {reason}"
        )

    def slot(self, expr: PrimExpr) -> int:
        index = self.slots.get(expr)
        if index is None:
            index = self.slots[expr] = len(self.slots)
        return index

    def emit(self, value: Expr, sinfo: StructInfo, name: str = "_") -> Var:
        var = Var(name, sinfo)
        self.bindings.append(VarBinding(var, value))
        return var

    def call_void(self, symbol: str, args: Sequence[Expr]) -> None:
        self.emit(Call(ExternFunc(symbol), list(args), None, [_VOID], _VOID), _VOID)

    def err_args(self, text: str) -> list[Expr]:
        return [StringImm(text)] if self.emit_err_ctx else []

    # -- driver -------------------------------------------------------------------------------
    def run(self) -> Function:
        func = self.func
        params = list(func.params)
        num_input = func.attrs.get("num_input", len(params))
        if isinstance(num_input, IntImm):
            num_input = int(num_input.value)
        if isinstance(num_input, bool) or not isinstance(num_input, int):
            raise self.error(f"the num_input attribute must be an int, got {num_input!r}")
        if not 0 <= num_input <= len(params):
            raise self.error(
                f"the num_input attribute is {num_input}, but the function has "
                f"{len(params)} parameters"
            )
        # Inputs (the first num_input parameters) come first, so each symbol is bound from
        # the first input that has it and weights are checked against it.
        todos: list[_Todo] = []
        for index, param in enumerate(params):
            sinfo = param.struct_info
            if sinfo is None:
                continue
            ctx = (
                f"ErrorContext(fn={self.name}, loc=param[{index}], param={param.name_hint}, "
                f"annotation={sinfo.script()}) "
            )
            self.check(param, sinfo, ctx, todos)
        self.match(todos)
        body = self.visit_seq(func.body, func.ret_struct_info, is_function_body=True)
        # The heap's size is known only now; its allocation goes first.
        heap_value: Expr
        if self.slots:
            heap_value = Call(
                Op.get("relax.call_builtin_with_ctx"),
                [ExternFunc("vm.builtin.alloc_shape_heap"), Tuple([PrimValue(len(self.slots))])],
                None,
                [_HEAP_SINFO],
                _HEAP_SINFO,
            )
        else:
            heap_value = Call(Op.get("relax.null_value"), [], None, [], ObjectStructInfo())
        uses_heap = bool(self.slots) or self._heap_used
        if uses_heap:
            body = SeqExpr(
                [BindingBlock([VarBinding(self.heap, heap_value)]), *body.blocks], body.body
            )
        return Function(
            func.params, body, func.ret_struct_info, func.is_pure, func.attrs, func.span
        )

    def heap_ref(self) -> Var:
        self._heap_used = True
        return self.heap

    # -- checks -------------------------------------------------------------------------------
    def check(self, value: Expr, sinfo: StructInfo, ctx: str, todos: list[_Todo]) -> None:
        """Emit the kind/ndim/dtype checks of ``value`` against ``sinfo``; queue its dims."""
        if isinstance(sinfo, TensorStructInfo):
            args: list[Expr] = [value, PrimValue(sinfo.ndim)]
            if sinfo.dtype is not None:
                args.append(DataTypeImm(sinfo.dtype))
            self.call_void("vm.builtin.check_tensor_info", args + self.err_args(ctx))
            values = sinfo.shape_values
            if values is not None:
                todos.append(_Todo(value, values, ctx, False))
        elif isinstance(sinfo, ShapeStructInfo):
            self.call_void(
                "vm.builtin.check_shape_info",
                [value, PrimValue(sinfo.ndim), *self.err_args(ctx)],
            )
            if sinfo.values is not None:
                todos.append(_Todo(value, sinfo.values, ctx, False))
        elif isinstance(sinfo, PrimStructInfo):
            self.call_void(
                "vm.builtin.check_prim_value_info",
                [value, DataTypeImm(sinfo.dtype), *self.err_args(ctx)],
            )
            if sinfo.value is not None and str(sinfo.dtype).startswith(("int", "uint")):
                todos.append(_Todo(value, [sinfo.value], ctx, True))
        elif isinstance(sinfo, TupleStructInfo):
            self.call_void(
                "vm.builtin.check_tuple_info",
                [value, PrimValue(len(sinfo.fields)), *self.err_args(ctx)],
            )
            for index, field in enumerate(sinfo.fields):
                if _needs_check(field):
                    item = self.emit(TupleGetItem(value, index), field, "_item")
                    self.check(item, field, ctx, todos)
        elif isinstance(sinfo, FuncStructInfo):
            self.call_void("vm.builtin.check_func_info", [value, *self.err_args(ctx)])

    def match(self, todos: list[_Todo]) -> None:
        """Emit the two matching rounds for ``todos`` (see the module docstring)."""
        deferred: list[_Todo] = []
        for todo in todos:
            codes: list[tuple[int, int]] = []
            later = False
            for dim in todo.dims:
                if isinstance(dim, IntImm):
                    codes.append((MatchShapeCode.ASSERT_EQUAL_TO_IMM, int(dim.value)))
                elif isinstance(dim, SymVar):
                    if dim in self.defined:
                        codes.append((MatchShapeCode.ASSERT_EQUAL_TO_LOAD, self.slot(dim)))
                    else:
                        codes.append((MatchShapeCode.STORE_TO_HEAP, self.slot(dim)))
                        self.defined.add(dim)
                elif dim in self.defined:
                    codes.append((MatchShapeCode.ASSERT_EQUAL_TO_LOAD, self.slot(dim)))
                else:
                    codes.append((MatchShapeCode.NO_OP, 0))
                    later = True
            self.emit_match(todo, codes)
            if later:
                deferred.append(todo)
        if not deferred:
            return
        needed = [d for t in deferred for d in t.dims if not isinstance(d, IntImm | SymVar)]
        self.compute(needed)
        for todo in deferred:
            codes = []
            for dim in todo.dims:
                if isinstance(dim, IntImm | SymVar):
                    codes.append((MatchShapeCode.NO_OP, 0))
                else:
                    codes.append((MatchShapeCode.ASSERT_EQUAL_TO_LOAD, self.slot(dim)))
            self.emit_match(todo, codes)

    def emit_match(self, todo: _Todo, codes: list[tuple[int, int]]) -> None:
        if all(code == MatchShapeCode.NO_OP for code, _ in codes):
            return
        err = self.err_args(todo.err_ctx)
        if todo.is_prim:
            ((code, value),) = codes
            args: list[Expr] = [todo.value, self.heap_ref(), PrimValue(code), PrimValue(value)]
            self.call_void("vm.builtin.match_prim_value", args + err)
            return
        flat: list[Expr] = [todo.value, self.heap_ref(), PrimValue(len(codes))]
        for code, value in codes:
            flat += [PrimValue(code), PrimValue(value)]
        self.call_void("vm.builtin.match_shape", flat + err)

    def compute(self, exprs: Sequence[PrimExpr]) -> None:
        """Compute composite expressions into their heap slots with a host shape function."""
        todo: list[PrimExpr] = []
        for expr in exprs:
            if expr in self.defined or expr in todo or isinstance(expr, IntImm | SymVar):
                continue
            missing = [v for v in free_vars(expr) if v not in self.defined]
            if missing:
                names = ", ".join(sorted({v.name for v in missing}))
                raise self.error(
                    f"the symbolic variable(s) {names} in {expr} are not bound by any "
                    "parameter or match_cast before this point"
                )
            todo.append(expr)
        if not todo:
            return
        slot_exprs = [(self.slot(expr), expr) for expr in todo]
        for expr in todo:
            for var in free_vars(expr):
                self.slot(var)
        gvar = self.add_shape_func(slot_exprs)
        self.emit(Call(gvar, [self.heap_ref()], None, [], _VOID), _VOID)
        self.defined.update(todo)

    def add_shape_func(self, slot_exprs: list[tuple[int, PrimExpr]]) -> GlobalVar:
        # Sized symbolically: the heap grows as later slots are assigned, and the function
        # only reads and writes slots that exist when it is made.
        heap = Buffer("H", [SymVar("heap_size", "int64")], "int64")
        stores = []
        for slot, expr in slot_exprs:
            mapping = {
                var: cast(BufferLoad(heap, IntImm("int64", self.slot(var))), var.dtype)
                for var in free_vars(expr)
            }
            value = cast(substitute(expr, mapping), "int64")
            stores.append(BufferStore(heap, value, IntImm("int64", slot)))
        base = "shape_func" if self.name == "main" else f"shape_func_{self.name}"
        name = base
        taken = {g.name_hint for g in self.mod.get_global_vars()}
        while name in taken:
            self.counter += 1
            name = f"{base}{self.counter}"
        func = PrimFunc(
            [heap], SeqStmt(stores), attrs={"global_symbol": name, "tir.is_host_func": True}
        )
        return self.mod.add(name, func)

    # -- body ---------------------------------------------------------------------------------
    def visit_seq(
        self, expr: Expr, ret_sinfo: StructInfo | None, is_function_body: bool = False
    ) -> SeqExpr:
        """Lower a function body or branch; returns a SeqExpr of one block."""
        outer, self.bindings = self.bindings, []
        saved = set(self.defined)
        if is_function_body:
            self.bindings, outer = outer, []
        try:
            if isinstance(expr, SeqExpr):
                for block in expr.blocks:
                    for binding in block.bindings:
                        self.binding_name = repr(binding.var.name_hint)
                        self.visit_binding(binding)
                body = expr.body
            else:
                body = expr
            self.binding_name = "<return value>"
            result = self.rewrite(body)
            if is_function_body and ret_sinfo is not None and _needs_check(ret_sinfo):
                result = self.check_return(result, ret_sinfo)
            bindings = self.bindings
        finally:
            self.bindings = outer
            if not is_function_body:
                self.defined = saved
        blocks = [BindingBlock(bindings)] if bindings else []
        return SeqExpr(blocks, result)

    def check_return(self, result: Expr, ret_sinfo: StructInfo) -> Expr:
        derived = result.struct_info
        if derived is not None:
            try:
                if struct_info_base_check(ret_sinfo, derived) == BaseCheckResult.PASS:
                    return result  # statically proved: no run-time check needed
            except Exception:
                pass
        if not isinstance(result, Var):
            result = self.emit(result, derived or ret_sinfo, "ret")
        ctx = f"ErrorContext(fn={self.name}, loc=return, annotation={ret_sinfo.script()}) "
        todos: list[_Todo] = []
        self.check(result, ret_sinfo, ctx, todos)
        self.match(todos)
        return result

    def visit_binding(self, binding: Binding) -> None:
        value = self.rewrite(binding.value)
        if isinstance(binding, MatchCast):
            sinfo = binding.struct_info
            ctx = (
                f"ErrorContext(fn={self.name}, loc=match_cast, var={binding.var.name_hint}, "
                f"ty={sinfo.script()}) "
            )
            if not isinstance(value, Var):
                value = self.emit(value, value.struct_info or sinfo, "_cast")
            todos: list[_Todo] = []
            self.check(value, sinfo, ctx, todos)
            self.match(todos)
            self.bindings.append(MatchCast(binding.var, value, sinfo, binding.span))
            return
        if value is binding.value:
            self.bindings.append(binding)
        else:
            self.bindings.append(VarBinding(binding.var, value, binding.span))

    def rewrite(self, expr: Expr) -> Expr:
        """``expr`` with symbolic shapes and prim values replaced by heap reads."""
        if isinstance(expr, ShapeExpr):
            if all(isinstance(v, IntImm) for v in expr.values):
                return expr
            return self.make_shape(expr)
        if isinstance(expr, PrimValue):
            if isinstance(expr.value, IntImm) or not isinstance(expr.value, PrimExpr):
                return expr
            if not free_vars(expr.value):
                return expr
            return self.make_prim_value(expr)
        if isinstance(expr, Tuple):
            fields = [self.rewrite(f) for f in expr.fields]
            if all(a is b for a, b in zip(fields, expr.fields, strict=True)):
                return expr
            return Tuple(fields, expr.span)
        if isinstance(expr, Call):
            args = [self.rewrite(a) for a in expr.args]
            if all(a is b for a, b in zip(args, expr.args, strict=True)):
                return expr
            return Call(expr.op, args, expr.attrs, expr.sinfo_args, expr.struct_info, expr.span)
        if isinstance(expr, If):
            cond = self.rewrite(expr.cond)
            true_branch = self.visit_seq(expr.true_branch, None)
            false_branch = self.visit_seq(expr.false_branch, None)
            return If(cond, true_branch, false_branch, expr.struct_info, expr.span)
        if isinstance(expr, TupleGetItem):
            inner = self.rewrite(expr.tuple_value)
            if inner is expr.tuple_value:
                return expr
            return TupleGetItem(inner, expr.index, expr.span)
        return expr

    def load_codes(self, values: Sequence[PrimExpr]) -> list[Expr]:
        self.compute([v for v in values if not isinstance(v, IntImm | SymVar)])
        args: list[Expr] = []
        for value in values:
            if isinstance(value, IntImm):
                args += [PrimValue(MakeShapeCode.USE_IMM), PrimValue(int(value.value))]
                continue
            if isinstance(value, SymVar) and value not in self.defined:
                raise self.error(
                    f"the symbolic variable {value.name} is not bound by any parameter or "
                    "match_cast before this point"
                )
            args += [PrimValue(MakeShapeCode.LOAD_SHAPE), PrimValue(self.slot(value))]
        return args

    def make_shape(self, expr: ShapeExpr) -> Var:
        codes = self.load_codes(expr.values)
        sinfo = ShapeStructInfo(expr.values)
        args = [self.heap_ref(), PrimValue(len(expr.values)), *codes]
        return self.emit(
            Call(ExternFunc("vm.builtin.make_shape"), args, None, [sinfo], sinfo), sinfo, "shape"
        )

    def make_prim_value(self, expr: PrimValue) -> Var:
        codes = self.load_codes([expr.value])
        sinfo = expr.struct_info or PrimStructInfo("int64")
        call = Call(
            ExternFunc("vm.builtin.make_prim_value"),
            [self.heap_ref(), *codes],
            None,
            [sinfo],
            sinfo,
        )
        return self.emit(call, sinfo, "prim")


def _needs_check(sinfo: StructInfo) -> bool:
    """Whether a value of ``sinfo`` has anything to check at run time (an Object has not)."""
    return not isinstance(sinfo, ObjectStructInfo)
