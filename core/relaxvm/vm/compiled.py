"""Compiled mode: every VM function as straight-line Python, made when the VM loads.

The counterpart of TVM's ``VMTIRCodeGen`` (``exec_mode="compiled"``). Where TVM compiles each
Relax function to a TIR function ahead of time, relaxvm keeps the executable as plain
bytecode (so a saved file stays data only) and, when a :class:`~relaxvm.VirtualMachine`
loads an executable built in compiled mode, turns each VM function's *validated*
instructions into the source of one Python function and compiles it with :func:`compile`:

* registers become local variables (``r0 .. rN``; parameters are the function's arguments);
* ``Call`` follows its call plan (:mod:`relaxvm.vm.callplan`): a direct call of the resolved
  callee (``r5 = b3(r0, 8, b1)``), or what the callee's own specialisation offers (a register
  write, a call with the register arguments only, or its inline expression). Callees,
  constants and function values are closure variables bound once per VM; immediates are int
  literals; a call of another VM function with the right arity calls its generated function
  directly, recursion included;
* ``If`` / ``Goto`` become nested ``if`` / ``else`` statements. The code generator only
  emits forward, properly nested jumps; a function with any other shape (hand-written
  bytecode with a backward ``Goto``), or nested deeper than :data:`MAX_NESTING` (Python
  refuses about 100 levels of indentation), keeps running on the dispatch loop, so compiled
  mode accepts every program bytecode mode accepts.

Nothing from the file reaches the generated source except validated integers: names,
strings and tensors are bound as values, never spliced into code (a specialisation's inline
template comes from installed plugin code, and its values are bound the same way). Errors
keep their types and get the same notes as in bytecode mode (``in VM function 'main',
instruction 4: call ...``), found from the line the exception passed through, so a run
carries no bookkeeping cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import VMError
from .bytecode import VM_REGISTER, VOID_REGISTER, ArgKind, Instruction, Opcode
from .callplan import CALL, CONSTANT, FORWARD, GENERIC, plan_as_call, plan_call
from .diagnostics import add_note_at, call_depth, call_depth_error, condition, recursion_error
from .executable.executable import VMFuncKind
from .instrument import instrumented

if TYPE_CHECKING:
    from .callplan import CallPlan
    from .frames import PreparedFunction
    from .interpreter import VirtualMachine
    from .profiler import Profiler

__all__ = ["MAX_NESTING", "compile_functions", "generate_source"]

#: Deepest if/else nesting generated as Python. CPython stops at 100 indentation levels
#: (``IndentationError``) and its parser and compiler recurse per level; the body already sits
#: three levels deep (``build``, ``f<i>``, ``try``). Deeper functions run on the dispatch loop.
MAX_NESTING = 64


class _Unstructured(Exception):
    """The function's jumps do not form nested if/else regions (or nest too deep)."""


class _Generator:
    """Source for the VM functions of one executable."""

    def __init__(
        self,
        vm: VirtualMachine,
        instrument: Callable[..., Any] | None,
        profiler: Profiler | None = None,
    ) -> None:
        self.vm = vm
        self.ex = vm.executable
        self.instrument = instrument
        self.profiler = profiler
        self.values: list[Any] = []  # bound values, named b0, b1, ...
        self.value_index: dict[tuple[str, int], int] = {}
        self.lines: list[str] = []
        self.generated: set[int] = set()  # functions whose generated code others call
        # The bound name of the PreparedFunction being generated (for If's condition errors).
        self._current_fn_name = "None"
        # First instruction of the function being generated (call plans are by absolute pc).
        self._start = 0
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
        self._start = info.start_instr
        instrs = self.ex.instructions[info.start_instr : info.end_instr]
        params = [f"r{i}" for i in range(info.num_args)]
        body: list[tuple[str, int | None]] = []
        self._region(instrs, 0, len(instrs), 1, body)
        init = self._uninitialised(instrs, info.num_args)
        out = [
            f"    def f{index}({', '.join(params)}):",
            "        depth = calls.depth + 1",
            "        if depth > vm.max_call_depth:",
            f"            raise too_deep({index})",
            "        calls.depth = depth",
            "        try:",
        ]
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
            f"            contained = note(err, {index})",
            "            if contained is None:",
            "                raise",
            "            raise contained from err",
            "        finally:",
            "            calls.depth = depth - 1",
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
        if depth > MAX_NESTING:
            # Also bounds this recursion: a file may nest Ifs thousands deep.
            raise _Unstructured
        indent = "    " * depth
        emitted = len(out)
        pc = start
        while pc < end:
            ins = instrs[pc]
            op = ins.opcode
            if op is Opcode.CALL:
                out.append((indent + self._call(ins, pc), pc))
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

    def _call(self, ins: Instruction, pc: int) -> str:
        """One ``Call`` as a statement, following its call plan (relaxvm.vm.callplan)."""
        plan = plan_call(self.vm, ins, self._start + pc, self.instrument)
        void = ins.reg == VOID_REGISTER
        dst = "" if void else f"r{ins.reg} = "
        if self.profiler is not None:
            return dst + self._profiled_call(self.profiler, ins, self._start + pc, plan)
        if plan.kind == CONSTANT:
            if void:
                return "pass"
            if plan.value is None:
                return f"{dst}None"
            return dst + self.bind(("value", len(self.values)), plan.value)
        if plan.kind == FORWARD:
            return "pass" if void else f"{dst}r{plan.registers[0]}"
        args = ", ".join(self._arg(k, v) for k, v in ins.args)
        generic = f"{self._callee(ins.func_idx, len(ins.args))}({args})"
        if plan.kind != CALL:
            return dst + generic
        registers = [f"r{r}" for r in plan.registers]
        if plan.inline is None:
            func = self.bind(("value", len(self.values)), plan.func)
            return f"{dst}{func}({', '.join(registers)})"
        # The template is the builtin's own (installed code); its named values are bound as
        # variables here, only register names and the generic call are substituted as text.
        names = {
            name: self.bind(("value", len(self.values)), value)
            for name, value in plan.bound.items()
        }
        return dst + plan.inline.format(*registers, call=generic, **names)

    def _profiled_call(self, profiler: Profiler, ins: Instruction, pc: int, plan: CallPlan) -> str:
        """The call expression of a profiled call site (absolute ``pc``): every plan becomes
        a call of the profiler's wrapper, as in the dispatch loop (relaxvm.vm.frames)."""
        if plan.kind == GENERIC:
            target = self._generic_target(ins.func_idx)
            args = [self._arg(k, v) for k, v in ins.args]
        else:
            target, registers = plan_as_call(plan)
            args = [f"r{r}" for r in registers]
        timed = self.bind(("value", len(self.values)), profiler.wrap(pc, target))
        return f"{timed}({', '.join(args)})"

    def _generic_target(self, func_idx: int) -> Callable[..., Any]:
        """The callable a generic call invokes (instrumented when an instrument is set)."""
        vm = self.vm
        if self.instrument is None:
            return vm._direct[func_idx]
        name = self.ex.func_table[func_idx].name
        return instrumented(vm._direct[func_idx], vm._pool[func_idx], name, self.instrument)

    def _callee(self, func_idx: int, num_args: int) -> str:
        vm = self.vm
        info = self.ex.func_table[func_idx]
        if self.instrument is not None:
            wrapped = self._generic_target(func_idx)
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


def generate_source(
    vm: VirtualMachine,
    instrument: Callable[..., Any] | None = None,
    profiler: Profiler | None = None,
) -> tuple[str, list[Any], dict[int, tuple[int, int]], list[int]]:
    """The Python source for every structured VM function of ``vm``'s executable.

    With a ``profiler`` (``vm.profile``) every Call calls the profiler's wrapper for it.

    Returns
    -------
    source, bound values, line -> (function index, pc), indices of generated functions
    """
    gen = _Generator(vm, instrument, profiler)
    ex = vm.executable
    candidates: list[int] = []
    for index, info in enumerate(ex.func_table):
        if info.kind is VMFuncKind.VM_FUNC:
            candidates.append(index)
    # First pass: which functions are structured (their generated names are callable).
    structured: list[int] = []
    for index in candidates:
        info = ex.func_table[index]
        gen._start = info.start_instr
        try:
            gen._region(
                ex.instructions[info.start_instr : info.end_instr],
                0,
                info.end_instr - info.start_instr,
                1,  # the depth function() starts at, so both passes agree on MAX_NESTING
                [],
            )
        except _Unstructured:
            continue
        structured.append(index)
    gen.generated = set(structured)
    gen.values, gen.value_index = [], {}
    gen.lines = ["def build(bound, vm, cond, note, recursion, calls, too_deep):"]
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


def compile_functions(
    vm: VirtualMachine,
    instrument: Callable[..., Any] | None,
    profiler: Profiler | None = None,
) -> None:
    """Give every VM function of ``vm`` its compiled form (``fn.compiled``).

    Functions whose jumps are not nested if/else keep the dispatch loop.
    """
    from .frames import contained_call_error, prepare

    ex = vm.executable
    source, values, line_pc, structured = generate_source(vm, instrument, profiler)
    table = ex.func_table

    def note(err: BaseException, index: int) -> BaseException | None:
        # The line the exception passed through says which instruction raised.
        tb = err.__traceback__
        where = line_pc.get(tb.tb_lineno) if tb is not None else None
        pc = None if where is None else table[index].start_instr + where[1]
        add_note_at(err, ex, table[index].name, pc)
        # The same conversion as the dispatch loop's, so both modes raise the same types.
        return contained_call_error(err, ex, pc)

    def recursion(index: int) -> VMError:
        return recursion_error(table[index].name)

    def too_deep(index: int) -> VMError:
        return call_depth_error(table[index].name, vm.max_call_depth)

    namespace: dict[str, Any] = {}
    try:
        code = compile(source, "<relaxvm compiled>", "exec")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        # MAX_NESTING keeps the source within CPython's limits; should one still be hit (a
        # smaller C stack, another interpreter), every function keeps the dispatch loop, which
        # runs the same program.
        structured = []
        source, values = "def build(*args):\n    return ()\n", []
        code = compile(source, "<relaxvm compiled>", "exec")
    exec(code, namespace)
    made = namespace["build"](values, vm, condition, note, recursion, call_depth, too_deep)
    compiled = dict(zip(structured, made, strict=True))
    run = vm._run
    for index, info in enumerate(table):
        if info.kind is not VMFuncKind.VM_FUNC:
            continue
        fn = vm._functions[info.name]
        if index in compiled:
            fn.compiled = compiled[index]
        else:
            prepare(fn, vm, instrument, profiler)
            fn.compiled = _dispatch(run, fn)


def _dispatch(run: Callable[..., Any], fn: PreparedFunction) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return run(fn, args)

    return call
