"""Compiled mode: every VM function as straight-line Python, made when the VM loads.

The counterpart of TVM's ``VMTIRCodeGen`` (``exec_mode="compiled"``). Where TVM compiles each
Relax function to a TIR function ahead of time, relaxvm keeps the executable as plain
bytecode (so a saved file stays data only) and, when a :class:`~relaxvm.VirtualMachine`
loads an executable built in compiled mode, turns each VM function's *validated*
instructions into the source of one Python function and compiles it with :func:`compile`:

* registers become local variables (``r0 .. rN``; parameters are the function's arguments);
* ``Call`` becomes a direct call of the resolved callee (``r5 = c3(r0, 8, k1)``): callees,
  constants and function values are closure variables bound once per VM; immediates are int
  literals; a call of another VM function with the right arity calls its generated function
  directly, recursion included;
* ``If`` / ``Goto`` become nested ``if`` / ``else`` statements. The code generator only
  emits forward, properly nested jumps; a function with any other shape (hand-written
  bytecode with a backward ``Goto``) keeps running on the dispatch loop.

Nothing from the file reaches the generated source except validated integers: names,
strings and tensors are bound as values, never spliced into code. Errors keep their types
and get the same notes as in bytecode mode (``in VM function 'main', instruction 4: call
...``), found from the line the exception passed through, so a run carries no bookkeeping
cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import VMError
from .bytecode import VM_REGISTER, VOID_REGISTER, ArgKind, Instruction, Opcode
from .executable.executable import VMFuncKind

if TYPE_CHECKING:
    from .frames import PreparedFunction
    from .interpreter import VirtualMachine

__all__ = ["compile_functions", "generate_source"]

_MAX_TRACE_NOTES = 8


class _Unstructured(Exception):
    """The function's jumps do not form nested if/else regions."""


class _Generator:
    """Source for the VM functions of one executable."""

    def __init__(self, vm: VirtualMachine, instrument: Callable[..., Any] | None) -> None:
        self.vm = vm
        self.ex = vm.executable
        self.instrument = instrument
        self.values: list[Any] = []  # bound values, named b0, b1, ...
        self.value_index: dict[tuple[str, int], int] = {}
        self.lines: list[str] = []
        self.generated: set[int] = set()  # functions whose generated code others call
        # The bound name of the PreparedFunction being generated (for If's condition errors).
        self._current_fn_name = "None"
        from ..registry.functions import get_global_func

        self.null_value = get_global_func("vm.builtin.null_value", allow_missing=True)
        self.copy = get_global_func("vm.builtin.copy", allow_missing=True)
        self.alloc_tensor = get_global_func("vm.builtin.alloc_tensor", allow_missing=True)
        self.match_shape = get_global_func("vm.builtin.match_shape", allow_missing=True)
        self.check_tensor_info = get_global_func("vm.builtin.check_tensor_info", allow_missing=True)
        # line number (1-based, in the whole source) -> (function table index, pc)
        self.line_pc: dict[int, tuple[int, int]] = {}

    def bind(self, key: tuple[str, int], value: Any) -> str:
        index = self.value_index.get(key)
        if index is None:
            index = self.value_index[key] = len(self.values)
            self.values.append(value)
        return f"b{index}"

    # -- one function ---------------------------------------------------------------------
    def function(self, index: int, fn: PreparedFunction) -> list[str]:
        info = fn.info
        instrs = self.ex.instructions[info.start_instr : info.end_instr]
        params = [f"r{i}" for i in range(info.num_args)]
        body: list[tuple[str, int | None]] = []
        self._region(instrs, 0, len(instrs), 1, body)
        init = self._uninitialised(instrs, info.num_args)
        out = [f"    def f{index}({', '.join(params)}):", "        try:"]
        if init:
            out.append("            " + " = ".join(f"r{r}" for r in sorted(init)) + " = None")
        base = len(self.lines) + 1
        for text, pc in body:
            if pc is not None:
                self.line_pc[base + len(out)] = (index, pc)
            out.append("        " + text)
        out += [
            "        except RecursionError:",
            f"            raise recursion({index}) from None",
            "        except BaseException as err:",
            f"            note(err, {index})",
            "            raise",
        ]
        return out

    def _region(
        self,
        instrs: list[Instruction],
        start: int,
        end: int,
        depth: int,
        out: list[tuple[str, int | None]],
    ) -> None:
        indent = "    " * depth
        emitted = len(out)
        pc = start
        while pc < end:
            ins = instrs[pc]
            op = ins.opcode
            if op is Opcode.CALL:
                out.append((indent + self._call(ins), pc))
                pc += 1
            elif op is Opcode.RET:
                out.append((indent + f"return {self._reg(ins.reg)}", pc))
                pc += 1
            elif op is Opcode.GOTO:
                # Only a jump to the very next instruction past the region's end is a no-op
                # here; any other jump is not nested if/else.
                if pc + ins.offset != end or pc != end - 1:
                    raise _Unstructured
                pc += 1
            else:
                false_start = pc + ins.offset
                if not pc + 1 < false_start <= end:
                    raise _Unstructured
                cond = self._reg(ins.reg)
                fn = self._current_fn_name
                test = f"if ({cond} if type({cond}) is bool else cond({cond}, {fn}, {pc})):"
                out.append((indent + test, pc))
                last = instrs[false_start - 1]
                if last.opcode is Opcode.GOTO and last.offset > 0 and false_start - 1 > pc:
                    join = false_start - 1 + last.offset
                    if not false_start <= join <= end:
                        raise _Unstructured
                    self._region(instrs, pc + 1, false_start - 1, depth + 1, out)
                    if join > false_start:
                        out.append((indent + "else:", None))
                        self._region(instrs, false_start, join, depth + 1, out)
                    pc = join
                else:
                    self._region(instrs, pc + 1, false_start, depth + 1, out)
                    pc = false_start
        if len(out) == emitted:
            out.append((indent + "pass", None))

    def _reg(self, reg: int) -> str:
        if reg == VOID_REGISTER:
            return "None"
        if reg == VM_REGISTER:
            return "vm"
        return f"r{reg}"

    def _arg(self, kind: int, value: int) -> str:
        if kind == ArgKind.REGISTER:
            return self._reg(value)
        if kind == ArgKind.IMMEDIATE:
            return str(int(value))
        if kind == ArgKind.CONST_IDX:
            return self.bind(("const", value), self.vm._constants[value])
        return self.bind(("pool", value), self.vm._pool[value])

    def _call(self, ins: Instruction) -> str:
        if self.instrument is None and ins.reg != VOID_REGISTER:
            # The two register moves need no call: null_value (a kill) and copy.
            target = self.vm._direct[ins.func_idx]
            if target is self.null_value and not ins.args:
                return f"r{ins.reg} = None"
            if target is self.copy and len(ins.args) == 1:
                return f"r{ins.reg} = {self._arg(*ins.args[0])}"
            if target is self.alloc_tensor:
                inline = self._inline_alloc_tensor(ins)
                if inline is not None:
                    return inline
            if target is self.match_shape:
                inline = self._inline_match_shape(ins)
                if inline is not None:
                    return inline
            if target is self.check_tensor_info:
                inline = self._inline_check_tensor_info(ins)
                if inline is not None:
                    return inline
        args = ", ".join(self._arg(k, v) for k, v in ins.args)
        call = f"{self._callee(ins.func_idx, len(ins.args))}({args})"
        if ins.reg == VOID_REGISTER:
            return call
        return f"r{ins.reg} = {call}"

    def _inline_alloc_tensor(self, ins: Instruction) -> str | None:
        """``alloc_tensor(storage, imm offset, const shape, const dtype)`` as the builtin's
        own fast path, written out: build the Tensor when the storage is a Storage that holds
        it, else call the builtin (which converts or raises the exact error)."""
        from ..runtime import Storage, Tensor
        from .frames import static_tensor_end

        if len(ins.args) != 4:
            return None
        (sk, sv), (ok, ov), (hk, hv), (dk, dv) = ins.args
        if sk != ArgKind.REGISTER or not 0 <= sv < VOID_REGISTER or ok != ArgKind.IMMEDIATE:
            return None
        if hk == ArgKind.REGISTER and 0 <= hv < VOID_REGISTER and dk == ArgKind.CONST_IDX:
            return self._inline_alloc_tensor_shape_reg(ins)
        if hk != ArgKind.CONST_IDX or dk != ArgKind.CONST_IDX:
            return None
        end = static_tensor_end(ov, self.vm._constants[hv], self.vm._constants[dv])
        if end is None:
            return None
        tensor_cls = self.bind(("class", 0), Tensor)
        storage_cls = self.bind(("class", 1), Storage)
        builtin = self.bind(("direct", ins.func_idx), self.vm._direct[ins.func_idx])
        args = f"r{sv}, {int(ov)}, {self._arg(hk, hv)}, {self._arg(dk, dv)}"
        return (
            f"r{ins.reg} = {tensor_cls}({args}) if r{sv}.__class__ is {storage_cls} and "
            f"r{sv}.nbytes >= {end} else {builtin}({args})"
        )

    def _fixed_args(self, ins: Instruction, start: int) -> list[Any] | None:
        """The values of arguments ``start..`` when all are immediates or constants."""
        fixed = []
        for kind, value in ins.args[start:]:
            if kind == ArgKind.IMMEDIATE:
                fixed.append(value)
            elif kind == ArgKind.CONST_IDX:
                fixed.append(self.vm._constants[value])
            else:
                return None
        return fixed

    def _value_register(self, ins: Instruction) -> int | None:
        """The first argument's register, when it is an ordinary one."""
        if not ins.args:
            return None
        kind, value = ins.args[0]
        if kind != ArgKind.REGISTER or not 0 <= value < VOID_REGISTER:
            return None
        return int(value)

    def _inline_check_tensor_info(self, ins: Instruction) -> str | None:
        """``check_tensor_info(reg, ndim, dtype, err_ctx)`` as a class/ndim/dtype test,
        calling the builtin only when it fails (for its exact error)."""
        from ..runtime import Tensor
        from .frames import static_tensor_check

        reg = self._value_register(ins)
        fixed = self._fixed_args(ins, 1) if reg is not None else None
        found = static_tensor_check(fixed) if fixed is not None else None
        if found is None:
            return None
        ndim = found[0]
        tensor_cls = self.bind(("class", 0), Tensor)
        # The constant itself (static_tensor_check saw a DataType there), bound once per VM.
        dtype_name = self._arg(*ins.args[2])
        args = ", ".join(self._arg(k, v) for k, v in ins.args)
        call = f"{self._callee(ins.func_idx, len(ins.args))}({args})"
        return (
            f"r{ins.reg} = None if r{reg}.__class__ is {tensor_cls} and len(r{reg}.shape) == "
            f"{int(ndim)} and r{reg}.dtype is {dtype_name} else {call}"
        )

    def _inline_match_shape(self, ins: Instruction) -> str | None:
        """``match_shape`` of a register against fixed dimensions only (no heap slot) as one
        tuple comparison, calling the builtin only when it fails (for the exact error)."""
        from ..runtime import Tensor
        from .frames import static_match_dims

        vv = self._value_register(ins)
        fixed = self._fixed_args(ins, 2) if vv is not None and len(ins.args) >= 3 else None
        dims = static_match_dims(fixed) if fixed is not None else None
        if dims is None:
            return None
        tensor_cls = self.bind(("class", 0), Tensor)
        expected = self.bind(("dims", len(self.values)), dims)
        args = ", ".join(self._arg(k, v) for k, v in ins.args)
        call = f"{self._callee(ins.func_idx, len(ins.args))}({args})"
        return (
            f"r{ins.reg} = None if r{vv}.__class__ is {tensor_cls} and r{vv}.shape == "
            f"{expected} else {call}"
        )

    def _inline_alloc_tensor_shape_reg(self, ins: Instruction) -> str | None:
        """``alloc_tensor(storage, imm offset, shape register, const dtype)`` (a symbolic
        shape made by make_shape): the builtin's fast path written out, the byte count
        computed from the shape at run time."""
        import math

        from ..runtime import DataType, Shape, Storage, Tensor

        (_, sv), (_, ov), (_, hv), (dk, dv) = ins.args
        dtype = self.vm._constants[dv]
        if type(ov) is not int or ov < 0 or type(dtype) is not DataType:
            return None
        itemsize = (dtype.bits * dtype.lanes + 7) >> 3
        tensor_cls = self.bind(("class", 0), Tensor)
        storage_cls = self.bind(("class", 1), Storage)
        shape_cls = self.bind(("class", 2), Shape)
        prod = self.bind(("math.prod", 0), math.prod)
        builtin = self.bind(("direct", ins.func_idx), self.vm._direct[ins.func_idx])
        args = f"r{sv}, {int(ov)}, r{hv}, {self._arg(dk, dv)}"
        return (
            f"r{ins.reg} = {tensor_cls}({args}) if r{sv}.__class__ is {storage_cls} and "
            f"r{hv}.__class__ is {shape_cls} and r{sv}.nbytes >= {int(ov)} + {prod}(r{hv}) * "
            f"{itemsize} else {builtin}({args})"
        )

    def _callee(self, func_idx: int, num_args: int) -> str:
        vm = self.vm
        info = self.ex.func_table[func_idx]
        if self.instrument is not None:
            wrapped = _instrumented(
                vm._direct[func_idx], vm._pool[func_idx], info.name, self.instrument
            )
            return self.bind(("instrumented", func_idx), wrapped)
        fn = vm._functions.get(info.name)
        if (
            fn is not None
            and info.kind is VMFuncKind.VM_FUNC
            and fn.num_args == num_args
            and func_idx in self.generated
        ):
            return f"f{func_idx}"  # a direct call of the generated function
        return self.bind(("direct", func_idx), vm._direct[func_idx])

    @staticmethod
    def _uninitialised(instrs: list[Instruction], num_args: int) -> set[int]:
        """Registers that may be read before written (they start as None, as in bytecode)."""
        first_top_write: dict[int, int] = {}
        depth_end: list[int] = []  # ends of the open branch regions
        reads: list[tuple[int, int]] = []
        for pc, ins in enumerate(instrs):
            while depth_end and pc >= depth_end[-1]:
                depth_end.pop()
            if ins.opcode is Opcode.CALL:
                for kind, value in ins.args:
                    if kind == ArgKind.REGISTER and num_args <= value < VOID_REGISTER:
                        reads.append((pc, value))
                if num_args <= ins.reg < VOID_REGISTER and not depth_end:
                    first_top_write.setdefault(ins.reg, pc)
            elif ins.opcode in (Opcode.RET, Opcode.IF):
                if num_args <= ins.reg < VOID_REGISTER:
                    reads.append((pc, ins.reg))
                if ins.opcode is Opcode.IF:
                    target = pc + ins.offset
                    before = instrs[target - 1]
                    if before.opcode is Opcode.GOTO and before.offset > 0:
                        target = target - 1 + before.offset
                    depth_end.append(target)
        written_anywhere = {
            ins.reg for ins in instrs if ins.opcode is Opcode.CALL and ins.reg >= num_args
        }
        need = {r for pc, r in reads if first_top_write.get(r, len(instrs)) >= pc}
        # Registers written only inside branches may be read after them when not written.
        need |= {r for r in written_anywhere if r not in first_top_write and r < VOID_REGISTER}
        return need


def _instrumented(
    f: Callable[..., Any], func_value: Any, symbol: str, instrument: Callable[..., Any]
) -> Callable[..., Any]:
    from ..runtime import DataType
    from .frames import VMInstrumentReturnKind

    skip = int(VMInstrumentReturnKind.SKIP_RUN)

    def call(*args: Any) -> Any:
        shown = [str(a) if isinstance(a, DataType) else a for a in args]
        decision = instrument(func_value, symbol, True, None, *shown)
        if decision is not None and decision == skip:
            return None
        result = f(*args)
        instrument(func_value, symbol, False, result, *shown)
        return result

    return call


def generate_source(
    vm: VirtualMachine, instrument: Callable[..., Any] | None = None
) -> tuple[str, list[Any], dict[int, tuple[int, int]], list[int]]:
    """The Python source for every structured VM function of ``vm``'s executable.

    Returns
    -------
    source, bound values, line -> (function index, pc), indices of generated functions
    """
    gen = _Generator(vm, instrument)
    ex = vm.executable
    candidates: list[int] = []
    for index, info in enumerate(ex.func_table):
        if info.kind is VMFuncKind.VM_FUNC:
            candidates.append(index)
    # First pass: which functions are structured (their generated names are callable).
    structured: list[int] = []
    for index in candidates:
        info = ex.func_table[index]
        try:
            gen._region(
                ex.instructions[info.start_instr : info.end_instr],
                0,
                info.end_instr - info.start_instr,
                0,
                [],
            )
        except _Unstructured:
            continue
        structured.append(index)
    gen.generated = set(structured)
    gen.values, gen.value_index = [], {}
    gen.lines = ["def build(bound, vm, cond, note, recursion, fns):"]
    for index in structured:
        fn = vm._functions[ex.func_table[index].name]
        gen._current_fn_name = gen.bind(("fn", index), fn)
        gen.lines.extend(gen.function(index, fn))
    unpack = [f"    b{i} = bound[{i}]" for i in range(len(gen.values))]
    # The unpacking lines go right after the header: shift the line table by their count.
    shift = len(unpack)
    line_pc = {line + shift: where for line, where in gen.line_pc.items()}
    lines = [gen.lines[0], *unpack, *gen.lines[1:]]
    lines.append("    return (" + "".join(f"f{i}, " for i in structured) + ")")
    return "\n".join(lines) + "\n", gen.values, line_pc, structured


def compile_functions(vm: VirtualMachine, instrument: Callable[..., Any] | None) -> None:
    """Give every VM function of ``vm`` its compiled form (``fn.compiled``).

    Functions whose jumps are not nested if/else keep the dispatch loop.
    """
    from .frames import prepare
    from .interpreter import _condition

    ex = vm.executable
    source, values, line_pc, structured = generate_source(vm, instrument)
    table = ex.func_table

    def note(err: BaseException, index: int) -> None:
        tb = err.__traceback__
        add_note = getattr(err, "add_note", None)
        if tb is None or add_note is None:
            return
        where = line_pc.get(tb.tb_lineno)
        notes = [n for n in getattr(err, "__notes__", []) if n.startswith("  in VM function")]
        if len(notes) > _MAX_TRACE_NOTES:
            return
        if len(notes) == _MAX_TRACE_NOTES:
            add_note("  in VM function ... (outer frames elided)")
            return
        name = table[index].name
        if where is None:
            add_note(f"  in VM function {name!r}")
            return
        pc = table[index].start_instr + where[1]
        ins = ex.instructions[pc]
        what = f": call {table[ins.func_idx].name}" if ins.opcode is Opcode.CALL else ""
        if ins.opcode is not Opcode.CALL:
            what = f": {ins.opcode.name.lower()}"
        add_note(f"  in VM function {name!r}, instruction {pc}{what}")

    def recursion(index: int) -> VMError:
        return VMError(
            f"maximum call depth exceeded while running VM function {table[index].name!r} "
            "(runaway recursion?)"
        )

    namespace: dict[str, Any] = {}
    code = compile(source, "<relaxvm compiled>", "exec")
    exec(code, namespace)
    made = namespace["build"](values, vm, _condition, note, recursion, None)
    compiled = dict(zip(structured, made, strict=True))
    run = vm._run
    for index, info in enumerate(table):
        if info.kind is not VMFuncKind.VM_FUNC:
            continue
        fn = vm._functions[info.name]
        if index in compiled:
            fn.compiled = compiled[index]
        else:
            prepare(fn, vm, instrument)
            fn.compiled = _dispatch(run, fn)


def _dispatch(run: Callable[..., Any], fn: PreparedFunction) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return run(fn, args)

    return call
