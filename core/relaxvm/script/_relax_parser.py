"""The ``@R.function`` parser: a Python function's AST to a Relax :class:`Function`.

Each function is built with its own :class:`~relaxvm.ir.relax.BlockBuilder`, so every binding
is normalized and gets its StructInfo from op inference as it is parsed; an inference error is
reported at the call that caused it. Calls nested in arguments (``R.add(R.multiply(x, x), x)``)
are bound to fresh variables first, exactly as the BlockBuilder's normalization does.
"""

from __future__ import annotations

import ast
from typing import Any

from ..ir import relax as rx
from ..ir.relax.op import elementwise as rop
from ..ir.relax.struct_info import FuncStructInfo, ObjectStructInfo, StructInfo, TupleStructInfo
from ..ir.relax.subtype import BaseCheckResult, struct_info_base_check
from . import relax as R
from ._eval import Evaluator, _cause
from ._relax_values import _const_of_array, _convert_to_expr, check_direct_prim_call, emit_te
from ._source import ScriptError, Source
from ._tir_parser import _check_plain_args, _is_docstring, declared_sym_vars, is_call_of
from ._tir_parser import is_declaration as _is_declaration

__all__ = ["ModuleRef", "RelaxParser"]

_LEAVES = (
    rx.Var, rx.Constant, rx.ShapeExpr, rx.PrimValue, rx.StringImm, rx.DataTypeImm,
    rx.GlobalVar, rx.ExternFunc, rx.Op, rx.Tuple,
)  # fmt: skip
_RELAX_BINOPS = {
    ast.Add: rop.add,
    ast.Sub: rop.subtract,
    ast.Mult: rop.multiply,
    ast.Div: rop.divide,
    ast.FloorDiv: rop.floor_divide,
    ast.Pow: rop.power,
}


class ModuleRef:
    """What ``cls`` (or the class name) means inside an ``@I.ir_module`` class: its functions
    by name, as GlobalVars."""

    _explains_missing_attributes = True

    def __init__(self, name: str, gvars: dict[str, rx.GlobalVar]) -> None:
        self._name = name
        self._gvars = gvars
        # Collects the PrimFuncs that ``R.emit_te`` makes in any function of the module.
        self._te_builder = rx.BlockBuilder()

    def te_functions(self) -> list[tuple[rx.GlobalVar, Any]]:
        """The PrimFuncs made by ``R.emit_te`` in the module's functions."""
        return list(self._te_builder._mod)

    def __getattr__(self, attr: str) -> rx.GlobalVar:
        gvars = self.__dict__.get("_gvars", {})
        if attr in gvars:
            return gvars[attr]
        raise AttributeError(
            f"module '{self.__dict__.get('_name')}' has no function '{attr}'; it has "
            f"{', '.join(sorted(gvars)) or 'none'}"
        )

    def __dir__(self) -> list[str]:
        return sorted(self._gvars)


class RelaxParser(Evaluator):
    """Parses one ``@R.function`` definition (and the functions nested in it)."""

    language = "Relax function"

    def __init__(
        self,
        source: Source,
        env: dict[str, Any],
        module: ModuleRef | None = None,
        prim_funcs: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(source, env)
        self.module = module
        self.prim_funcs = prim_funcs
        self.bb = rx.BlockBuilder()
        self._root: ast.AST | None = None
        # In a dataflow block: the statement that assigns each output for the last time.
        self._outputs: dict[str, ast.stmt] | None = None

    # ---- names ------------------------------------------------------------------------------
    def lookup(self, name: str, node: ast.AST) -> Any:
        found, value = self.lookup_script(name)
        if found:
            return value
        if self.module is not None:
            if name in ("cls", self.module._name):
                return self.module
            if name in self.module._gvars:
                return self.module._gvars[name]
        return super().lookup(name, node)

    # ---- signatures -------------------------------------------------------------------------
    def annotation(self, node: ast.expr, where: str) -> StructInfo:
        value = self.eval(node)
        try:
            return R.as_struct_info(value, where)
        except TypeError as err:
            raise self.error(node, str(err)) from None

    def _params(self, node: ast.FunctionDef) -> list[rx.Var]:
        _check_plain_args(self, node)
        declared_sym_vars(self, node.body)
        params = []
        for arg in node.args.args:
            if arg.annotation is None:
                raise self.error(
                    arg,
                    f"parameter '{arg.arg}' of '{node.name}' needs a struct info annotation, "
                    'e.g. R.Tensor((n, 4), "float32")',
                )
            sinfo = self.annotation(arg.annotation, f"parameter '{arg.arg}'")
            param = rx.Var(arg.arg, sinfo)
            # Later annotations may name it: R.Tensor(shape) with `shape: R.Shape(ndim=2)`.
            self.define(arg.arg, param)
            params.append(param)
        return params

    def signature(self, node: ast.FunctionDef, pure: bool) -> FuncStructInfo:
        """The FuncStructInfo a module function has before its body is parsed (for calls to
        functions defined later, and recursion); the return annotation or R.Object."""
        with self.active(), self.scope():
            params = self._params(node)
            ret: StructInfo = ObjectStructInfo()
            if node.returns is not None:
                ret = self.annotation(node.returns, "return annotation")
            return FuncStructInfo([p.struct_info for p in params], ret, pure)  # type: ignore[misc]

    # ---- functions --------------------------------------------------------------------------
    def parse_function(
        self, node: ast.FunctionDef, private: bool = False, pure: bool = True
    ) -> rx.Function:
        with self.active():
            return self._function(node, private, pure)

    def _function(self, node: ast.FunctionDef, private: bool, pure: bool) -> rx.Function:
        saved_bb, saved_outputs = self.bb, self._outputs
        self.bb, self._outputs = rx.BlockBuilder(), None
        try:
            with self.scope():
                params = self._params(node)
                ret = None
                if node.returns is not None:
                    ret = self.annotation(node.returns, "return annotation")
                attrs: dict[str, Any] = {}
                body: list[ast.stmt] = []
                for stmt in node.body:
                    if is_call_of(self, stmt, R.func_attr):
                        attrs.update(self._func_attr(stmt))
                    elif not _is_declaration(self, stmt) and not _is_docstring(stmt):
                        body.append(stmt)
                if not body or not isinstance(body[-1], ast.Return):
                    raise self.error(
                        body[-1] if body else node,
                        f"function '{node.name}' must end with a return statement",
                    )
                with self.bb.function(node.name, params, attrs, private, pure):
                    self.stmts(body[:-1])
                    self._return(body[-1])  # type: ignore[arg-type]
                func = self.bb.get()[node.name]
        finally:
            self.bb, self._outputs = saved_bb, saved_outputs
        if ret is not None and ret != func.ret_struct_info:
            actual = func.ret_struct_info
            if struct_info_base_check(ret, actual) == BaseCheckResult.FAIL_L0:
                # Only an annotation that no value of the body's struct info can satisfy is
                # refused; a narrower one (a known shape for an R.Object, other symbolic
                # dims) is trusted, as TVM does, and VMShapeLower checks the returned value
                # against it at run time.
                raise self.error(
                    node.returns,
                    f"function '{node.name}' is annotated to return {ret} but its body returns "
                    f"{actual}, which can never match it; fix the annotation",
                )
            func = rx.Function(func.params, func.body, ret, func.is_pure, func.attrs)
        return func

    def _func_attr(self, stmt: ast.stmt) -> dict[str, Any]:
        call = stmt.value  # type: ignore[attr-defined]
        value = self.eval(call.args[0]) if len(call.args) == 1 and not call.keywords else None
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise self.error(call, 'R.func_attr expects one dict with str keys, e.g. {"k": 1}')
        return value

    def _return(self, stmt: ast.Return) -> None:
        if stmt.value is None:
            raise self.error(stmt, "a Relax function must return a value")
        value = self.eval_value(stmt.value)
        expr = self.as_expr(value, stmt.value)
        self.guard(stmt.value, lambda: self.bb.emit_func_output(expr))

    # ---- statements -------------------------------------------------------------------------
    def stmts(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            try:
                self.stmt(stmt)
            except ScriptError:
                raise
            except Exception as err:
                raise self.wrap_error(stmt, err) from _cause(err)

    def stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.error(stmt, "chained assignment (a = b = ...) is not supported")
            if _is_declaration(self, stmt):
                # `n, m = T.int64(), T.int64()` in a dataflow block or an `if` branch declares
                # symbolic variables (no binding), as at the top of the function body.
                declared_sym_vars(self, [stmt])
                return
            target = stmt.targets[0]
            value = self.eval_value(stmt.value)
            if isinstance(target, ast.Name):
                self.bind(target.id, value, stmt)
            elif isinstance(target, ast.Tuple):
                self._unpack(target, value, stmt)
            else:
                raise self.error(target, "expected a name or a tuple of names to assign to")
        elif isinstance(stmt, ast.AnnAssign):
            if not isinstance(stmt.target, ast.Name) or stmt.value is None:
                raise self.error(stmt, "expected `name: annotation = value`")
            ann = self.annotation(stmt.annotation, f"annotation of '{stmt.target.id}'")
            self.bind(stmt.target.id, self.eval_value(stmt.value), stmt, (ann, stmt.annotation))
        elif isinstance(stmt, ast.Expr):
            self._expr_stmt(stmt)
        elif isinstance(stmt, ast.With):
            self._dataflow(stmt)
        elif isinstance(stmt, ast.If):
            self._if(stmt)
        elif isinstance(stmt, ast.FunctionDef):
            self._local_function(stmt)
        elif isinstance(stmt, ast.Return):
            raise self.error(stmt, "return may only be the last statement of a function body")
        elif isinstance(stmt, ast.Pass):
            return
        elif isinstance(stmt, ast.Nonlocal):
            self.nonlocal_stmt(stmt)
        elif isinstance(stmt, (ast.For, ast.While)):
            raise self.error(
                stmt,
                f"{'a `for`' if isinstance(stmt, ast.For) else 'a `while`'} loop is not "
                "supported in a Relax function (write loops in a @T.prim_func, or recurse)",
            )
        else:
            raise self.unsupported(stmt, "a Relax function")

    def _expr_stmt(self, stmt: ast.Expr) -> None:
        if _is_docstring(stmt):
            return
        if is_call_of(self, stmt, R.output):
            raise self.error(stmt, "R.output may only be the last statement of `with R.dataflow()`")
        if is_call_of(self, stmt, R.func_attr):
            raise self.error(stmt, "R.func_attr must be a statement of the function body")
        value = self.eval_value(stmt.value)
        expr = self.as_expr(value, stmt.value)
        if isinstance(expr, _LEAVES):
            raise self.error(stmt, "this expression statement has no effect")
        var = self.emit(expr, stmt.value)
        # TVM's rule: only a call with no result (R.print, R.assert_op...) may stand alone;
        # a value left unbound is almost always a forgotten assignment. A direct PrimFunc
        # call (which TVM types as void) writes its outputs in place.
        sinfo = var.struct_info
        prim_call = (
            isinstance(expr, rx.Call)
            and isinstance(expr.op, rx.GlobalVar)
            and expr.op.name_hint in self.prim_funcs
        )
        if not prim_call and not (isinstance(sinfo, TupleStructInfo) and not sinfo.fields):
            raise self.error(
                stmt,
                f"non-void Relax expressions must be bound to a variable, but this expression "
                f"of struct info {sinfo} is used as a statement (write `name = ...`)",
            )

    def bind(
        self,
        name: str,
        value: Any,
        stmt: ast.stmt,
        ann: tuple[StructInfo, ast.expr] | None = None,
    ) -> Any:
        """Bind ``name`` to ``value``: emit a binding for Relax values; Python values (struct
        info, symbolic expressions, numbers) just get the name."""
        output = self._outputs is not None and self._outputs.get(name) is stmt
        node = getattr(stmt, "value", None) or stmt
        if isinstance(value, R.MatchCastValue):
            if output:
                raise self.error(
                    stmt,
                    f"'{name}' is a dataflow output bound by R.match_cast; bind the match_cast "
                    f"to another name and assign that to '{name}'",
                )
            var = self.guard(node, lambda: self.bb.match_cast(value.value, value.struct_info, name))
        elif isinstance(value, (rx.RelaxExpr, list, tuple)):
            expr = self.as_expr(value, node)
            emit = self.bb.emit_output if output else self.bb.emit
            var = self.guard(node, lambda: emit(expr, name))
        else:
            if ann is not None:
                raise self.error(stmt, f"cannot annotate '{name}': {value!r} is not a Relax value")
            self.define(name, value)
            return value
        if ann is not None:
            self._annotate(var, *ann)
        self.define(name, var)
        return var

    def _annotate(self, var: rx.Var, sinfo: StructInfo, node: ast.expr) -> None:
        actual = var.struct_info
        if actual == sinfo:
            return
        if struct_info_base_check(sinfo, actual) != BaseCheckResult.PASS:  # type: ignore[arg-type]
            raise self.error(
                node,
                f"the annotation {sinfo} does not match the value's struct info {actual}; to "
                f"check it at run time write R.match_cast(value, {sinfo})",
            )
        # TVM's annotate_struct_info: the variable takes the (wider) annotated struct info.
        object.__setattr__(var, "struct_info", sinfo)

    def _unpack(self, target: ast.Tuple, value: Any, stmt: ast.stmt) -> None:
        names = []
        for elt in target.elts:
            if not isinstance(elt, ast.Name):
                raise self.error(elt, "tuple unpacking needs plain names on the left side")
            names.append(elt.id)
        if isinstance(value, (list, tuple)):
            if len(value) != len(names):
                raise self.error(stmt, f"cannot unpack {len(value)} values into {len(names)} names")
            for name, item in zip(names, value, strict=True):
                self.bind(name, item, stmt)
            return
        expr = self.as_expr(value, stmt.value)  # type: ignore[attr-defined]
        if not isinstance(expr, rx.Var):
            expr = self.emit(expr, stmt.value)  # type: ignore[attr-defined]
        sinfo = expr.struct_info
        if not isinstance(sinfo, TupleStructInfo) or len(sinfo.fields) != len(names):
            raise self.error(
                stmt, f"cannot unpack a value of struct info {sinfo} into {len(names)} names"
            )
        for index, name in enumerate(names):
            self.bind(name, rx.TupleGetItem(expr, index), stmt)

    def _dataflow(self, stmt: ast.With) -> None:
        if len(stmt.items) != 1 or stmt.items[0].optional_vars is not None:
            raise self.error(stmt, "only `with R.dataflow():` is supported in a Relax function")
        if self.eval(stmt.items[0].context_expr) is not R._DATAFLOW:
            raise self.error(stmt.items[0], "only `with R.dataflow():` is supported")
        if self._outputs is not None:
            raise self.error(stmt, "dataflow blocks do not nest")
        body = [s for s in stmt.body if not _is_docstring(s)]
        outputs: list[str] = []
        if body and is_call_of(self, body[-1], R.output):
            call = body.pop().value  # type: ignore[attr-defined]
            for arg in call.args:
                if not isinstance(arg, ast.Name):
                    raise self.error(arg, "R.output takes the names of variables of the block")
                outputs.append(arg.id)
        last: dict[str, ast.stmt] = {}
        for inner in body:
            for name in _assigned_names(inner):
                last[name] = inner
        for index, name in enumerate(outputs):
            if name not in last:
                raise self.error(
                    call.args[index], f"R.output names '{name}', which this block does not assign"
                )
        self._outputs = {name: last[name] for name in outputs}
        try:
            with self.bb.dataflow(), self.scope() as block_scope:
                self.stmts(body)
        finally:
            self._outputs = None
        for name in outputs:
            self.define(name, block_scope[name])

    def _if(self, stmt: ast.If) -> None:
        if self._outputs is not None:
            raise self.error(stmt, "an `if` may not appear inside a dataflow block")
        if not stmt.orelse:
            raise self.error(stmt, "an `if` in a Relax function needs an `else` branch")
        cond = self.as_expr(self.eval_value(stmt.test), stmt.test)
        then_name, then_seq = self._branch(stmt.body, stmt)
        else_name, else_seq = self._branch(stmt.orelse, stmt)
        if then_name != else_name:
            raise self.error(
                stmt.orelse[-1],
                f"both branches of an `if` must assign the same variable last; the then branch "
                f"assigns '{then_name}', the else branch '{else_name}'",
            )
        var = self.guard(stmt, lambda: self.bb.emit(rx.If(cond, then_seq, else_seq), then_name))
        self.define(then_name, var)

    def _branch(self, stmts: list[ast.stmt], parent: ast.If) -> tuple[str, rx.SeqExpr]:
        last = stmts[-1]
        target = last.targets[0] if isinstance(last, ast.Assign) else getattr(last, "target", None)
        if not isinstance(last, (ast.Assign, ast.AnnAssign)) or not isinstance(target, ast.Name):
            raise self.error(
                last, "each branch of an `if` must end by assigning its result, e.g. `y = ...`"
            )
        saved = self.bb
        self.bb = rx.BlockBuilder()
        try:
            with self.scope(), self.bb.function("branch", []):
                self.stmts(stmts[:-1])
                value = self.eval_value(last.value)  # type: ignore[arg-type]
                ann = None
                if isinstance(last, ast.AnnAssign):
                    ann = (self.annotation(last.annotation, "annotation"), last.annotation)
                # A variable as the result is the branch's body; no new binding is needed
                # unless an annotation widens its struct info.
                plain = ann is None or ann[0] == getattr(value, "struct_info", None)
                expr = value if isinstance(value, rx.Var) and plain else None
                result = expr if expr is not None else self.bind(target.id, value, last, ann)
                self.bb.emit_func_output(self.as_expr(result, last.value))  # type: ignore[arg-type]
            return target.id, self.bb.get()["branch"].body
        finally:
            self.bb = saved

    def _local_function(self, stmt: ast.FunctionDef) -> None:
        decorators = [
            self.eval(d.func if isinstance(d, ast.Call) else d) for d in stmt.decorator_list
        ]
        if decorators != [R.function]:
            raise self.error(stmt, "a function defined in a Relax function needs @R.function")
        pure = True
        dec = stmt.decorator_list[0]
        if isinstance(dec, ast.Call):
            pure = bool({k.arg: self.eval(k.value) for k in dec.keywords}.get("pure", True))
        func = self._function(stmt, True, pure)
        self.bind(stmt.name, func, stmt)

    # ---- expressions ------------------------------------------------------------------------
    def eval_value(self, node: ast.expr) -> Any:
        """The value of a statement's right side; nested calls in it are bound first."""
        saved, self._root = self._root, node
        try:
            return self.eval(node)
        finally:
            self._root = saved

    def eval_call(self, node: ast.Call) -> Any:
        return self._nested(node, super().eval_call(node))

    def subscript(self, node: ast.Subscript, value: Any) -> Any:
        if isinstance(value, rx.RelaxExpr):
            index = self.eval(node.slice)
            if not isinstance(index, int):
                raise self.error(node.slice, "a tuple index must be an integer constant")
            sinfo = value.struct_info
            if sinfo is not None and not isinstance(sinfo, TupleStructInfo):
                raise self.error(node, f"only tuples can be indexed, got a value of {sinfo}")
            return self._nested(node, rx.TupleGetItem(value, index))
        return super().subscript(node, value)

    def binop(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        if isinstance(left, rx.RelaxExpr) or isinstance(right, rx.RelaxExpr):
            builder = _RELAX_BINOPS.get(type(node.op))
            if builder is None:
                raise self.error(node, "this operator is not defined on Relax values")
            return self._nested(node, builder(left, right))
        return super().binop(node, left, right)

    def apply(self, node: ast.Call, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if func is R.emit_te:
            return emit_te(self, node, args, kwargs)
        # Captured numpy arrays are constants, as TVM's op argument converter makes them.
        if getattr(func, "__module__", "").startswith("relaxvm.ir.relax.op"):
            args = [_const_of_array(arg) for arg in args]
        if isinstance(func, rx.GlobalVar) and func.name_hint in self.prim_funcs:
            check_direct_prim_call(self, node, func)
        if isinstance(func, (rx.Var, rx.GlobalVar, rx.ExternFunc)):
            if kwargs:
                raise self.error(node, "calls of Relax functions take no keyword arguments")
            return rx.Call(func, [self.as_expr(arg, node) for arg in args])
        return super().apply(node, func, args, kwargs)

    def _nested(self, node: ast.AST, value: Any) -> Any:
        if node is self._root or not isinstance(value, rx.RelaxExpr):
            return value
        if isinstance(value, (*_LEAVES, rx.Function)):
            return value
        return self.emit(value, node)

    def as_expr(self, value: Any, node: ast.AST | None) -> rx.RelaxExpr:
        if isinstance(value, rx.RelaxExpr):
            return value
        if isinstance(value, (list, tuple)):
            return rx.Tuple([self.as_expr(item, node) for item in value])
        converted = _convert_to_expr(value)
        if converted is not None:
            return converted
        raise self.error(
            node, f"expected a Relax value (a variable, call, constant or tuple), got {value!r}"
        )

    def emit(self, expr: rx.RelaxExpr, node: ast.AST, name: str = "") -> rx.Var:
        return self.guard(node, lambda: self.bb.emit(expr, name))  # type: ignore[no-any-return]

    def guard(self, node: ast.AST, build: Any) -> Any:
        """Run a BlockBuilder step; its errors (op inference included) point at ``node``."""
        try:
            return build()
        except ScriptError:
            raise
        except Exception as err:
            raise self.wrap_error(node, err) from _cause(err)


def _assigned_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.If):
        return [n for inner in (*stmt.body, *stmt.orelse) for n in _assigned_names(inner)]
    if isinstance(stmt, ast.Assign):
        names: list[str] = []
        for target in stmt.targets:
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            names.extend(e.id for e in elts if isinstance(e, ast.Name))
        return names
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    return []
