"""``LegalizeOps``: lower high-level Relax ops to ``R.call_tir`` of generated PrimFuncs.

TVM's ``relax.transform.LegalizeOps``. Every ``Call`` of an :class:`~relaxvm.ir.relax.Op`
with a registered legalization (``relaxvm.registry.extensions.get_legalization``, filled by the
``relaxvm_ops`` plugin and by ``register_legalization``) is replaced by what
``func(bb, call)`` returns. ``bb`` is the pass's own builder, so the PrimFuncs a legalization
adds (``bb.add_func`` / ``bb.emit_te``) land in the result module, and the bindings it emits
go just before the rewritten binding.

Ops that the later VM lowering passes handle themselves stay as they are when nothing
legalizes them (``call_tir``, ``call_dps_packed``, closures, ``shape_of``, ``reshape``, memory
and VM ops...). Any other op left without a legalization would reach code generation, so it
is a :class:`~relaxvm.errors.CompileError` naming the function, the binding and the op. ``relax.print`` and ``relax.assert_op`` become
``R.call_packed("relax.run.print" / "relax.run.assert_op", ...)`` as in TVM.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import CompileError, RelaxVMError
from ..ir.relax import (
    Call,
    ExternFunc,
    Function,
    IRModule,
    MatchCast,
    Op,
    StringImm,
    TupleStructInfo,
    VarBinding,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..registry import op_names
from ..registry.extensions import get_legalization, list_legalizations
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["STRUCTURAL_OPS", "LegalizeOps"]

#: Ops that may stay as they are when no legalization is registered: later passes
#: (CallTIRRewrite, LowerRuntimeBuiltin, VMCodeGen) lower them directly.
STRUCTURAL_OPS: frozenset[str] = frozenset(
    {
        "relax.call_tir",
        "relax.call_tir_inplace",
        "relax.call_dps_packed",
        "relax.call_pure_packed",
        "relax.call_inplace_packed",
        "relax.call_builtin_with_ctx",
        "relax.invoke_closure",
        "relax.invoke_pure_closure",
        "relax.make_closure",
        "relax.shape_of",
        "relax.tensor_to_shape",
        "relax.null_value",
        "relax.to_vdevice",
        "relax.reshape",
        "relax.hint_on_device",
    }
)
#: Prefixes of op families that are structural as well (allocation, VM and builtin ops).
_STRUCTURAL_PREFIXES = ("relax.memory.", "relax.vm.", "relax.builtin.")

#: Ops lowered to a call of a packed function by name (TVM's ``FCallPacked``).
_CALL_PACKED = {"relax.print": "relax.run.print", "relax.assert_op": "relax.run.assert_op"}

Legalization = Callable[[Any, Call], RelaxExpr]


def _is_structural(name: str) -> bool:
    return name in STRUCTURAL_OPS or name.startswith(_STRUCTURAL_PREFIXES)


def _call_packed_of(call: Call, name: str) -> Call:
    fmt = StringImm(str((call.attrs or {}).get("format", "")))
    # print: format, values; assert_op: condition, format, format arguments.
    args = [fmt, *call.args] if name == "relax.print" else [call.args[0], fmt, *call.args[1:]]
    return Call(ExternFunc(_CALL_PACKED[name]), args, None, [TupleStructInfo([])])


class _Legalizer(ExprMutator):
    def __init__(
        self,
        mod: IRModule,
        custom: Mapping[str, Legalization],
        target: str | None,
        enable_warning: bool,
    ) -> None:
        super().__init__(mod)
        self.custom = custom
        self.target = target
        self.enable_warning = enable_warning
        self.func_name = "?"
        self.binding_name = "?"

    def visit_var_binding(self, binding: VarBinding) -> None:
        self.binding_name = binding.var.name_hint
        super().visit_var_binding(binding)

    def visit_match_cast(self, binding: MatchCast) -> None:
        self.binding_name = binding.var.name_hint
        super().visit_match_cast(binding)

    def _owner(self, name: str) -> str:
        """Who provided the legalization of ``name`` used here (for error messages only)."""
        if name in self.custom:
            return "user code (LegalizeOps customize_legalize_map)"
        sources = list_legalizations()
        source = sources.get((name, self.target)) or sources.get((name, None))
        return op_names.describe_source(source) if source else "an unknown source"

    def visit_call_(self, expr: Call) -> RelaxExpr:
        new = super().visit_call_(expr)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        name = new.op.name
        func = self.custom.get(name) or get_legalization(name, self.target)
        if func is None and _is_structural(name):
            return new
        if func is None and name in _CALL_PACKED:
            return _call_packed_of(new, name)
        if func is None:
            raise CompileError(
                f"{name} in function '{self.func_name}', binding '{self.binding_name}': no "
                f"legalization registered for target '{self.target or 'generic'}'; register "
                "one with relaxvm.registry.extensions.register_legalization (or a plugin's "
                "relaxvm_register_legalizations hook), or pass customize_legalize_map"
            )
        normalized = self.builder.normalize(new)
        assert isinstance(normalized, Call)  # normalizing a call gives a call
        try:
            result = func(self.builder, normalized)
        except CompileError:
            raise
        except RelaxVMError as err:
            raise CompileError(
                f"{name} in function '{self.func_name}', binding '{self.binding_name}': "
                f"legalization failed: {err} (legalization from {self._owner(name)})"
            ) from err
        except Exception as err:
            # A bug in the legalization itself: name the op, the binding and whose code it
            # is, instead of the bare exception type the pass wrapper would report.
            raise CompileError(
                f"{name} in function '{self.func_name}', binding '{self.binding_name}': "
                f"legalization failed: the legalization from {self._owner(name)} raised "
                f"{type(err).__name__}: {err}"
            ) from err
        if not isinstance(result, RelaxExpr):
            raise CompileError(
                f"{name} in function '{self.func_name}', binding '{self.binding_name}': the "
                f"legalization returned {type(result).__name__}, not a Relax expression"
            )
        if result is normalized and self.enable_warning:
            warnings.warn(f"LegalizeOps: {name} was left as it is", stacklevel=2)
        return result


def LegalizeOps(
    customize_legalize_map: Mapping[str, Legalization] | None = None,
    enable_warning: bool = False,
) -> Pass:
    """Lower every high-level op call to ``R.call_tir`` of a generated PrimFunc.

    Parameters
    ----------
    customize_legalize_map : mapping of str to callable, optional
        ``op name -> func(bb, call) -> Expr`` used before the registered legalizations.
    enable_warning : bool
        Warn when a legalization hands the call back unchanged.

    Returns
    -------
    Pass
        A module pass. The target kind of ``PassContext.current().target`` selects
        target-specific legalizations (falling back to the generic ones).

    Raises
    ------
    CompileError
        An op that no legalization covers, or a legalization that fails; the message names
        the op, the function, the binding, the plugin (or user code) that registered the
        legalization and the original error, which is chained as ``__cause__``.
    relaxvm.registry.op_names.UnknownOpError
        A registered legalization, or a key of ``customize_legalize_map``, names an op that
        does not exist (naming who registered it, with the closest op names); checked before
        any legalization runs.
    """
    custom = dict(customize_legalize_map or {})
    for key, value in custom.items():
        if not isinstance(key, str) or not callable(value):
            raise TypeError(
                "LegalizeOps: customize_legalize_map must map op names to callables "
                f"func(bb, call), got {key!r}: {value!r}"
            )
    if custom:
        known = op_names.all_op_names()
        for key in custom:
            if key not in known:
                # A misspelt key would silently never match: refuse it, with what is close.
                raise op_names.UnknownOpError(
                    "LegalizeOps: customize_legalize_map has a legalization for "
                    f"{op_names.unknown_op_message(key, known)}"
                )

    @module_pass(opt_level=0, name="LegalizeOps")
    def legalize_ops(mod: IRModule, ctx: PassContext) -> IRModule:
        # Plugins may load without the IR, so a misspelt op name in a registration is caught
        # here at the latest, before any legalization is looked up.
        op_names.check_legalization_table()
        target = ctx.target
        kind = getattr(target, "kind_name", None) if target is not None else None
        legalizer = _Legalizer(mod, custom, kind, enable_warning)
        for gvar, func in mod.items():
            if not isinstance(func, Function):
                continue
            legalizer.func_name = gvar.name_hint
            new = legalizer.visit_expr(func)
            if new is not func:
                legalizer.builder.update_func(gvar, new)
        return legalizer.builder.get()

    return legalize_ops  # type: ignore[no-any-return]
