"""The BlockBuilder: build Relax functions binding by binding, in A-normal form.

Like TVM's ``relax.BlockBuilder``, it keeps the function and block being built, and every
expression handed to :meth:`BlockBuilder.emit` is *normalized* first: nested non-leaf
sub-expressions are bound to fresh variables (so every call's arguments are leaves or tuples
of leaves) and every new call gets its StructInfo from operator inference. The finished
functions (and the PrimFuncs made by :meth:`BlockBuilder.emit_te`) are collected in an
:class:`IRModule` returned by :meth:`BlockBuilder.get`.

>>> x = Var("x", TensorStructInfo([3, 4], "float32"))
>>> bb = BlockBuilder()
>>> with bb.function("main", [x]):
...     with bb.dataflow():
...         lv = bb.emit(op.add(x, x))
...         gv = bb.emit_output(op.multiply(lv, x))
...     bb.emit_func_output(gv)
>>> mod = bb.get()
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ...errors import RelaxVMError
from ..arith import Analyzer
from ._base import RelaxExpr, update_struct_info
from ._call_sinfo import declared, derive_return, has_inference, join
from .block import BindingBlock, DataflowBlock, Function, MatchCast, SeqExpr, VarBinding
from .block_builder_tvm import TVMBuilderMethods
from .expr import (
    Call,
    Constant,
    DataflowVar,
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
from .module import IRModule
from .op.registry import infer_struct_info
from .struct_info import (
    FuncStructInfo,
    StructInfo,
)

__all__ = ["BlockBuilder", "BlockBuilderError"]

# Expressions that may appear directly as call arguments (TVM's "leaf" nodes); everything
# else is bound to a variable first. Tuples are kept inline, with their fields normalized.
_LEAVES = (Var, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, GlobalVar, ExternFunc, Op)


class BlockBuilderError(RelaxVMError, ValueError):
    """The BlockBuilder was used out of order (emit outside a function, an open function
    at ``get()``...) or was given something it cannot normalize."""


class _FunctionFrame:
    """The function being built: its signature and the blocks finished so far."""

    def __init__(
        self,
        name: str,
        params: list[Var] | None,
        attrs: dict[str, Any],
        private: bool,
        pure: bool,
    ) -> None:
        self.name = name
        self.params = params
        self.attrs = attrs
        self.private = private
        self.pure = pure
        self.blocks: list[BindingBlock] = []
        self.finished = False


class BlockBuilder(TVMBuilderMethods):
    """Build Relax functions into an :class:`IRModule`, normalizing to A-normal form.

    TVM's other spellings (``call_te``, ``emit_normalized``, ``begin_scope``/``end_scope``,
    ``finalize``) come from :class:`~.block_builder_tvm.TVMBuilderMethods`.

    Parameters
    ----------
    mod : IRModule, optional
        A module to add functions to (it is copied, not changed in place).
    """

    def __init__(self, mod: IRModule | None = None) -> None:
        if mod is not None and not isinstance(mod, IRModule):
            raise BlockBuilderError(
                f"BlockBuilder: mod must be an IRModule, got {type(mod).__name__}"
            )
        self._mod = mod.copy() if mod is not None else IRModule()
        self._func: _FunctionFrame | None = None
        # The bindings of the block being filled; a dataflow block while _in_dataflow.
        self._bindings: list[Any] = []
        self._in_dataflow = False
        # Names used so far -> the last suffix tried for them (TVM's NameSupply).
        self._name_counts: dict[str, int] = {}
        self._analyzer = Analyzer()
        self._scopes: list[list[Var]] = []  # begin_scope/end_scope (TVM's variable scopes)
        # Blocks suspended by _begin_*_block (TVM's private block API): (bindings, dataflow).
        self._block_stack: list[tuple[list[Any], bool]] = []

    # ---- scopes ---------------------------------------------------------------------------
    @contextmanager
    def function(
        self,
        name: str,
        params: Var | Sequence[Var] | None = None,
        attrs: Mapping[str, Any] | None = None,
        private: bool = False,
        pure: bool = True,
    ) -> Iterator[None]:
        """Scope of a new function; end it with :meth:`emit_func_output` inside the scope.

        Parameters
        ----------
        name : str
            The GlobalVar name in the module; public functions also get it as their
            ``global_symbol`` attribute.
        params : Var or sequence of Var, optional
            The parameters (each with struct info); may instead be given to
            :meth:`emit_func_output`.
        attrs : mapping, optional
            Extra function attributes.
        private : bool
            Leave out ``global_symbol`` (the function is not exported).
        pure : bool
            Whether the function is pure.
        """
        if self._func is not None:
            raise BlockBuilderError(
                f"BlockBuilder.function('{name}'): function '{self._func.name}' is still being "
                "built; nested functions are not supported (finish it with emit_func_output)"
            )
        if not isinstance(name, str) or not name:
            raise BlockBuilderError(
                f"BlockBuilder.function: name must be a non-empty str, got {name!r}"
            )
        if name in self._mod:
            raise BlockBuilderError(
                f"BlockBuilder.function('{name}'): the module already has a function of that name"
            )
        frame = _FunctionFrame(
            name,
            None if params is None else self._check_params(name, params),
            dict(attrs or {}),
            private,
            pure,
        )
        self._func, self._bindings, self._in_dataflow = frame, [], False
        self._enter_current()  # BlockBuilder.current() is this builder inside the scope
        try:
            try:
                yield
            except BaseException:
                self._func, self._bindings, self._in_dataflow = None, [], False
                raise
            if not frame.finished:
                self._func, self._bindings, self._in_dataflow = None, [], False
                raise BlockBuilderError(
                    f"BlockBuilder.function('{name}'): the scope ended without emit_func_output"
                )
        finally:
            self._exit_current()

    @contextmanager
    def dataflow(self) -> Iterator[None]:
        """Scope of a dataflow block: :meth:`emit` makes DataflowVars, :meth:`emit_output`
        the Vars visible after the block."""
        func = self._require_function("dataflow")
        if self._in_dataflow:
            raise BlockBuilderError(
                f"BlockBuilder.dataflow: already inside a dataflow block of function "
                f"'{func.name}'; dataflow blocks do not nest"
            )
        self._flush_block()
        self._in_dataflow = True
        try:
            yield
        finally:
            if self._func is func and self._in_dataflow:
                self._flush_block()
                self._in_dataflow = False

    # ---- emitting -------------------------------------------------------------------------
    def emit(self, expr: RelaxExpr, name_hint: str = "") -> Var:
        """Normalize ``expr`` and bind it to a new variable (a DataflowVar inside a dataflow
        block); returns the variable."""
        self._require_function("emit")
        value = self.normalize(self._check_expr("emit", expr))
        return self._bind(value, self._in_dataflow, name_hint)

    def emit_output(self, output: RelaxExpr | Sequence[RelaxExpr], name_hint: str = "") -> Var:
        """Bind ``output`` to a plain Var that stays visible after the dataflow block."""
        func = self._require_function("emit_output")
        if not self._in_dataflow:
            raise BlockBuilderError(
                f"BlockBuilder.emit_output: called outside a dataflow block in function "
                f"'{func.name}'; use emit there"
            )
        value = self.normalize(self._as_expr(output, "emit_output"))
        return self._bind(value, False, name_hint)

    def match_cast(self, value: RelaxExpr, struct_info: StructInfo, name_hint: str = "") -> Var:
        """Emit ``var = R.match_cast(value, struct_info)`` and return the new variable.

        Symbolic dimensions seen in ``struct_info`` for the first time are defined by it.
        """
        self._require_function("match_cast")
        if not isinstance(struct_info, StructInfo):
            raise BlockBuilderError(
                f"BlockBuilder.match_cast: struct_info must be a StructInfo, got {struct_info!r}"
            )
        leaf = self._normalize_arg(self._check_expr("match_cast", value))
        var = self._new_var(name_hint, struct_info, self._in_dataflow)
        self._bindings.append(MatchCast(var, leaf, struct_info))
        return var

    def emit_func_output(
        self,
        output: RelaxExpr | Sequence[RelaxExpr],
        params: Var | Sequence[Var] | None = None,
        name_hint: str = "",
    ) -> GlobalVar:
        """End the current function with result ``output`` and add it to the module.

        Returns the function's GlobalVar (TVM returns nothing; the GlobalVar saves a lookup).
        """
        func = self._require_function("emit_func_output")
        if func.finished:
            raise BlockBuilderError(
                f"BlockBuilder.emit_func_output: function '{func.name}' already has its output"
            )
        if self._in_dataflow:
            raise BlockBuilderError(
                f"BlockBuilder.emit_func_output: called inside a dataflow block of function "
                f"'{func.name}'; close the block and return one of its outputs"
            )
        if params is not None:
            if func.params is not None:
                raise BlockBuilderError(
                    f"BlockBuilder.emit_func_output: function '{func.name}' got its params "
                    "already in function(); give them once"
                )
            func.params = self._check_params(func.name, params)
        if func.params is None:
            raise BlockBuilderError(
                f"BlockBuilder.emit_func_output: function '{func.name}' has no params; pass "
                "them to function() or emit_func_output()"
            )
        result = self._normalize_arg(self._as_expr(output, "emit_func_output"), name_hint)
        for leaf in result.fields if isinstance(result, Tuple) else (result,):
            if isinstance(leaf, DataflowVar):
                raise BlockBuilderError(
                    f"BlockBuilder.emit_func_output: function '{func.name}' returns dataflow "
                    f"variable '{leaf.name_hint}', which is not visible outside its block; "
                    "emit it with emit_output"
                )
        self._flush_block()
        attrs = dict(func.attrs)
        if not func.private:
            attrs["global_symbol"] = func.name
        body = SeqExpr(func.blocks, result)
        built = Function(func.params, body, result.struct_info, func.pure, attrs)
        func.finished = True
        self._func, self._bindings = None, []
        return self._mod.add(func.name, built)

    # ---- the module -----------------------------------------------------------------------
    def add_func(self, func: Any, func_name: str) -> GlobalVar:
        """Add ``func`` (a Relax Function or PrimFunc) under a unique name made from
        ``func_name``; a PrimFunc equal to one already present is not added twice."""
        from ..structural import structural_equal as tir_equal
        from ..tir.function import PrimFunc

        if isinstance(func, PrimFunc):
            for gvar, existing in self._mod:
                if isinstance(existing, PrimFunc) and tir_equal(
                    _named(func, gvar.name_hint), _named(existing, gvar.name_hint)
                ):
                    return gvar
        elif not isinstance(func, Function):
            raise BlockBuilderError(
                f"BlockBuilder.add_func: expected a relax Function or tir PrimFunc, got "
                f"{type(func).__name__}"
            )
        name = self._unique_global_name(func_name)
        if "global_symbol" in func.attrs:
            # A public function is exported under its (unique) module name; a private one
            # (an emit_te kernel, as in TVM) stays private.
            func = func.with_attr("global_symbol", name)
        return self._mod.add(name, func)

    def update_func(self, gvar: GlobalVar, func: Any) -> None:
        """Replace the function of ``gvar`` in the module."""
        self._mod.update_func(gvar, func)

    def get(self) -> IRModule:
        """The module built so far (a copy); an error while a function is open."""
        if self._func is not None:
            raise BlockBuilderError(
                f"BlockBuilder.get: function '{self._func.name}' is still being built; finish "
                "it with emit_func_output first"
            )
        return self._mod.copy()

    def current_function_name(self) -> str | None:
        """The name of the function being built, or None."""
        return None if self._func is None else self._func.name

    # ---- normalization --------------------------------------------------------------------
    def normalize(self, expr: RelaxExpr) -> RelaxExpr:
        """``expr`` with struct info filled in; nested non-leaf sub-expressions are bound to
        fresh variables in the current block (``expr`` itself is not bound)."""
        expr = self._check_expr("normalize", expr)
        if isinstance(expr, _LEAVES):
            return expr
        if isinstance(expr, Tuple):
            fields = [self._normalize_arg(field) for field in expr.fields]
            return expr if _same(fields, expr.fields) else Tuple(fields, expr.span)
        if isinstance(expr, TupleGetItem):
            value = self._normalize_arg(expr.tuple_value)
            if value is expr.tuple_value and expr.struct_info is not None:
                return expr
            return TupleGetItem(value, expr.index, expr.span)
        if isinstance(expr, Call):
            return self._normalize_call(expr)
        if isinstance(expr, (SeqExpr, Function)):
            # Already structured (e.g. a local function built elsewhere): kept as given.
            return expr
        if isinstance(expr, If):
            return self._normalize_if(expr)
        raise BlockBuilderError(f"BlockBuilder.normalize: cannot normalize a {type(expr).__name__}")

    def _normalize_arg(self, expr: RelaxExpr, name_hint: str = "") -> RelaxExpr:
        """``expr`` as a call argument: leaves and tuples of leaves stay, the rest is bound."""
        value = self.normalize(expr)
        if isinstance(value, (*_LEAVES, Tuple)):
            return value
        if not self._can_bind():
            return value  # nothing to bind into: normalize() outside a function
        return self._bind(value, self._in_dataflow, name_hint)

    def _can_bind(self) -> bool:
        """Whether there is a block to bind sub-expressions into (a function is open)."""
        return self._func is not None

    def _normalize_call(self, call: Call) -> Call:
        op = call.op if isinstance(call.op, _LEAVES) else self._normalize_arg(call.op)
        args = [self._normalize_arg(arg) for arg in call.args]
        if op is call.op and _same(args, call.args) and call.struct_info is not None:
            return call
        if op is call.op and _same(args, call.args):
            new_call = call
        else:
            new_call = Call(op, args, call.attrs, call.sinfo_args, call.struct_info, call.span)
        if new_call.struct_info is None:
            update_struct_info(new_call, self._infer_call(new_call))
        return new_call

    def _infer_call(self, call: Call) -> StructInfo:
        op = call.op
        if isinstance(op, (Op, ExternFunc)):
            if isinstance(op, Op) and not has_inference(op):
                if call.sinfo_args:
                    return declared(call.sinfo_args)
                raise BlockBuilderError(
                    f"BlockBuilder: cannot infer the struct info of a call to op '{op.name}': "
                    "it has no inference rule and the call has no sinfo_args"
                )
            return infer_struct_info(call, self._analyzer)
        callee = op.struct_info
        if isinstance(callee, FuncStructInfo):
            return derive_return(callee, call)
        if call.sinfo_args:
            return declared(call.sinfo_args)
        what = f"function '{op.name_hint}'"  # type: ignore[attr-defined]
        raise BlockBuilderError(
            f"BlockBuilder: cannot infer the struct info of a call to {what}: its struct info "
            f"is {callee} (not a FuncStructInfo) and the call has no sinfo_args; add the "
            "callee to the module first or pass sinfo_args"
        )

    def _normalize_if(self, node: If) -> If:
        # Inside a dataflow block the If is normalized and bound as TVM's builder does; such a
        # module is then not well formed (TVM's rule), which well_formed reports.
        cond = self._normalize_arg(node.cond)
        branches = [self._normalize_branch(b) for b in (node.true_branch, node.false_branch)]
        sinfo = node.struct_info or join(branches[0].struct_info, branches[1].struct_info)
        return If(cond, branches[0], branches[1], sinfo, node.span)

    def _normalize_branch(self, branch: RelaxExpr) -> SeqExpr:
        if isinstance(branch, SeqExpr):
            return branch
        # A branch is its own scope: its bindings go in a (non-dataflow) block of their own,
        # as TVM's normalizer opens a binding block for each branch.
        saved, saved_dataflow = self._bindings, self._in_dataflow
        self._bindings, self._in_dataflow = [], False
        try:
            result = self._normalize_arg(branch)
            blocks = [BindingBlock(self._bindings)] if self._bindings else []
        finally:
            self._bindings, self._in_dataflow = saved, saved_dataflow
        return SeqExpr(blocks, result)

    # ---- helpers --------------------------------------------------------------------------
    def _bind(self, value: RelaxExpr, dataflow: bool, name_hint: str) -> Var:
        if value.struct_info is None:
            raise BlockBuilderError(
                f"BlockBuilder: the value {value} has no struct info after normalization"
            )
        var = self._new_var(name_hint, value.struct_info, dataflow)
        self._bindings.append(VarBinding(var, value))
        return var

    def _new_var(self, name_hint: str, sinfo: StructInfo, dataflow: bool) -> Var:
        if name_hint:
            # A given name is kept as is, and reserved so that fresh names avoid it.
            self._name_counts.setdefault(name_hint, 0)
        else:
            name_hint = self._fresh_name("lv" if dataflow else "gv")
        return (DataflowVar if dataflow else Var)(name_hint, sinfo)

    def _flush_block(self) -> None:
        """Close the block being filled (if it has bindings) into the function's blocks."""
        if self._func is not None and self._bindings:
            block_type = DataflowBlock if self._in_dataflow else BindingBlock
            self._func.blocks.append(block_type(self._bindings))
        self._bindings = []

    def _require_function(self, method: str) -> _FunctionFrame:
        if self._func is None and self._block_stack:
            # A block built by itself (_begin_*_block): emitting needs no function.
            return _FunctionFrame("<block>", None, {}, False, True)
        if self._func is None:
            raise BlockBuilderError(
                f"BlockBuilder.{method}: called outside a function; open one with "
                "`with bb.function(name, params):`"
            )
        if self._func.finished:
            raise BlockBuilderError(
                f"BlockBuilder.{method}: function '{self._func.name}' already has its output"
            )
        return self._func

    def _unique_global_name(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise BlockBuilderError(
                f"BlockBuilder: function name must be a non-empty str, got {name!r}"
            )
        candidate, suffix = name, 1
        while candidate in self._mod:
            candidate, suffix = f"{name}{suffix}", suffix + 1
        return candidate

    @staticmethod
    def _check_params(name: str, params: Var | Sequence[Var]) -> list[Var]:
        listed = [params] if isinstance(params, Var) else list(params)
        for index, param in enumerate(listed):
            if not isinstance(param, Var) or isinstance(param, DataflowVar):
                raise BlockBuilderError(
                    f"BlockBuilder.function('{name}'): parameter {index} must be a plain relax "
                    f"Var, got {type(param).__name__}"
                )
            if param.struct_info is None:
                raise BlockBuilderError(
                    f"BlockBuilder.function('{name}'): parameter {index} ('{param.name_hint}') "
                    "needs struct info"
                )
        return listed

    @staticmethod
    def _check_expr(method: str, value: Any) -> RelaxExpr:
        if not isinstance(value, RelaxExpr):
            raise BlockBuilderError(
                f"BlockBuilder.{method}: expected a Relax expression, got {type(value).__name__}"
            )
        return value

    def _as_expr(self, output: Any, method: str) -> RelaxExpr:
        """``output``, with a Python list or tuple of expressions made a relax Tuple."""
        if isinstance(output, (list, tuple)) and not isinstance(output, RelaxExpr):
            return Tuple([self._check_expr(method, item) for item in output])
        return self._check_expr(method, output)


def _named(func: Any, name: str) -> Any:
    """``func`` with ``global_symbol`` set to ``name`` when it has one (for comparisons)."""
    return func.with_attr("global_symbol", name) if "global_symbol" in func.attrs else func


def _same(new: Sequence[RelaxExpr], old: Sequence[RelaxExpr]) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True))
