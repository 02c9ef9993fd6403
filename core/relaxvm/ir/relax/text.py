"""TVMScript text for Relax: ``IRModule.script()``, ``Function.script()`` and ``str(node)``.

The output is TVM's TVMScript, in a form :func:`relaxvm.script.from_source` reads back as a
structurally equal module. The choices a parser must agree with:

* **Header.** ``# from relaxvm.script import ir as I`` / ``relax as R`` / ``tir as T`` comment
  lines, only for the namespaces the text uses. Functions of a module print in name order
  inside ``@I.ir_module class Module:``; module attributes as ``I.module_attrs({...})``.
* **Functions.** ``@R.function`` when the ``global_symbol`` attribute equals the printed name
  (the attribute is then not repeated), ``@R.function(private=True)`` when there is none;
  ``pure=False`` for impure functions. Other attributes: ``R.func_attr({...})`` as the first
  statement after the symbolic-variable declarations. A function bound inside another prints
  as a nested ``@R.function`` named after its variable, never private.
* **Symbolic variables** (TIR vars in shapes) follow TVM: in the *outermost* function's
  signature (parameters and return annotation), a dimension that mentions a variable first
  defined by that signature prints as a string (``R.Tensor(("n", "n * 2"), ...)``,
  ``R.Prim(value="n")``, ``R.Shape(["n"])``); every TIR variable of the function, wherever it
  first appears (signature, ``match_cast`` pattern, nested function), is declared at the top
  of the outermost body as ``n = T.int64()`` (``T.int64(is_size_var=True)`` for a SizeVar).
  A parser must let such a declaration name the variable the signature already defined, and
  a ``match_cast`` pattern defines the declared variables it binds.
* **Bindings**: ``lv: <struct info> = <value>``; the annotation is the variable's struct info
  and is left out only for ``R.call_tir`` / ``R.call_dps_packed`` (the call declares it) and
  for variables without struct info. ``with R.dataflow():`` blocks end with
  ``R.output(a, b)`` naming the non-dataflow variables. ``MatchCast`` prints
  ``v: sinfo = R.match_cast(value, sinfo)``. An ``If`` binding prints as Python ``if``/
  ``else``; each branch's bindings are followed by ``v: sinfo = <branch result>``, where a
  branch whose result is the variable of its last binding prints that binding's value there
  (the parser makes the final assignment the branch's last binding).
* **Leaves**: ``R.const(value, "dtype")`` where value is a Python literal (a number for a 0-d
  constant, nested lists otherwise; ``float("nan")``/``float("inf")`` for non-finite values),
  always complete; ``R.shape([n, 4])``, ``R.prim_value(e)``, ``R.str("s")``,
  ``R.dtype("float32")``, tuples ``(a, b)`` / ``(a,)`` / ``()``, ``t[0]``,
  ``R.ExternFunc("sym")``; module functions as ``cls.name`` (a name that is not a Python
  identifier is adjusted, ``lambda`` -> ``lambda_``, in the ``def`` and every reference). In shapes and prim values an
  ``int64`` number prints bare; other numbers name their type (``T.int32(4)``,
  ``T.float32(0.5)``).
* **Calls** of operators print as the builders in :mod:`relaxvm.ir.relax.op` take them:
  Relax arguments positionally, attributes as keywords in the builder's parameter order
  (``R.sum(x, axis=[1], keepdims=False)``; tuples as lists). ``R.call_tir(cls.f, (x, y),
  out_sinfo=R.Tensor(...), tir_vars=R.shape([n]))`` (a list of struct info for several
  outputs), ``R.call_tir_inplace(cls.f, (x,), inplace_indices=[0], out_sinfo=...)``,
  ``R.call_dps_packed("sym", (x,), out_sinfo=...)``, ``R.call_packed("sym", x,
  sinfo_args=(R.Tensor(...),))``, ``R.call_pure_packed("sym", x, sinfo_args=(...,))``,
  ``R.invoke_closure(c, (x,), sinfo_args=(...,))``, ``R.assert_op(c, [a], format="...")``.
  Calls of module functions print ``cls.f(x)``; of closures ``f(x)``.
* **Struct info**: ``R.Tensor((n, 4), dtype="float32")``, ``R.Tensor(dtype="float32",
  ndim=2)``, ``R.Tensor(s, dtype=...)`` (shape variable ``s``), ``R.Tensor``, ``R.Shape([n,
  4])`` / ``R.Shape(ndim=2)``, ``R.Prim("int64")`` / ``R.Prim(value=n)``, ``R.Tuple(a, b)`` /
  ``R.Tuple``, ``R.Object``, ``R.Callable((a,), r)`` (``purity=False`` when impure) and the
  opaque ``R.Callable(ret=r, purity=False)``; ``vdevice="cpu:0"`` when a tensor has one.

Variables that share a name are printed with distinct names (``x``, ``x_1``), so the text
always denotes the same graph. ``str(expr)`` and ``str(binding)`` give the one-line forms used in
error messages (large constants summarized there); ``str(function)`` is ``function.script()``.
"""

from __future__ import annotations

import keyword
import math
import re
from typing import Any

import numpy as np

from ..expr import PrimExpr, SizeVar
from ..expr import Var as TirVar
from ..expr_functor import free_vars
from ..global_info import global_infos_script
from ..printer import INDENT, Namer, literal, quote
from ..printer import expr_to_str as prim_expr_to_str
from ._base import RelaxNode
from .block import Binding, BindingBlock, Function, MatchCast, SeqExpr
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
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .vdevice import vdevice_reference

__all__ = [
    "RelaxPrinter",
    "binding_to_str",
    "expr_to_str",
    "function_to_script",
    "function_to_str",
    "global_name",
    "header",
    "module_to_str",
    "node_to_str",
]

#: In one-line text (error messages), constants above this many elements are summarized.
_MAX_PRINTED_ELEMENTS = 8
_HEADERS = {
    "I": "# from relaxvm.script import ir as I",
    "R": "# from relaxvm.script import relax as R",
    "T": "# from relaxvm.script import tir as T",
}
# Calls whose struct info the call itself declares: TVM prints no annotation for them.
_DECLARING_OPS = ("relax.call_tir", "relax.call_dps_packed")


def header(text: str, namespaces: str) -> str:
    """TVM's import comments for the namespaces among ``namespaces`` that ``text`` uses."""
    used = [_HEADERS[ns] for ns in namespaces if re.search(rf"\b{ns}\.", text)]
    return "\n".join(used)


class RelaxPrinter:
    """Prints Relax nodes, naming variables through a :class:`~relaxvm.ir.printer.Namer`.

    Parameters
    ----------
    full_constants : bool
        Print every constant completely (the script form) rather than summarizing large ones.
    unique_names : bool
        Give distinct variables distinct names (the script form); one-line text for messages
        prints each variable by its own name.
    """

    def __init__(self, full_constants: bool = True, unique_names: bool = True) -> None:
        self.namer = Namer(unique_names)
        self.full_constants = full_constants
        # Declarations of the outermost function being printed (None outside a function).
        self.decls: list[str] | None = None
        # TIR variables first met in the outermost signature (printed as strings there).
        self.sig_vars: set[int] | None = None
        # The module's listed virtual devices, which "kind:index" references index.
        self.vdevices: tuple[Any, ...] = ()

    # ---- scalar expressions -------------------------------------------------------------
    def prim(self, expr: PrimExpr) -> str:
        """A PrimExpr in Relax style; declares its new variables, quotes signature ones."""
        found = free_vars(expr)
        for var in found:
            self._tir_var(var)
        text = prim_expr_to_str(expr, "relax", self.namer.name)
        if self.sig_vars is not None and any(id(var) in self.sig_vars for var in found):
            return quote(text)
        return text

    def attr_prim(self, expr: PrimExpr) -> str:
        """A PrimExpr inside an attribute: every literal typed (a bare 4 would read back as
        a Python int, not an expression)."""
        for var in free_vars(expr):
            self._tir_var(var)
        return prim_expr_to_str(expr, "tir", self.namer.name)

    def _tir_var(self, var: TirVar) -> None:
        if self.namer.get(var) is not None:
            return
        name = self.namer.define(var, var.name)
        if self.decls is not None:
            size = "is_size_var=True" if isinstance(var, SizeVar) else ""
            self.decls.append(f"{name} = T.{var.dtype}({size})")
        if self.sig_vars is not None:
            self.sig_vars.add(id(var))

    def _dims(self, values: tuple[PrimExpr, ...], brackets: str) -> str:
        parts = [self.prim(value) for value in values]
        if brackets == "()" and len(parts) == 1:
            return f"({parts[0]},)"
        return brackets[0] + ", ".join(parts) + brackets[1]

    # ---- struct info ----------------------------------------------------------------------
    def sinfo(self, info: StructInfo) -> str:
        """The TVMScript spelling of ``info``."""
        if isinstance(info, ObjectStructInfo):
            return "R.Object"
        if isinstance(info, PrimStructInfo):
            if info.value is None:
                return f"R.Prim({quote(str(info.dtype))})"
            return f"R.Prim(value={self.prim(info.value)})"
        if isinstance(info, ShapeStructInfo):
            if info.values is not None:
                return f"R.Shape({self._dims(info.values, '[]')})"
            return f"R.Shape(ndim={info.ndim})"
        if isinstance(info, TensorStructInfo):
            return self._tensor_sinfo(info)
        if isinstance(info, TupleStructInfo):
            if not info.fields:
                return "R.Tuple"
            return f"R.Tuple({', '.join(self.sinfo(field) for field in info.fields)})"
        if isinstance(info, FuncStructInfo):
            purity = "" if info.purity else "purity=False"
            if info.params is None:
                parts = (
                    []
                    if isinstance(info.ret, ObjectStructInfo)
                    else [f"ret={self.sinfo(info.ret)}"]
                )
                return f"R.Callable({', '.join([*parts, purity] if purity else parts)})"
            params = [self.sinfo(param) for param in info.params]
            inner = f"({params[0]},)" if len(params) == 1 else f"({', '.join(params)})"
            parts = [inner, self.sinfo(info.ret)] + ([purity] if purity else [])
            return f"R.Callable({', '.join(parts)})"
        return info.script()

    def _tensor_sinfo(self, info: TensorStructInfo) -> str:
        parts = []
        if isinstance(info.shape, ShapeExpr):
            parts.append(self._dims(info.shape.values, "()"))
        elif info.shape is not None:
            parts.append(self.expr(info.shape))
        if info.dtype is not None:
            parts.append(f"dtype={quote(str(info.dtype))}")
        if info.shape is None and info.ndim != -1:
            parts.append(f"ndim={info.ndim}")
        if info.vdevice is not None:
            parts.append(f"vdevice={self.vdevice(info.vdevice)}")
        return f"R.Tensor({', '.join(parts)})" if parts else "R.Tensor"

    def vdevice(self, device: Any) -> str:
        """A device as the script names it: ``"llvm:0"`` for the first listed ``llvm``
        VDevice of the module (TVM's form), else the runtime kind, ``"cpu:0"``."""
        return quote(
            vdevice_reference(device, self.vdevices) or f"{device.kind}:{device.device_id}"
        )

    # ---- expressions --------------------------------------------------------------------
    def expr(self, expr: Any) -> str:
        """The one-line text of an expression."""
        if isinstance(expr, Var):  # DataflowVar included
            return self.namer.name(expr)
        if isinstance(expr, GlobalVar):
            return f"cls.{global_name(expr.name_hint)}"
        if isinstance(expr, Op):
            return _op_path(expr.name)
        if isinstance(expr, ExternFunc):
            return f"R.ExternFunc({quote(expr.global_symbol)})"
        if isinstance(expr, Constant):
            return self._constant(expr)
        if isinstance(expr, ShapeExpr):
            return f"R.shape({self._dims(expr.values, '[]')})"
        if isinstance(expr, PrimValue):
            return f"R.prim_value({self.prim(expr.value)})"
        if isinstance(expr, StringImm):
            return f"R.str({quote(expr.value)})"
        if isinstance(expr, DataTypeImm):
            return f"R.dtype({quote(str(expr.value))})"
        if isinstance(expr, Tuple):
            return self._tuple(expr.fields)
        if isinstance(expr, TupleGetItem):
            return f"{self.expr(expr.tuple_value)}[{expr.index}]"
        if isinstance(expr, Call):
            return self.call(expr)
        # Not in A-normal form: readable, but only bindings print these parseably.
        if isinstance(expr, If):
            return (
                f"R.If({self.expr(expr.cond)}, {self.expr(expr.true_branch)}, "
                f"{self.expr(expr.false_branch)})"
            )
        if isinstance(expr, SeqExpr):
            return f"R.SeqExpr(<{len(expr.blocks)} blocks>, {self.expr(expr.body)})"
        if isinstance(expr, Function):
            params = ", ".join(self.expr(param) for param in expr.params)
            return f"R.function(({params}) -> {self.sinfo(expr.ret_struct_info)})"
        return f"<{type(expr).__name__}>"

    def _tuple(self, fields: Any) -> str:
        items = [self.expr(field) for field in fields]
        if not items:
            return "()"
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def _constant(self, expr: Constant) -> str:
        data = expr.data
        dtype = quote(str(data.dtype))
        if not self.full_constants and int(np.prod(data.shape)) > _MAX_PRINTED_ELEMENTS:
            return f"R.const(<{'x'.join(str(d) for d in data.shape)} {data.dtype} tensor>)"
        return f"R.const({_array_literal(data.numpy().tolist())}, {dtype})"

    def call(self, call: Call) -> str:
        """A call, spelled as the builder of its operator takes it."""
        from ._text_call import call_parts

        name, args, kwargs = call_parts(self, call)
        parts = args + [f"{key}={value}" for key, value in kwargs]
        return f"{name}({', '.join(parts)})"

    def sinfo_args(self, infos: tuple[StructInfo, ...]) -> str:
        """``(info,)`` / ``(a, b)``: the ``sinfo_args=`` value."""
        items = [self.sinfo(info) for info in infos]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    # ---- bindings, blocks and functions -------------------------------------------------
    def binding(self, binding: Binding, depth: int, lines: list[str]) -> None:
        """Append the lines of one binding."""
        pad = INDENT * depth
        value = binding.value
        if isinstance(binding, MatchCast):
            rhs = f"R.match_cast({self.expr(value)}, {self.sinfo(binding.struct_info)})"
            lines.append(f"{pad}{self._target(binding.var, None)} = {rhs}")
        elif isinstance(value, Function):
            name = self.namer.define(binding.var, binding.var.name_hint)
            lines += self.function(value, name, depth, private=False)
        elif isinstance(value, If):
            cond = self.expr(value.cond)
            target = self._target(binding.var, None)
            lines.append(f"{pad}if {cond}:")
            self._branch(value.true_branch, depth + 1, target, lines)
            lines.append(f"{pad}else:")
            self._branch(value.false_branch, depth + 1, target, lines)
        else:
            rhs = self.expr(value)
            lines.append(f"{pad}{self._target(binding.var, value)} = {rhs}")

    def _target(self, var: Var, value: Any) -> str:
        annotate = var.struct_info is not None and not (
            isinstance(value, Call) and isinstance(value.op, Op) and value.op.name in _DECLARING_OPS
        )
        annotation = f": {self.sinfo(var.struct_info)}" if annotate else ""  # type: ignore[arg-type]
        return f"{self.namer.define(var, var.name_hint)}{annotation}"

    def _branch(self, branch: Any, depth: int, target: str, lines: list[str]) -> None:
        last = None
        if isinstance(branch, SeqExpr):
            blocks = list(branch.blocks)
            # A branch whose result is its last plain binding prints that binding as the
            # final assignment (`v = R.exp(x)`, not `lv = R.exp(x)` then `v = lv`): a parser
            # turns the final assignment into the branch's last binding.
            final = blocks[-1].bindings[-1] if blocks and blocks[-1].bindings else None
            if (
                isinstance(final, Binding)
                and not isinstance(final, MatchCast)
                and not isinstance(final.value, (If, Function))
                and final.var is branch.body
                and not blocks[-1].is_dataflow
            ):
                last = final
                blocks[-1] = BindingBlock(blocks[-1].bindings[:-1])
                if not blocks[-1].bindings:
                    blocks.pop()
            for block in blocks:
                self.block(block, depth, lines)
            branch = branch.body
        value = self.expr(last.value if last is not None else branch)
        lines.append(f"{INDENT * depth}{target} = {value}")

    def block(self, block: BindingBlock, depth: int, lines: list[str]) -> None:
        """Append a block: plain bindings, or a ``with R.dataflow():`` section."""
        if not block.is_dataflow:
            for binding in block.bindings:
                self.binding(binding, depth, lines)
            return
        lines.append(f"{INDENT * depth}with R.dataflow():")
        for binding in block.bindings:
            self.binding(binding, depth + 1, lines)
        outputs = [self.expr(b.var) for b in block.bindings if not isinstance(b.var, DataflowVar)]
        lines.append(f"{INDENT * (depth + 1)}R.output({', '.join(outputs)})")

    def function(self, func: Function, name: str, depth: int, private: bool) -> list[str]:
        """The lines of ``func`` as an ``@R.function`` definition named ``name``."""
        outermost = self.decls is None
        decls: list[str] = []
        if outermost:
            self.decls, self.sig_vars = decls, set()
        params = []
        for param in func.params:
            annotation = self.sinfo(param.struct_info)  # type: ignore[arg-type]
            params.append(f"{self.namer.define(param, param.name_hint)}: {annotation}")
        ret = self.sinfo(func.ret_struct_info)
        self.sig_vars = None
        body: list[str] = []
        attrs = dict(func.attrs)
        if not private and attrs.get("global_symbol") == name:
            del attrs["global_symbol"]
        if attrs:
            body.append(f"{INDENT * (depth + 1)}R.func_attr({literal(attrs, self.attr_prim)})")
        seq = func.body
        if isinstance(seq, SeqExpr):
            for block in seq.blocks:
                self.block(block, depth + 1, body)
            seq = seq.body
        body.append(f"{INDENT * (depth + 1)}return {self.expr(seq)}")
        if outermost:
            body = [INDENT * (depth + 1) + decl for decl in decls] + body
            self.decls = None
        options = [] if func.is_pure else ["pure=False"]
        if private:
            options.append("private=True")
        pad = INDENT * depth
        decorator = f"@R.function({', '.join(options)})" if options else "@R.function"
        return [pad + decorator, f"{pad}def {name}({', '.join(params)}) -> {ret}:", *body]


def global_name(name: str) -> str:
    """A module function's name as a Python identifier (``lambda`` prints as ``lambda_``)."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    fixed = re.sub(r"\W", "_", name) or "func"
    if fixed[0].isdigit() or keyword.iskeyword(fixed):
        fixed = ("f_" + fixed) if fixed[0].isdigit() else fixed + "_"
    return fixed


def _op_path(name: str) -> str:
    """``relax.add`` prints as ``R.add``, ``relax.nn.relu`` as ``R.nn.relu``."""
    if name.startswith("relax."):
        return "R." + name[len("relax.") :]
    return f"R.Op({quote(name)})"


def _array_literal(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_array_literal(item) for item in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({quote(repr(value))})"
    return repr(value)


# ---- entry points -----------------------------------------------------------------------------
def node_to_str(node: RelaxNode) -> str:
    """The text of any Relax node (what ``str(node)`` returns)."""
    if isinstance(node, StructInfo):
        return node.script()
    if isinstance(node, Function):
        return function_to_script(node)
    if isinstance(node, Binding):
        return binding_to_str(node)
    printer = RelaxPrinter(full_constants=False, unique_names=False)
    lines: list[str] = []
    if isinstance(node, BindingBlock):
        printer.block(node, 0, lines)
        return "\n".join(lines)
    if isinstance(node, SeqExpr):
        for block in node.blocks:
            printer.block(block, 0, lines)
        lines.append(f"return {printer.expr(node.body)}")
        return "\n".join(lines)
    return printer.expr(node)


def expr_to_str(expr: Any) -> str:
    """The one-line text of an expression (large constants summarized)."""
    return RelaxPrinter(full_constants=False, unique_names=False).expr(expr)


def binding_to_str(binding: Binding, annotate: bool = False) -> str:
    """One line for a binding: ``y = R.add(x, z)`` (``y: R.Tensor(...) = ...`` if annotate)."""
    printer = RelaxPrinter(full_constants=False, unique_names=False)
    value = binding.value
    if isinstance(binding, MatchCast):
        rhs = f"R.match_cast({printer.expr(value)}, {printer.sinfo(binding.struct_info)})"
    else:
        rhs = printer.expr(value)
    target = printer.namer.define(binding.var, binding.var.name_hint)
    if annotate and binding.var.struct_info is not None:
        target += f": {printer.sinfo(binding.var.struct_info)}"
    return f"{target} = {rhs}"


def function_to_str(func: Function, name: str | None = None) -> str:
    """The function as an ``@R.function`` definition (no header), named ``name`` or after its
    ``global_symbol`` (``main`` without one, then private)."""
    name, private = _function_name(func, name)
    return "\n".join(RelaxPrinter().function(func, name, 0, private))


def function_to_script(func: Function, name: str | None = None) -> str:
    """``Function.script()``: :func:`function_to_str` under TVM's import comments."""
    text = function_to_str(func, name)
    return f"{header(text, 'RT')}\n\n{text}"


def _function_name(func: Function, name: str | None) -> tuple[str, bool]:
    symbol = func.attrs.get("global_symbol")
    if name is None:
        name = str(symbol) if symbol is not None else "main"
    return name, symbol is None


def module_to_str(mod: Any) -> str:
    """``IRModule.script()``: the module as an ``@I.ir_module`` class."""
    from ..tir.function import PrimFunc
    from ..tir.script import prim_func_lines

    lines = ["@I.ir_module", "class Module:"]
    if mod.attrs:
        printer = RelaxPrinter()
        lines.append(f"{INDENT}I.module_attrs({literal(dict(mod.attrs), printer.attr_prim)})")
    infos = getattr(mod, "global_infos", {})
    if infos:
        lines.append(f"{INDENT}I.module_global_infos({global_infos_script(infos)})")
    for gvar in mod.get_global_vars():
        func = mod[gvar]
        name = global_name(gvar.name_hint)
        private = "global_symbol" not in func.attrs
        if isinstance(func, Function):
            printer = RelaxPrinter()
            printer.vdevices = tuple(infos.get("vdevice", ()))
            lines += printer.function(func, name, 1, private)
        elif isinstance(func, PrimFunc):
            lines += prim_func_lines(func, name, 1, private)
        elif isinstance(func, ExternFunc):
            lines.append(f"{INDENT}{name} = {_extern_global(func)}")
        else:
            lines.append(f"{INDENT}{name} = {func!r}")
        lines.append("")
    if len(lines) == 2:
        lines.append(f"{INDENT}pass")
    text = "\n".join(lines).rstrip() + "\n"
    return f"{header(text, 'IRT')}\n\n{text}"


def _extern_global(func: ExternFunc) -> str:
    """An ExternFunc global as TVM prints it: its signature only when it is not the default
    opaque, impure one (``R.ExternFunc("f", R.Callable(...))``)."""
    text = f"R.ExternFunc({quote(func.global_symbol)}"
    if func.struct_info != FuncStructInfo.opaque_func(purity=False):
        # StructInfo's own spelling, which states the purity as TVM does here.
        text += f", {func.struct_info}"
    return text + ")"
