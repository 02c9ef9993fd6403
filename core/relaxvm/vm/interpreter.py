"""The virtual machine: loads an executable onto devices and runs its bytecode.

Construction resolves every callee once (the executable's imports first, then the global
registry) and prepares each VM function for the dispatch loop (see :mod:`relaxvm.vm.frames`:
operands become indices into a per-function frame template, calls follow their call plans). A
call copies the template, writes the arguments into registers ``0..num_args-1`` and runs the
loop over the four opcodes in :meth:`VirtualMachine._run`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import FunctionNotFoundError, VMError, VMTypeError, VMValueError
from ..registry import functions as registry
from ..runtime import Allocator, Device, Tensor
from ..runtime.benchmark import BenchmarkResult
from ..runtime.memory import AllocatorType
from . import native_plan
from .callplan import CallPlan
from .closure import VMClosure
from .devices import setup_allocators, setup_devices
from .diagnostics import (
    add_trace_note,
    arity_message,
    call_depth,
    call_depth_error,
    condition,
    default_max_call_depth,
    missing_message,
    recursion_error,
)
from .executable.executable import Executable, VMFuncKind
from .frames import PreparedFunction, contained_call_error, not_ready, prepare
from .inputs import arg_to_device, args_to_device, convert_inputs, make_evaluator
from .instrument import VMInstrumentReturnKind

if TYPE_CHECKING:
    from .module import VMModule
    from .profile_report import ProfileReport
    from .profiler import Profiler

__all__ = ["BenchmarkResult", "VMInstrumentReturnKind", "VirtualMachine"]


class VirtualMachine:
    """Runs an :class:`~relaxvm.Executable` (TVM's ``relax.VirtualMachine``).

    Parameters
    ----------
    rt_mod : Executable
        The program, from :meth:`ExecBuilder.get`, ``relaxvm.compile`` or ``load_module``.
    device : Device or list of Device
        Where tensors live; ``device[0]`` receives inputs and constants. A CPU device is
        appended when the last one is not a CPU (the host runs shape computations).
    memory_cfg : None, "naive", "pooled" or dict of Device to allocator type
        Allocator per device (default pooled).
    profile : bool
        Accepted for TVM compatibility (TVM builds a profiling VM with it); every relaxvm VM
        can be profiled with :meth:`profile`, at no cost until then.
    native_functions : bool, optional
        Whole-function native calls (:mod:`relaxvm.vm.native_plan`; default on unless
        ``RELAXVM_NATIVE_FUNCTIONS=0``); also the attribute :attr:`native_functions`.

    Raises
    ------
    VMTypeError
        ``rt_mod`` is not an executable, or ``device``/``memory_cfg`` have the wrong type.
    FunctionNotFoundError
        A callee is neither a function of the executable, in its imports, nor registered.
    DeviceError
        A device has no installed device API.

    Notes
    -----
    An exception inside a call unwinds every VM frame (each adds a note naming its function
    and instruction) and leaves the VM usable. Runaway recursion stops with a
    :class:`VMError` once more than :attr:`max_call_depth` VM function frames are open on
    the calling thread (by default what fits in Python's recursion limit, about 190 for the
    default limit of 1000); set the attribute to allow more, after raising
    ``sys.setrecursionlimit``.
    """

    NAIVE_ALLOCATOR = int(AllocatorType.NAIVE)
    POOLED_ALLOCATOR = int(AllocatorType.POOLED)

    def __init__(
        self,
        rt_mod: Executable,
        device: Device | Sequence[Device],
        memory_cfg: str | dict[Device, int | str] | None = None,
        profile: bool = False,
        native_functions: bool | None = None,
    ) -> None:
        if not isinstance(rt_mod, Executable):
            raise VMTypeError(
                "VirtualMachine: expected an Executable (from ExecBuilder.get, relaxvm.compile "
                f"or relaxvm.load_module), got {type(rt_mod).__name__}"
            )
        self.executable = rt_mod
        #: Most VM function frames open at once on one thread; deeper calls raise VMError.
        self.max_call_depth = default_max_call_depth()
        self.devices: list[Device] = setup_devices(device)
        self.allocators: list[Allocator] = setup_allocators(self.devices, memory_cfg)
        self._constants = [self._place_constant(c) for c in rt_mod.constants]
        self._functions: dict[str, PreparedFunction] = {}
        # _pool: what a function index means as a value (VMClosure for Relax functions);
        # _direct: what a Call instruction invokes (the closure's invoker, without the ctx).
        self._pool: list[Any] = []
        self._direct: list[Callable[..., Any]] = []
        self._build_function_pool()
        self._instrument: Callable[..., Any] | None = None
        self._profiler: Profiler | None = None  # set while profile() runs
        self._module: VMModule | None = None
        self._compile_all(None)
        #: Whether calls may replay a recorded run as one native call (docs/vm.md).
        self.native_functions = (
            native_plan.enabled_by_default() if native_functions is None else native_functions
        )
        self._native = native_plan.install(self)
        self._saved: dict[str, Callable[[], Any]] = {}
        self._inputs: dict[str, list[Any]] = {}
        self._outputs: dict[str, Any] = {}
        self._entries: dict[str, Callable[..., Any]] = {}

    # -- construction -------------------------------------------------------------------
    def _place_constant(self, value: Any) -> Any:
        # Constants live on the first device, like the arguments (a loaded executable's are
        # host tensors; tuples of them are placed element-wise).
        if isinstance(value, Tensor | tuple):
            return arg_to_device(value, self.devices[0], self.allocators[0])
        return value

    def _build_function_pool(self) -> None:
        ex = self.executable
        pool, direct = self._pool, self._direct
        missing: list[str] = []
        for info in ex.func_table:
            if info.kind is VMFuncKind.PACKED_FUNC:
                func = _find_import(ex, info.name) or registry.get_global_func(
                    info.name, allow_missing=True
                )
                if func is None:
                    missing.append(info.name)
                pool.append(func)
                # A library function may offer ``fast_call``: the same checked entry point
                # as a plain function, one Python frame cheaper per call.
                direct.append(getattr(func, "fast_call", func))  # type: ignore[arg-type]
                continue
            fn = PreparedFunction(info)
            self._functions[info.name] = fn
            if info.kind is VMFuncKind.VM_FUNC:
                fn.invoke = self._make_invoker(fn)
            else:
                fn.invoke = self._make_tir_invoker(fn, missing)
            invoke = fn.invoke

            def impl(ctx: Any, *args: Any, _invoke: Callable[..., Any] = invoke) -> Any:
                return _invoke(*args)

            fn.closure = VMClosure(info.name, impl)
            pool.append(fn.closure)
            direct.append(invoke)
        if missing:
            raise FunctionNotFoundError(missing_message(missing))

    def _compile_all(self, instrument: Callable[..., Any] | None) -> None:
        # Call plans (relaxvm.vm.callplan) by instruction: both exec modes read the same ones.
        self._plans: dict[int, CallPlan] = {}
        if self.executable.exec_mode == "compiled":
            # Python generated from the validated bytecode, now (the file holds data only).
            from .compiled import compile_functions

            compile_functions(self, instrument)
            return
        for fn in self._functions.values():
            if fn.info.kind is VMFuncKind.VM_FUNC:
                prepare(fn, self, instrument)

    def _make_invoker(self, fn: PreparedFunction) -> Callable[..., Any]:
        if self.executable.exec_mode == "compiled":
            num_args = fn.num_args

            def invoke_compiled(*args: Any) -> Any:
                if len(args) != num_args:
                    raise VMError(arity_message(fn, len(args)))
                return fn.compiled(*args)

            return invoke_compiled
        run = self._run

        def invoke(*args: Any) -> Any:
            return run(fn, args)

        return invoke

    def _make_tir_invoker(self, fn: PreparedFunction, missing: list[str]) -> Callable[..., Any]:
        # Compiled mode: the executable's imports provide "__vmtir__<name>", called as
        # impl(vm, registers, constants, function_pool); the result lands in register num_args.
        symbol = "__vmtir__" + fn.name
        impl = _find_import(self.executable, symbol)
        if impl is None:
            missing.append(symbol)
            return not_ready
        size = fn.info.register_file_size
        num_args = fn.num_args

        def invoke(*args: Any) -> Any:
            if len(args) != num_args:
                raise VMError(arity_message(fn, len(args)))
            regs = [*args, *([None] * (size - num_args))]
            impl(self, regs, self._constants, self._pool)
            return regs[num_args]

        return invoke

    # -- the dispatch loop --------------------------------------------------------------
    def _run(self, fn: PreparedFunction, args: tuple[Any, ...]) -> Any:
        if len(args) != fn.num_args:
            raise VMError(arity_message(fn, len(args)))
        calls = call_depth
        depth = calls.depth + 1
        if depth > self.max_call_depth:
            raise call_depth_error(fn.name, self.max_call_depth)
        calls.depth = depth
        regs = fn.template.copy()
        regs[: fn.num_args] = args
        code = fn.code
        pc = 0
        try:
            # Opcodes: see relaxvm.vm.frames (OP_*); the commonest first.
            while True:
                op, a, b = code[pc]
                if op == 7:  # OP_CALL1
                    f, s = b
                    regs[a] = f(regs[s])
                elif op == 9:  # OP_CALL3
                    f, s, t, u = b
                    regs[a] = f(regs[s], regs[t], regs[u])
                elif op == 5:  # OP_SET
                    regs[a] = b
                elif op == 1:  # OP_CALL: b is a closure over the slots
                    regs[a] = b(regs)
                elif op == 8:  # OP_CALL2
                    f, s, t = b
                    regs[a] = f(regs[s], regs[t])
                elif op == 6:  # OP_MOVE
                    regs[a] = regs[b]
                elif op == 2:  # OP_RET
                    return regs[a]
                elif op == 3:  # OP_GOTO
                    pc += a
                    continue
                else:  # OP_IF
                    cond = regs[a]
                    if type(cond) is not bool:
                        cond = condition(cond, fn, pc)
                    pc += 1 if cond else b
                    continue
                pc += 1
        except RecursionError:
            raise recursion_error(fn.name) from None
        except BaseException as err:
            add_trace_note(err, fn, pc, self.executable)
            index = fn.info.start_instr + pc if 0 <= pc < len(code) else None
            contained = contained_call_error(err, self.executable, index)
            if contained is None:
                raise
            raise contained from err
        finally:
            calls.depth = depth - 1

    # -- Python API ---------------------------------------------------------------------
    def __getitem__(self, name: str) -> Callable[..., Any]:
        """The callable for a Relax function or a saved function (saved ones first)."""
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        saved = self._saved.get(name)
        if saved is not None:
            return saved
        fn = self._functions.get(name)
        if fn is None:
            raise FunctionNotFoundError(
                f"VirtualMachine has no function {name!r}; its functions are "
                f"{', '.join(self._functions) or 'none'}"
                + (f" and saved functions {', '.join(self._saved)}" if self._saved else "")
            )
        entry = self._make_entry(fn)
        self._entries[name] = entry
        return entry

    def _make_entry(self, fn: PreparedFunction) -> Callable[..., Any]:
        invoke = fn.invoke
        device, allocator = self.devices[0], self.allocators[0]
        dev_type, dev_id = device.device_type, device.device_id

        def entry(*args: Any) -> Any:
            # Arguments land on the first device, as in TVM: a tensor on another device is
            # copied there, a numpy array (accepted for convenience) becomes a tensor there,
            # tuples are converted element-wise. The check is all a call pays when every
            # tensor is already in place.
            for value in args:
                kind = type(value)
                if kind is Tensor:
                    where = value.device
                    if where.device_type == dev_type and where.device_id == dev_id:
                        continue
                elif kind is not np.ndarray and kind is not tuple and kind is not list:
                    continue
                args = args_to_device(args, device, allocator)
                break
            return invoke(*args)

        entry.__name__ = fn.name
        entry.__doc__ = f"Run VM function {fn.name!r}({', '.join(fn.param_names)})."
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._functions or name in self._saved

    def invoke_closure(self, closure: VMClosure | Callable[..., Any], *args: Any) -> Any:
        """Call a closure returned by a VM function (or any callable) with ``args``.

        Raises
        ------
        VMTypeError
            ``closure`` is neither a VMClosure nor callable.
        """
        if type(closure) is VMClosure:
            # As a call vm[name](*args): arguments move to the first device.
            args = args_to_device(args, self.devices[0], self.allocators[0])
            return closure.impl(self, *args)
        if callable(closure):
            return closure(*args)
        raise VMTypeError(
            f"invoke_closure: expected a VMClosure or a function, got {type(closure).__name__}"
        )

    def get_function_arity(self, func_name: str) -> int:
        """Number of parameters of ``func_name``."""
        return self._function(func_name).num_args

    def get_function_param_name(self, func_name: str, index: int) -> str:
        """Name of parameter ``index`` of ``func_name``."""
        fn = self._function(func_name)
        if not 0 <= index < fn.num_args:
            raise VMValueError(f"Invalid index for {func_name} ({index} out of {fn.num_args})")
        return fn.param_names[index]

    def _function(self, func_name: str) -> PreparedFunction:
        fn = self._functions.get(func_name)
        if fn is None:
            raise VMValueError(f"Unknown function: {func_name}")
        return fn

    def _convert_inputs(
        self, func_name: str, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> list[Any]:
        return convert_inputs(self._function(func_name), self.devices[0], args, kwargs)

    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Store the inputs of ``func_name`` for :meth:`invoke_stateful`.

        Arguments are converted to the first device: numpy arrays and Python numbers become
        tensors (ints and bools 0-d int32, other numbers 0-d float32), lists and tuples become
        tuples; keyword arguments are matched to parameter names.

        Raises
        ------
        VMValueError
            Unknown function, unknown keyword, or the wrong number of arguments.
        VMTypeError
            An argument cannot be converted.
        """
        self._inputs[func_name] = self._convert_inputs(func_name, args, kwargs)

    def invoke_stateful(self, func_name: str) -> None:
        """Run ``func_name`` on the inputs from :meth:`set_input` and keep the result."""
        self._function(func_name)
        inputs = self._inputs.get(func_name)
        if inputs is None:
            raise VMValueError(
                f"No inputs set for stateful call of {func_name}; use `set_input` first."
            )
        self._outputs[func_name] = self._functions[func_name].invoke(*inputs)

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last :meth:`invoke_stateful` of ``func_name`` (tuples nested)."""
        if func_name not in self._outputs:
            raise VMValueError(
                f'No output saved for call of "{func_name}"; use `invoke_stateful` to call it first.'
            )
        return self._outputs[func_name]

    def save_function(
        self,
        func_name: str,
        saved_name: str,
        *args: Any,
        include_return: bool = True,
        **kwargs: Any,
    ) -> None:
        """Bind converted ``args`` to ``func_name`` and store the result as ``vm[saved_name]``,
        a function of no arguments (for timing without per-call conversion)."""
        inputs = self._convert_inputs(func_name, args, kwargs)
        invoke = self._functions[func_name].invoke

        def saved() -> Any:
            result = invoke(*inputs)
            return result if include_return else None

        saved.__name__ = saved_name
        self._saved[saved_name] = saved
        self._entries.pop(saved_name, None)

    def set_instrument(self, instrument: Callable[..., Any] | None) -> None:
        """Call ``instrument(func, func_symbol, before_run, ret_value, *args)`` around every
        Call instruction; returning :attr:`VMInstrumentReturnKind.SKIP_RUN` before a call skips
        it (its destination gets ``None``). ``None`` removes the instrument."""
        if instrument is not None and not callable(instrument):
            raise VMTypeError(
                f"set_instrument: expected a callable or None, got {type(instrument).__name__}"
            )
        self._instrument = instrument
        self._compile_all(instrument)

    def profile(self, func_name: str, *args: Any, warmup: int = 0) -> ProfileReport:
        """Run ``func_name`` once with every Call instruction timed; return the report.

        Parameters
        ----------
        func_name : str
            A Relax function or a saved function, as for ``vm[func_name]``.
        *args
            Its arguments, as for ``vm[func_name](*args)``; none: the :meth:`set_input`
            inputs of ``func_name`` when there are some (as TVM's ``profile``).
        warmup : int
            Calls made first and left out of the report (so that memory pools, caches and
            the freshly built profiled code are warm); 1 gives steadier numbers.

        Returns
        -------
        ProfileReport
            Per call site and per op: count, self and inclusive time, share, new bytes;
            ``table()``, ``csv()``, ``json()``, ``chrome_trace()`` (docs/profiling.md).

        Raises
        ------
        FunctionNotFoundError, VMError, ...
            What ``vm[func_name](*args)`` raises (unknown name, wrong arity, a failing
            kernel); :class:`VMError` also for ``profile`` called inside a profiled run.

        Notes
        -----
        Profiling is switched on for this one call only: the VM's functions are rebuilt with
        timed calls and get their own code back when it returns or raises, so a VM that is
        not being profiled runs no profiler code. Calls made from other threads meanwhile are
        timed too (and land in the report).
        """
        from .profiler import profile

        return profile(self, func_name, args, warmup)

    @property
    def module(self) -> VMModule:
        """The VM as a runtime module (TVM's ``vm.module``): ``vm.module[name]`` and
        ``vm.module.get_function(name)`` give what ``vm[name]`` gives; see
        :class:`~relaxvm.vm.module.VMModule`."""
        if self._module is None:
            from .module import VMModule

            self._module = VMModule(self)
        return self._module

    def time_evaluator(
        self,
        func_name: str,
        dev: Device | None = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: int = 0,
        cooldown_interval_ms: int = 0,
        repeats_to_cooldown: int = 1,
        f_preproc: str = "",
    ) -> Callable[..., BenchmarkResult]:
        """A function that times ``func_name`` and returns a :class:`BenchmarkResult`.

        ``func_name`` may be a Relax function, a saved function, or ``"invoke_stateful"`` (then
        the timed call's argument is the function name). One warm-up call precedes
        ``repeat`` measurements of ``number`` calls each; with ``min_repeat_ms`` the number
        of calls grows until one measurement lasts that long.
        """
        if func_name == "invoke_stateful":
            target: Callable[..., Any] = self.invoke_stateful
        else:
            target = self[func_name]
        if number < 1 or repeat < 1:
            raise VMValueError("time_evaluator: number and repeat must be >= 1")
        return make_evaluator(
            target, dev, number, repeat, min_repeat_ms, cooldown_interval_ms, repeats_to_cooldown
        )

    def __repr__(self) -> str:
        return f"<VirtualMachine on {self.devices}: {', '.join(self._functions)}>"


# -- construction helpers -------------------------------------------------------------------
def _find_import(ex: Executable, name: str) -> Callable[..., Any] | None:
    for module in ex.imports:
        func = module.get_function(name, query_imports=True)
        if func is not None:
            return func
    return None
