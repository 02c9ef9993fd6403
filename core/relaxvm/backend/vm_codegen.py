"""VMCodeGen: a fully lowered Relax module to VM bytecode (TVM's ``relax.VMCodeGen``).

The input is what the build pipeline leaves: Relax functions with no dataflow blocks whose
calls are VM builtins, packed functions, kernels (``PrimFunc`` s, called by their global
symbol), other Relax functions or closures, and the ``relax.vm.*`` /
``relax.call_builtin_with_ctx`` ops of the lowering passes. Every Relax function becomes a VM
function: parameters in registers ``0..N-1``, one register per bound variable, ``If`` +
``Goto`` for conditionals with both branch results copied into one register by
``vm.builtin.copy``, constants in the pool and ``%vm`` for builtins that take the VM context.

Code is first collected per function as a list of symbolic instructions with labels, so that
jump offsets can be computed once both branches are known, then written with
:class:`~relaxvm.ExecBuilder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError
from ..ir.expr import FloatImm, IntImm
from ..ir.relax import (
    BindingBlock,
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    IRModule,
    MatchCast,
    Op,
    PrimStructInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.relax import RelaxExpr as Expr
from ..ir.tir import PrimFunc
from ..runtime import DataType, Shape
from ..vm.builder import ExecBuilder
from ..vm.bytecode import Arg, ArgKind
from ..vm.executable.executable import Executable, VMFuncKind
from .vm_peephole import reuse_make_shape

__all__ = ["VMCodeGen", "function_symbol", "vm_codegen"]

# Ops the code generator maps to builtins itself (the rest must have been lowered).
_NULL = "vm.builtin.null_value"


def function_symbol(gvar: GlobalVar, func: Any) -> str:
    """The name a function has in the executable: its ``global_symbol`` or its GlobalVar's."""
    attrs = getattr(func, "attrs", None) or {}
    symbol = attrs.get("global_symbol")
    return str(symbol) if symbol else gvar.name_hint


@dataclass
class _Label:
    """A jump target inside one function; ``pc`` is set when the label is placed."""

    pc: int = -1


class _FunctionCode:
    """One function's instructions before jump offsets are known."""

    def __init__(self) -> None:
        # ("call", name, args, dst) | ("ret", reg) | ("goto", label) | ("if", reg, label)
        self.instrs: list[tuple[Any, ...]] = []

    def place(self, label: _Label) -> None:
        label.pc = len(self.instrs)


class VMCodeGen:
    """Turn every Relax function of a lowered module into VM bytecode.

    Parameters
    ----------
    builder : ExecBuilder, optional
        Where to write (a new one by default).

    Examples
    --------
    >>> ex = VMCodeGen().run(lowered_mod)  # doctest: +SKIP
    """

    def __init__(self, builder: ExecBuilder | None = None) -> None:
        self.builder = builder if builder is not None else ExecBuilder()
        self._symbols: dict[str, str] = {}  # GlobalVar name -> executable name
        self._kinds: dict[str, str] = {}  # GlobalVar name -> "relax" | "prim"

    # -- module -------------------------------------------------------------------------------
    def run(self, mod: IRModule) -> Executable:
        """Emit every Relax function of ``mod`` and return the executable.

        Raises
        ------
        CompileError
            Something in a function was not lowered (the message names the function, the
            binding and what was found).
        """
        self.emit_module(mod)
        return self.builder.get()

    def emit_module(self, mod: IRModule) -> None:
        """Emit every Relax function of ``mod`` into :attr:`builder`."""
        relax_funcs: list[tuple[str, Function]] = []
        for gvar, func in mod.functions.items():
            symbol = function_symbol(gvar, func)
            self._symbols[gvar.name_hint] = symbol
            if isinstance(func, Function):
                self._kinds[gvar.name_hint] = "relax"
                relax_funcs.append((symbol, func))
            elif isinstance(func, PrimFunc):
                self._kinds[gvar.name_hint] = "prim"
        # Declared first so that calls between functions (and recursion) resolve to VM
        # functions whatever the order of definition.
        for symbol, _ in relax_funcs:
            self.builder.declare_function(symbol, VMFuncKind.VM_FUNC)
        for symbol, func in relax_funcs:
            _FunctionEmitter(self, symbol, func).emit()

    def symbol_of(self, gvar: GlobalVar, where: str) -> str:
        symbol = self._symbols.get(gvar.name_hint)
        if symbol is None:
            raise CompileError(f"{where}: calls {gvar.name_hint!r}, which is not in the module")
        return symbol

    def kind_of(self, gvar: GlobalVar) -> str:
        return self._kinds.get(gvar.name_hint, "")


def vm_codegen(mod: IRModule) -> Executable:
    """Shorthand for ``VMCodeGen().run(mod)``."""
    return VMCodeGen().run(mod)


class _FunctionEmitter:
    """Emits one Relax function."""

    def __init__(self, gen: VMCodeGen, symbol: str, func: Function) -> None:
        self.gen = gen
        self.ib = gen.builder
        self.symbol = symbol
        self.func = func
        self.code = _FunctionCode()
        self.var_args: dict[Var, Arg] = {}
        self.next_reg = len(func.params)
        self.binding = "<return value>"

    # -- helpers ------------------------------------------------------------------------------
    def error(self, reason: str) -> CompileError:
        return CompileError(
            f"VMCodeGen: in function {self.symbol!r}, binding {self.binding}: {reason}"
        )

    def new_reg(self) -> Arg:
        reg = self.ib.r(self.next_reg)
        self.next_reg += 1
        return reg

    def call(self, name: str, args: Sequence[Arg], dst: Arg | None) -> None:
        self.code.instrs.append(("call", name, list(args), dst))

    def as_register(self, arg: Arg) -> Arg:
        """``arg`` if it is a register, else a new register holding a copy of it."""
        if arg.kind is ArgKind.REGISTER:
            return arg
        dst = self.new_reg()
        self.call("vm.builtin.copy", [arg], dst)
        return dst

    # -- function -----------------------------------------------------------------------------
    def emit(self) -> None:
        func = self.func
        for index, param in enumerate(func.params):
            self.var_args[param] = self.ib.r(index)
        result = self.visit(func.body)
        self.binding = "<return value>"
        self.code.instrs.append(("ret", self.as_register(result)))
        self._flush([p.name_hint for p in func.params])

    def _flush(self, param_names: list[str]) -> None:
        ib = self.ib
        instrs = reuse_make_shape(self.code.instrs)
        with ib.function(self.symbol, num_inputs=len(param_names), param_names=param_names):
            for pc, instr in enumerate(instrs):
                kind = instr[0]
                if kind == "call":
                    _, name, args, dst = instr
                    ib.emit_call(name, args=args, dst=dst)
                elif kind == "ret":
                    ib.emit_ret(instr[1])
                elif kind == "goto":
                    ib.emit_goto(instr[1].pc - pc)
                else:
                    ib.emit_if(instr[1], instr[2].pc - pc)

    # -- expressions --------------------------------------------------------------------------
    def visit(self, expr: Expr) -> Arg:
        """Emit code for ``expr``; return where its value is (a register or constant)."""
        if isinstance(expr, Var):
            arg = self.var_args.get(expr)
            if arg is None:
                raise self.error(f"variable {expr.name_hint!r} is used before it is defined")
            return arg
        if isinstance(expr, SeqExpr):
            for block in expr.blocks:
                self.visit_block(block)
            return self.visit(expr.body)
        if isinstance(expr, Constant):
            return self.ib.convert_constant(expr.data)
        if isinstance(expr, ShapeExpr):
            return self.ib.convert_constant(Shape(self.static_dims(expr.values, "shape")))
        if isinstance(expr, PrimValue):
            return self.prim_value(expr)
        if isinstance(expr, StringImm):
            return self.ib.convert_constant(expr.value)
        if isinstance(expr, DataTypeImm):
            return self.ib.convert_constant(DataType(expr.value))
        if isinstance(expr, GlobalVar):
            return self.ib.f(self.gen.symbol_of(expr, self.where()))
        if isinstance(expr, ExternFunc):
            return self.ib.f(expr.global_symbol)
        if isinstance(expr, Tuple):
            fields = [self.visit(field) for field in expr.fields]
            dst = self.new_reg()
            self.call("vm.builtin.make_tuple", fields, dst)
            return dst
        if isinstance(expr, TupleGetItem):
            value = self.visit(expr.tuple_value)
            dst = self.new_reg()
            self.call("vm.builtin.tuple_getitem", [value, self.ib.imm(expr.index)], dst)
            return dst
        if isinstance(expr, If):
            return self.visit_if(expr)
        if isinstance(expr, Call):
            dst = self.new_reg()
            return dst if self.visit_call(expr, dst) else self.ib.void_arg()
        if isinstance(expr, Function):
            raise self.error(
                "a local function is left in the body; run LambdaLift before code generation"
            )
        if isinstance(expr, Op):
            raise self.error(f"the operator {expr.name} is used as a value")
        raise self.error(f"cannot generate code for a {type(expr).__name__}")

    def where(self) -> str:
        return f"VMCodeGen: in function {self.symbol!r}, binding {self.binding}"

    def static_dims(self, values: Sequence[Any], what: str) -> list[int]:
        dims = []
        for value in values:
            if not isinstance(value, IntImm):
                raise self.error(
                    f"the {what} {list(map(str, values))} has symbolic dimension {value}; "
                    "VMShapeLower must compute it before code generation"
                )
            dims.append(int(value.value))
        return dims

    def prim_value(self, expr: PrimValue) -> Arg:
        value = expr.value
        if isinstance(value, IntImm):
            dtype = str(value.dtype)
            if dtype == "bool":
                return self.ib.convert_constant(bool(value.value))
            return self.ib.convert_constant(int(value.value))
        if isinstance(value, FloatImm):
            return self.ib.convert_constant(float(value.value))
        raise self.error(
            f"the prim value {value} is symbolic; VMShapeLower/ComputePrimValue must compute it "
            "before code generation"
        )

    def visit_block(self, block: BindingBlock) -> None:
        for binding in block.bindings:
            self.binding = f"{binding.var.name_hint!r}"
            if isinstance(binding, MatchCast):
                # VMShapeLower emitted the checks; what is left is an alias.
                self.var_args[binding.var] = self.visit(binding.value)
            elif isinstance(binding, VarBinding):
                value = binding.value
                if isinstance(value, Call):
                    dst = self.new_reg()
                    produced = self.visit_call(value, dst)
                    # A kill's (empty) result is never read: %void stands for it.
                    self.var_args[binding.var] = dst if produced else self.ib.void_arg()
                else:
                    self.var_args[binding.var] = self.visit(value)
            else:  # pragma: no cover - the IR has two binding kinds
                raise self.error(f"unknown binding kind {type(binding).__name__}")

    def visit_if(self, expr: If) -> Arg:
        cond = self.visit(expr.cond)
        cond_info = expr.cond.struct_info
        if not isinstance(cond_info, PrimStructInfo) or cond.kind is not ArgKind.REGISTER:
            # A 0-d tensor (or an unknown value) becomes a bool first; the If instruction
            # reads only bools and ints.
            reg = self.new_reg()
            self.call("vm.builtin.read_if_cond", [cond], reg)
            cond = reg
        merged = self.new_reg()
        else_label, end_label = _Label(), _Label()
        self.code.instrs.append(("if", cond, else_label))
        true_value = self.visit(expr.true_branch)
        self.call("vm.builtin.copy", [true_value], merged)
        self.code.instrs.append(("goto", end_label))
        self.code.place(else_label)
        false_value = self.visit(expr.false_branch)
        self.call("vm.builtin.copy", [false_value], merged)
        self.code.place(end_label)
        return merged

    # -- calls --------------------------------------------------------------------------------
    def visit_call(self, call: Call, dst: Arg) -> bool:
        """Emit ``call`` into ``dst``; False when it produced no value (a kill)."""
        op = call.op
        if isinstance(op, Op):
            return self.visit_op_call(call, op.name, dst)
        args = [self.visit(arg) for arg in call.args]
        if isinstance(op, ExternFunc):
            self.call(op.global_symbol, args, dst)
        elif isinstance(op, GlobalVar):
            self.call(self.gen.symbol_of(op, self.where()), args, dst)
        elif isinstance(op, Var):
            closure = self.visit(op)
            self.call("vm.builtin.invoke_closure", [self.ib.vm_state(), closure, *args], dst)
        else:  # pragma: no cover - Call restricts its op
            raise self.error(f"cannot call a {type(op).__name__}")
        return True

    def tuple_items(self, expr: Expr, what: str) -> list[Arg]:
        """The fields of a Tuple argument, each as an Arg (no tuple is built)."""
        if not isinstance(expr, Tuple):
            raise self.error(f"{what} must be a literal tuple, got {type(expr).__name__}")
        return [self.visit(field) for field in expr.fields]

    def _just_killed(self, reg: Arg) -> bool:
        """Whether the last instruction already cleared ``reg``. KillAfterLastUse kills a
        trivial alias together with its original (correct whether or not they share a
        register); here they do share one, so the second kill would be a no-op."""
        instrs = self.code.instrs
        if not instrs:
            return False
        last = instrs[-1]
        return last[0] == "call" and last[1] == _NULL and last[3] == reg

    def visit_op_call(self, call: Call, name: str, dst: Arg) -> bool:
        """Emit an op call into ``dst``; False when the op has no result (a kill)."""
        args = call.args
        vm = self.ib.vm_state()
        if name == "relax.vm.alloc_storage":
            size, device, dtype = (self.visit(a) for a in args[:3])
            scope = self.visit(args[3]) if len(args) > 3 else self.ib.convert_constant("global")
            self.call("vm.builtin.alloc_storage", [vm, size, device, dtype, scope], dst)
        elif name == "relax.vm.alloc_tensor":
            storage, offset, shape, dtype = (self.visit(a) for a in args[:4])
            self.call("vm.builtin.alloc_tensor", [storage, offset, shape, dtype], dst)
        elif name in (
            "relax.vm.kill_object",
            "relax.memory.kill_tensor",
            "relax.memory.kill_storage",
        ):
            target = self.visit(args[0])
            if target.kind is ArgKind.REGISTER and not self._just_killed(target):
                # Writing None into the object's register drops the reference it holds.
                self.call(_NULL, [], target)
            return False
        elif name == "relax.vm.call_tir_dyn":
            func = self.visit(args[0])
            items = self.tuple_items(args[1], "the arguments of call_tir_dyn")
            self.call("vm.builtin.call_tir_dyn", [func, *items], dst)
        elif name == "relax.call_builtin_with_ctx":
            callee = args[0]
            if not isinstance(callee, ExternFunc):
                raise self.error("call_builtin_with_ctx needs an ExternFunc callee")
            items = self.tuple_items(args[1], "the arguments of call_builtin_with_ctx")
            self.call(callee.global_symbol, [vm, *items], dst)
        elif name == "relax.null_value":
            self.call(_NULL, [], dst)
        elif name == "relax.make_closure":
            func = self.visit(args[0])
            items = self.tuple_items(args[1], "the captured values of make_closure")
            self.call("vm.builtin.make_closure", [func, *items], dst)
        elif name == "relax.invoke_closure":
            closure = self.visit(args[0])
            items = self.tuple_items(args[1], "the arguments of invoke_closure")
            self.call("vm.builtin.invoke_closure", [vm, closure, *items], dst)
        elif name in ("relax.call_packed", "relax.call_pure_packed", "relax.call_inplace_packed"):
            callee = args[0]
            if not isinstance(callee, ExternFunc):
                raise self.error(f"{name} needs an ExternFunc callee")
            self.call(callee.global_symbol, [self.visit(a) for a in args[1:]], dst)
        else:
            raise self.error(
                f"the operator {name} reached code generation; it should have been lowered "
                "by the build pipeline (LegalizeOps, CallTIRRewrite, LowerRuntimeBuiltin...)"
            )
        return True
