"""The well-formedness checker: does a module or function follow the rules of Relax IR?

``well_formed(mod)`` returns None when the IR is well formed and raises
:class:`WellFormedError` at the first violation, with a message naming the function and the
offending binding, e.g. ``in function 'main', binding 'y = R.add(x, z)': variable 'z' is used
before it is defined``. The rules follow TVM's ``relax.analysis.well_formed``:

* Every variable is defined (as a parameter or a binding target) before it is used, and only
  once. A variable defined inside an ``If`` branch is not visible after the ``If``.
* Inside a :class:`DataflowBlock` bindings define :class:`DataflowVar` s, except the block's
  outputs, which are plain Vars: there is no separate output list, a plain Var bound in a
  dataflow block *is* an output (what ``R.output(...)`` names in a script). A DataflowVar is
  never defined outside a dataflow block (nor as a parameter), and never used after its block
  ends, including in a SeqExpr's result.
* Symbolic TIR variables are defined where they appear bare (``n`` in ``R.Tensor((n, 4))``) in
  a parameter annotation or a ``match_cast`` pattern; all parameters define theirs before any
  annotation is checked, so ``f(x: R.Tensor((n * 2,)), y: R.Tensor((n,)))`` is fine. Any other
  use of an undefined symbolic variable is an error. A symbolic variable stays visible in the
  whole function from its definition on (the return annotation is checked last, after the
  body's match_casts). Variables inside ``R.Callable(...)`` annotations belong to that
  signature and are not checked.
* Function bodies and ``If`` branches are :class:`SeqExpr` s (the normal form), and an ``If``
  may not appear inside a dataflow block. Otherwise an ``If`` may appear anywhere.
* The normal form also keeps three positions to leaves (a variable, constant, shape, prim
  value, string, dtype, GlobalVar, op or extern function) or tuples: a SeqExpr's result, an
  ``If`` condition and the tuple a ``TupleGetItem`` reads (``t[0][1]`` binds ``t[0]`` first).
* With ``symbolic_per_function=True`` (what TVM's ``relax.analysis.well_formed`` checks), a
  symbolic variable belongs to the top-level function that defines it: two functions of a
  module may not define the same :class:`tir.Var` object (TVM's passes copy functions with
  fresh symbolic variables). Nested functions share their enclosing function's. relaxvm's
  compiler does not rely on this, and its ONNX importer lets loop-body functions share the
  enclosing graph's dims, so its own checks (``build``, the parser) leave it off.
* A GlobalVar must name a function of the module (checked only when given a module), and a
  function's ``global_symbol`` attribute must equal its GlobalVar's name.
* With ``check_struct_info=True`` (the default) every binding variable has struct info.

Call arguments are not required to be leaves here (a nested call is accepted), and operator-level checks (impure calls in
dataflow blocks, argument types) belong to the operator registry's inference.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...errors import RelaxVMError, VMTypeError
from ..expr import PrimExpr
from ..expr import Var as TirVar
from ..expr_functor import free_vars
from .block import (
    Binding,
    BindingBlock,
    Function,
    MatchCast,
    SeqExpr,
)
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
from .struct_info import (
    FuncStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .text import binding_to_str, expr_to_str

__all__ = ["WellFormedError", "is_well_formed", "well_formed"]

# What TVM's normal form allows where a leaf is required (its ``IsLeafOrTuple``); a Tuple's
# fields must be such leaves in turn (see _is_leaf_or_tuple).
_LEAVES = (
    Var,
    Constant,
    ShapeExpr,
    PrimValue,
    StringImm,
    DataTypeImm,
    GlobalVar,
    ExternFunc,
    Op,
)


class WellFormedError(RelaxVMError, ValueError):
    """The IR breaks a well-formedness rule; the message names the function and binding."""


def well_formed(
    mod_or_func: IRModule | Function,
    check_struct_info: bool = True,
    *,
    symbolic_per_function: bool = False,
) -> None:
    """Check the rules listed in this module's documentation.

    Parameters
    ----------
    mod_or_func : IRModule or Function
        A module checks every Relax function (and its GlobalVar references); a lone function
        skips the GlobalVar checks.
    check_struct_info : bool
        Also require struct info on every binding variable.
    symbolic_per_function : bool
        Also require each top-level function to define its own symbolic variables (TVM's
        rule; off for relaxvm's own checks, see the module documentation).

    Raises
    ------
    WellFormedError
        At the first violation.
    """
    checker = _Checker(mod_or_func if isinstance(mod_or_func, IRModule) else None)
    checker.check_struct_info = check_struct_info
    checker.symbolic_per_function = symbolic_per_function
    if isinstance(mod_or_func, IRModule):
        for gvar in mod_or_func.get_global_vars():
            func = mod_or_func[gvar]
            if isinstance(func, Function):
                checker.check_function(func, gvar.name_hint, gvar)
    elif isinstance(mod_or_func, Function):
        name = mod_or_func.attrs.get("global_symbol", "<anonymous>")
        checker.check_function(mod_or_func, str(name), None)
    else:
        raise VMTypeError(
            f"well_formed: expected an IRModule or a relax Function, got "
            f"{type(mod_or_func).__name__}"
        )


def is_well_formed(
    mod_or_func: IRModule | Function,
    check_struct_info: bool = True,
    *,
    symbolic_per_function: bool = False,
) -> bool:
    """True when :func:`well_formed` finds nothing wrong (TVM's boolean spelling)."""
    try:
        well_formed(mod_or_func, check_struct_info, symbolic_per_function=symbolic_per_function)
    except WellFormedError:
        return False
    return True


class _Checker:
    def __init__(self, module: IRModule | None) -> None:
        self.module = module
        self.check_struct_info = True
        self.function_names: list[str] = []
        self.location = ""  # "binding 'y = ...'" or "parameter 'x'", for messages
        self.defined: set[Var] = set()  # every Relax var defined so far in this function
        self.visible: set[Var] = set()  # those usable here
        self.ended_dataflow: set[DataflowVar] = set()  # defined in a block that has ended
        self.symbolic: set[TirVar] = set()
        self.in_dataflow = False
        # The top-level function that defines each symbolic variable, across the module.
        self.symbolic_owner: dict[TirVar, str] = {}
        self.symbolic_per_function = False

    # ---- reporting ---------------------------------------------------------------------------
    def error(self, problem: str) -> WellFormedError:
        where = f"in function '{'.'.join(self.function_names) or '<anonymous>'}'"
        if self.location:
            where += f", {self.location}"
        return WellFormedError(f"{where}: {problem}")

    @contextlib.contextmanager
    def at(self, location: str) -> Iterator[None]:
        saved, self.location = self.location, location
        try:
            yield
        finally:
            self.location = saved

    # ---- functions ---------------------------------------------------------------------------
    def check_function(self, func: Function, name: str, gvar: GlobalVar | None) -> None:
        symbol = func.attrs.get("global_symbol")
        if gvar is not None and symbol is not None and symbol != gvar.name_hint:
            self.function_names = [name]
            raise self.error(
                f"its global_symbol attribute '{symbol}' differs from its GlobalVar name "
                f"'{gvar.name_hint}'"
            )
        self.function_names = [name]
        self.defined, self.visible, self.ended_dataflow = set(), set(), set()
        self.symbolic, self.in_dataflow = set(), False
        self.function(func)

    def function(self, func: Function) -> None:
        saved_visible, saved_symbolic = set(self.visible), set(self.symbolic)
        saved_dataflow, self.in_dataflow = self.in_dataflow, False
        # All parameters define their bare symbolic dims before any annotation is checked.
        for param in func.params:
            self.define_symbolic(param.struct_info)
        for param in func.params:
            with self.at(f"parameter '{param.name_hint}'"):
                if isinstance(param, DataflowVar):
                    raise self.error(
                        f"parameter '{param.name_hint}' is a DataflowVar; function parameters "
                        "must be plain Vars"
                    )
                self.use_struct_info(param.struct_info)
                self.define_var(param)
        if not isinstance(func.body, SeqExpr):
            with self.at(f"body '{expr_to_str(func.body)}'"):
                raise self.error(
                    "the body must be a SeqExpr (normalize the function with the BlockBuilder)"
                )
        self.seq_expr(func.body)
        # Checked after the body: an annotation derived from the body may name a symbolic
        # variable that a match_cast there defines.
        with self.at("return annotation"):
            self.use_struct_info(func.ret_struct_info)
        self.visible, self.symbolic, self.in_dataflow = (
            saved_visible,
            saved_symbolic,
            saved_dataflow,
        )

    # ---- sequences and blocks ----------------------------------------------------------------
    def seq_expr(self, seq: SeqExpr) -> None:
        saved_visible = set(self.visible)
        for block in seq.blocks:
            self.block(block)
        with self.at(f"result '{expr_to_str(seq.body)}'"):
            if not _is_leaf_or_tuple(seq.body):
                raise self.error(
                    f"a SeqExpr's result must be a leaf expression (a variable, constant...) or "
                    f"a tuple of them, got a {type(seq.body).__name__}; bind it to a variable "
                    "first (relax.transform.Normalize does)"
                )
            self.expr(seq.body)
        # Variables bound inside this sequence (an If branch, say) are not visible after it.
        self.visible = saved_visible

    def block(self, block: BindingBlock) -> None:
        # Restored afterwards: a SeqExpr nested in a binding value has blocks of its own.
        saved_dataflow, self.in_dataflow = self.in_dataflow, block.is_dataflow
        local_dataflow: list[DataflowVar] = []
        for binding in block.bindings:
            with self.at(f"binding '{binding_to_str(binding)}'"):
                self.binding(binding)
            if isinstance(binding.var, DataflowVar):
                local_dataflow.append(binding.var)
        self.in_dataflow = saved_dataflow
        for var in local_dataflow:
            self.visible.discard(var)
            self.ended_dataflow.add(var)

    def binding(self, binding: Binding) -> None:
        var = binding.var
        if isinstance(binding.value, Function):
            # A local function may call itself, so its name is defined before its body is
            # checked; it also sees the outer variables. Messages name it.
            self.check_binding_var(var)
            self.function_names.append(var.name_hint)
            saved_location, self.location = self.location, ""
            self.function(binding.value)
            self.location = saved_location
            self.function_names.pop()
            return
        self.expr(binding.value)
        if isinstance(binding, MatchCast):
            self.define_symbolic(binding.struct_info)
            self.use_struct_info(binding.struct_info)
        self.check_binding_var(var)

    def check_binding_var(self, var: Var) -> None:
        if isinstance(var, DataflowVar) and not self.in_dataflow:
            raise self.error(
                f"dataflow variable '{var.name_hint}' is defined outside a dataflow block"
            )
        if self.check_struct_info and var.struct_info is None:
            raise self.error(
                f"variable '{var.name_hint}' has no struct info (normalize the function with "
                "the BlockBuilder, or pass check_struct_info=False)"
            )
        self.use_struct_info(var.struct_info)
        self.define_var(var)

    def define_var(self, var: Var) -> None:
        if var in self.defined:
            raise self.error(f"variable '{var.name_hint}' is defined more than once")
        self.defined.add(var)
        self.visible.add(var)

    # ---- expressions -------------------------------------------------------------------------
    def expr(self, expr: Any) -> None:
        if isinstance(expr, Var):
            self.use_var(expr)
        elif isinstance(expr, GlobalVar):
            self.use_global(expr)
        elif isinstance(expr, Call):
            self.expr(expr.op)
            for arg in expr.args:
                self.expr(arg)
            for sinfo in expr.sinfo_args:
                self.use_struct_info(sinfo)
        elif isinstance(expr, Tuple):
            for field in expr.fields:
                self.expr(field)
        elif isinstance(expr, TupleGetItem):
            if not _is_leaf_or_tuple(expr.tuple_value):
                raise self.error(
                    f"the tuple a TupleGetItem reads must be a leaf expression (a variable...), "
                    f"got a {type(expr.tuple_value).__name__} in "
                    f"'{expr_to_str(expr)}'; bind it to a variable first"
                )
            self.expr(expr.tuple_value)
        elif isinstance(expr, ShapeExpr):
            for value in expr.values:
                self.use_prim(value)
        elif isinstance(expr, PrimValue):
            self.use_prim(expr.value)
        elif isinstance(expr, If):
            self.if_expr(expr)
        elif isinstance(expr, SeqExpr):
            self.seq_expr(expr)
        elif isinstance(expr, Function):
            self.function_names.append("<lambda>")
            self.function(expr)
            self.function_names.pop()
        # Constants, strings, dtypes, ops and extern functions use no variables.

    def if_expr(self, node: If) -> None:
        if self.in_dataflow:
            raise self.error("an If may not appear inside a dataflow block")
        if not _is_leaf_or_tuple(node.cond):
            raise self.error(
                f"the condition of an If must be a leaf expression (a variable...), got a "
                f"{type(node.cond).__name__} '{expr_to_str(node.cond)}'; bind it to a variable "
                "first"
            )
        self.expr(node.cond)
        for branch_name, branch in (("true", node.true_branch), ("false", node.false_branch)):
            if not isinstance(branch, SeqExpr):
                raise self.error(
                    f"the {branch_name} branch of an If must be a SeqExpr, got "
                    f"{type(branch).__name__}"
                )
            self.seq_expr(branch)

    def use_var(self, var: Var) -> None:
        if var in self.visible:
            return
        if isinstance(var, DataflowVar) and var in self.ended_dataflow:
            raise self.error(
                f"dataflow variable '{var.name_hint}' is used outside the dataflow block that "
                "defines it (make it a block output: a plain Var)"
            )
        if var in self.defined:
            raise self.error(
                f"variable '{var.name_hint}' is used outside the scope that defines it "
                "(an If branch or a nested function)"
            )
        raise self.error(f"variable '{var.name_hint}' is used before it is defined")

    def use_global(self, gvar: GlobalVar) -> None:
        if self.module is None or gvar.name_hint in self.module:
            return
        names = ", ".join(g.name_hint for g in self.module.get_global_vars()) or "(none)"
        raise self.error(
            f"GlobalVar '{gvar.name_hint}' does not name a function of the module "
            f"(functions: {names})"
        )

    # ---- symbolic variables ------------------------------------------------------------------
    def define_symbolic(self, sinfo: StructInfo | None) -> None:
        """Define the symbolic variables that appear bare in ``sinfo`` (shape dims, values)."""
        owner = self.function_names[0] if self.function_names else "<anonymous>"
        for expr in _struct_info_prims(sinfo):
            if isinstance(expr, TirVar):
                first = self.symbolic_owner.setdefault(expr, owner)
                if first != owner and self.symbolic_per_function:
                    raise self.error(
                        f"symbolic variable '{expr.name}' is also defined in function "
                        f"'{first}'; each function of a module needs its own symbolic variables "
                        "(make a fresh tir.Var of the same name)"
                    )
                self.symbolic.add(expr)

    def use_struct_info(self, sinfo: StructInfo | None) -> None:
        if isinstance(sinfo, TensorStructInfo) and isinstance(sinfo.shape, Var):
            self.use_var(sinfo.shape)
        for expr in _struct_info_prims(sinfo):
            self.use_prim(expr)

    def use_prim(self, expr: PrimExpr) -> None:
        for var in free_vars(expr):
            if var not in self.symbolic:
                raise self.error(
                    f"symbolic variable '{var.name}' is used before it is defined (define it "
                    "in a parameter annotation or with R.match_cast)"
                )


def _is_leaf_or_tuple(expr: Any) -> bool:
    """Whether ``expr`` may stand where the normal form wants a leaf (TVM's IsLeafOrTuple)."""
    if isinstance(expr, Tuple):
        return all(_is_leaf_or_tuple(field) for field in expr.fields)
    return isinstance(expr, _LEAVES)


def _struct_info_prims(sinfo: StructInfo | None) -> list[PrimExpr]:
    """Every PrimExpr in ``sinfo`` outside callable signatures, in order."""
    if sinfo is None or isinstance(sinfo, FuncStructInfo):
        return []
    if isinstance(sinfo, PrimStructInfo):
        return [] if sinfo.value is None else [sinfo.value]
    if isinstance(sinfo, ShapeStructInfo):
        return list(sinfo.values or ())
    if isinstance(sinfo, TensorStructInfo):
        return list(sinfo.shape_values or ())
    if isinstance(sinfo, TupleStructInfo):
        return [expr for field in sinfo.fields for expr in _struct_info_prims(field)]
    return []
