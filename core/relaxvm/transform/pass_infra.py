"""Pass infrastructure: passes, ``Sequential``, ``PassContext`` and instruments.

A pass maps an :class:`IRModule` to a new one (modules are never changed in place). Passes are
made with the :func:`module_pass` and :func:`function_pass` decorators (or by subclassing
:class:`Pass`) and composed with :class:`Sequential`. The current :class:`PassContext` carries the
optimisation level, configuration, the passes to skip or force, instruments (timing, IR dumps)
and the target being compiled for.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..errors import CompileError, RelaxVMError
from ..ir.relax.block import Function
from ..ir.relax.module import IRModule

__all__ = [
    "FunctionPass",
    "ModulePass",
    "Pass",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "PassTimingInstrument",
    "PrintIRInstrument",
    "Sequential",
    "function_pass",
    "module_pass",
]


@dataclass(frozen=True)
class PassInfo:
    """A pass's name, the lowest opt level it runs at, and the passes it requires."""

    name: str
    opt_level: int = 0
    required: tuple[str, ...] = ()


class Pass:
    """Base of every pass: ``new_mod = pass_(mod)``.

    Subclasses implement :meth:`transform_module`; calling the pass checks the argument, asks
    the current :class:`PassContext` whether to run, and notifies its instruments.
    """

    info: PassInfo

    def __init__(self, info: PassInfo) -> None:
        self.info = info

    @property
    def name(self) -> str:
        """The pass's name."""
        return self.info.name

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Return the transformed module (override in subclasses)."""
        raise NotImplementedError(f"pass {self.name!r} does not implement transform_module")

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(f"pass {self.name!r}: expected an IRModule, got {type(mod).__name__}")
        ctx = PassContext.current()
        if not ctx.should_run(self) or not all(
            instrument.should_run(mod, self.info) for instrument in ctx.instruments
        ):
            return mod
        ctx._run_before(mod, self.info)
        started = time.perf_counter()
        try:
            result = self.transform_module(mod, ctx)
        except RelaxVMError:
            raise
        except Exception as err:
            # An internal failure still names the pass, so a bug report says where it broke.
            raise CompileError(f"pass {self.name!r} failed: {type(err).__name__}: {err}") from err
        if not isinstance(result, IRModule):
            raise CompileError(
                f"pass {self.name!r} returned {type(result).__name__}, not an IRModule"
            )
        ctx._run_after(result, self.info, time.perf_counter() - started)
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, opt_level={self.info.opt_level})"


class ModulePass(Pass):
    """A pass from a function ``transform(mod, ctx) -> IRModule``."""

    def __init__(self, transform: Callable[[IRModule, PassContext], IRModule], info: PassInfo):
        super().__init__(info)
        self._transform = transform

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self._transform(mod, ctx)


class FunctionPass(Pass):
    """A pass applying ``transform(func, mod, ctx) -> Function`` to each Relax function.

    PrimFuncs and other module members are left alone. Functions are visited in module order;
    one that comes back as the same object is not replaced.
    """

    def __init__(
        self,
        transform: Callable[[Function, IRModule, PassContext], Function],
        info: PassInfo,
    ) -> None:
        super().__init__(info)
        self._transform = transform

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        result = mod.copy()
        for gvar, func in mod.items():
            if not isinstance(func, Function):
                continue
            new = self._transform(func, mod, ctx)
            if new is not func:
                result.update_func(gvar, new)
        return result


def _decorator(
    pass_type: type[ModulePass] | type[FunctionPass],
    pass_func: Callable[..., Any] | None,
    opt_level: int,
    name: str | None,
    required: Sequence[str],
) -> Any:
    def make(func: Callable[..., Any]) -> Pass:
        info = PassInfo(name or func.__name__, opt_level, tuple(required))
        made = pass_type(func, info)
        functools.update_wrapper(made, func, updated=())
        return made

    return make if pass_func is None else make(pass_func)


def module_pass(
    pass_func: Callable[[IRModule, PassContext], IRModule] | None = None,
    *,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] = (),
) -> Any:
    """Make a :class:`ModulePass` from ``pass_func(mod, ctx) -> IRModule`` (a decorator, with
    or without arguments)."""
    return _decorator(ModulePass, pass_func, opt_level, name, required)


def function_pass(
    pass_func: Callable[[Function, IRModule, PassContext], Function] | None = None,
    *,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] = (),
) -> Any:
    """Make a :class:`FunctionPass` from ``pass_func(func, mod, ctx) -> Function``."""
    return _decorator(FunctionPass, pass_func, opt_level, name, required)


class Sequential(Pass):
    """Run passes in order.

    Parameters
    ----------
    passes : sequence of Pass
    opt_level : int
    name : str
    """

    def __init__(
        self, passes: Sequence[Pass] = (), opt_level: int = 0, name: str = "sequential"
    ) -> None:
        super().__init__(PassInfo(name, opt_level))
        self.passes: list[Pass] = []
        for index, item in enumerate(passes):
            if not isinstance(item, Pass):
                raise TypeError(
                    f"Sequential {name!r}: item {index} is a {type(item).__name__}, not a Pass"
                )
            self.passes.append(item)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for item in self.passes:
            mod = item(mod)
        return mod

    def __iter__(self) -> Iterator[Pass]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def __repr__(self) -> str:
        return f"Sequential({self.name!r}, [{', '.join(p.name for p in self.passes)}])"


class PassInstrument:
    """Hooks around pass execution; subclass and override what you need."""

    def enter_pass_ctx(self) -> None:
        """Called when the PassContext holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """Called when it is exited."""

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """Return False to skip the pass."""
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called before a pass runs, with its input."""

    def run_after_pass(self, mod: IRModule, info: PassInfo, seconds: float) -> None:
        """Called after a pass ran, with its output and how long it took."""


class PassTimingInstrument(PassInstrument):
    """Record the time each pass takes; :meth:`render` gives a table, slowest first."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []

    def run_after_pass(self, mod: IRModule, info: PassInfo, seconds: float) -> None:
        self.timings.append((info.name, seconds))

    def render(self) -> str:
        """One line per pass: total milliseconds and call count, slowest first."""
        totals: dict[str, list[float]] = {}
        for name, seconds in self.timings:
            totals.setdefault(name, []).append(seconds)
        rows = sorted(totals.items(), key=lambda item: -sum(item[1]))
        width = max((len(name) for name, _ in rows), default=4)
        lines = [f"{'pass':<{width}}  {'ms':>9}  calls"]
        for name, values in rows:
            lines.append(f"{name:<{width}}  {sum(values) * 1e3:9.3f}  {len(values)}")
        return "\n".join(lines)


class PrintIRInstrument(PassInstrument):
    """Print the module before and/or after the named passes (all passes when ``passes`` is
    empty) to ``stream`` (default: standard error)."""

    def __init__(
        self,
        passes: Iterable[str] = (),
        before: bool = False,
        after: bool = True,
        stream: TextIO | None = None,
    ) -> None:
        self.passes = set(passes)
        self.before, self.after = before, after
        self.stream = stream

    def _wanted(self, info: PassInfo) -> bool:
        return not self.passes or info.name in self.passes

    def _print(self, when: str, mod: IRModule, info: PassInfo) -> None:
        import sys

        stream = self.stream or sys.stderr
        print(f"# ---- IR {when} {info.name} ----", file=stream)
        print(mod.script() if hasattr(mod, "script") else str(mod), file=stream)

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        if self.before and self._wanted(info):
            self._print("before", mod, info)

    def run_after_pass(self, mod: IRModule, info: PassInfo, seconds: float) -> None:
        if self.after and self._wanted(info):
            self._print("after", mod, info)


_state = threading.local()


@dataclass
class PassContext:
    """The settings passes run under; use as ``with PassContext(opt_level=3, ...):``.

    Attributes
    ----------
    opt_level : int
        Passes whose ``opt_level`` is higher are skipped unless listed in ``required_pass``.
    config : dict
        Free-form options read by passes (``"relax.FuseOps.max_depth"`` ...).
    required_pass, disabled_pass : sequence of str
        Pass names always run / never run.
    instruments : sequence of PassInstrument
    target : relaxvm.target.Target or None
        The target being compiled for (set by ``relaxvm.compile``).
    """

    opt_level: int = 2
    config: Mapping[str, Any] = field(default_factory=dict)
    required_pass: Sequence[str] = ()
    disabled_pass: Sequence[str] = ()
    instruments: Sequence[PassInstrument] = ()
    target: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.opt_level, int) or not 0 <= self.opt_level <= 4:
            raise ValueError(
                f"PassContext: opt_level must be an int in 0..4, got {self.opt_level!r}"
            )
        for index, instrument in enumerate(self.instruments):
            if not isinstance(instrument, PassInstrument):
                raise TypeError(
                    f"PassContext: instruments[{index}] is a {type(instrument).__name__}, "
                    "not a PassInstrument"
                )
        self.config = dict(self.config)

    @staticmethod
    def current() -> PassContext:
        """The innermost active context (a default one when none is active)."""
        stack = getattr(_state, "stack", None)
        if not stack:
            _state.stack = stack = [PassContext()]
        return stack[-1]  # type: ignore[no-any-return]

    def __enter__(self) -> PassContext:
        stack = getattr(_state, "stack", None)
        if stack is None:
            _state.stack = stack = [PassContext()]
        stack.append(self)
        for instrument in self.instruments:
            instrument.enter_pass_ctx()
        return self

    def __exit__(self, *exc: object) -> None:
        for instrument in self.instruments:
            instrument.exit_pass_ctx()
        _state.stack.pop()

    def should_run(self, item: Pass) -> bool:
        """Whether ``item`` runs in this context."""
        info = item.info
        if isinstance(item, Sequential):
            return info.name not in self.disabled_pass
        if info.name in self.disabled_pass:
            return False
        return info.name in self.required_pass or info.opt_level <= self.opt_level

    def _run_before(self, mod: IRModule, info: PassInfo) -> None:
        for instrument in self.instruments:
            instrument.run_before_pass(mod, info)

    def _run_after(self, mod: IRModule, info: PassInfo, seconds: float) -> None:
        for instrument in self.instruments:
            instrument.run_after_pass(mod, info, seconds)
