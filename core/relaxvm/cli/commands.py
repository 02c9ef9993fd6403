"""The ``relaxvm`` command line (also ``python -m relaxvm``).

Subcommands
-----------
``demo``
    Build, save, load and run a small program; compare with numpy (exit 1 on a mismatch).
``plugins``
    The installed plugins, their status, and per plugin its functions, legalizations and
    targets (``-v``: every registration and its fate; ``--json``: the same facts as JSON); a
    broken plugin is listed with its reason, and the command exits with status 1
    (:mod:`relaxvm.cli.plugin_list`).
``inspect FILE``
    Show a saved executable as text, as Python, or as statistics, then one line per kernel
    library that describes itself (how its kernels were built, e.g. the llvm target's
    vector width, register tile and cache sizes).
``run FILE``
    Run a function of a saved executable on inputs from ``.npy`` / ``.npz`` files and
    ``--arg NAME=VALUE`` scalars, bound by parameter name (:mod:`relaxvm.cli.inputs`).
``compile MODEL.py`` (alias ``build``) / ``bench MODEL.py|FILE``
    Compile a model file into an executable; time (and ``--profile``) a function, on given
    or random inputs (see :mod:`relaxvm.cli.build`).

Every expected failure (a command line that does not parse, a missing or corrupt file, an
unknown function, bad inputs, a failing program) prints one line to standard error and exits with status 1; ``--traceback`` shows the
full Python traceback instead, for debugging relaxvm itself.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

from .. import __version__
from ..errors import FunctionNotFoundError
from ..runtime import Shape, Tensor, cpu
from ..vm.closure import VMClosure
from ..vm.interpreter import VirtualMachine
from .common import CLIError, format_ms, load_executable, one_line
from .inputs import (
    add_input_arguments,
    bind_inputs,
    missing_error,
    params_from_executable,
    to_vm_value,
)
from .plugin_list import cmd_plugins

__all__ = ["CLIError", "main"]


class UsageError(CLIError):
    """A command line that does not parse (argparse's own complaints), as a :class:`CLIError`."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit status 1, like every other
    mistake (argparse's own would print the usage and exit with 2). Subcommand parsers are
    made of this class too (``add_subparsers`` uses the parent's class)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, " ".join(message.split()))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        0 on success; 1 for any mistake or failure, reported as one line on standard error
        (``relaxvm COMMAND: error: ...``); 130 when interrupted. ``--help`` and
        ``--version`` exit with status 0 through ``SystemExit``.
    """
    parser, subparsers = _build_parser()
    try:
        options = _parse(parser, subparsers, argv)
    except UsageError as err:
        print(f"{err.prog}: error: {err}", file=sys.stderr)
        return 1
    try:
        return int(options.handler(options))
    except KeyboardInterrupt:
        print("relaxvm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``relaxvm plugins --functions | head``): not an error. Point
        # stdout at /dev/null so the interpreter's final flush does not complain again.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout has no file descriptor (captured, replaced)
            pass
        return 0
    except Exception as err:
        if options.traceback:
            raise
        print(f"relaxvm {options.command}: error: {one_line(err)}", file=sys.stderr)
        return 1


def _parse(
    parser: argparse.ArgumentParser,
    subparsers: dict[str, argparse.ArgumentParser],
    argv: Sequence[str] | None,
) -> argparse.Namespace:
    options, extras = parser.parse_known_args(argv)
    if options.command is None:
        parser.error(f"a command is required ({', '.join(subparsers)}); see relaxvm --help")
    command = subparsers[options.command]
    # argparse stops collecting the X.npy positionals at the first option, so files given
    # after `--func main` come back as extras; for run and bench they are inputs too.
    if extras:
        if hasattr(options, "inputs") and not any(e.startswith("-") for e in extras):
            options.inputs = [*options.inputs, *extras]
        else:
            command.error(f"unrecognized arguments: {' '.join(extras)}")
    return options


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and the parser of each subcommand by name (for their error messages)."""
    parser = _Parser(
        prog="relaxvm",
        description="relaxvm: Apache TVM's Relax virtual machine, rebuilt in Python.",
    )
    parser.add_argument("--version", action="version", version=f"relaxvm {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on error, show the Python traceback instead of one line",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="build, save, load and run a small program; compare with numpy",
        description="Build a small program (hand-written bytecode calling a numpy kernel and "
        "the vm.builtin shape checks), save it, load it back, print it, run it and compare "
        "with numpy. Prints PASS or FAIL; exits 1 on FAIL.",
    )
    demo.add_argument("--save", metavar="PATH", help="keep the executable at PATH")
    demo.add_argument("--no-text", action="store_true", help="do not print as_text()")
    demo.set_defaults(handler=_cmd_demo)

    plugin_cmd = commands.add_parser(
        "plugins",
        help="list installed plugins and what they registered",
        description="Load the plugins (honouring RELAXVM_PLUGINS / RELAXVM_DISABLE_PLUGINS) "
        "and list each entry point with its status, module, distribution and how many things "
        "it registered. A plugin that fails to load is listed as failed, with the reason; the "
        "command then exits with status 1, since relaxvm cannot run until it is fixed or "
        "skipped.",
    )
    plugin_cmd.add_argument(
        "--functions", action="store_true", help="also list every registered function"
    )
    plugin_cmd.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also list what each plugin registered: functions, legalizations, targets",
    )
    plugin_cmd.add_argument(
        "--json",
        action="store_true",
        help="print each plugin's status, functions, legalizations and targets as JSON",
    )
    plugin_cmd.set_defaults(handler=cmd_plugins)

    inspect = commands.add_parser(
        "inspect",
        help="show a saved executable",
        description="Load an executable written by Executable.save or export_library and "
        "print it, then, for an export, one line per kernel library on how its kernels were "
        "built (for llvm: vector width, register tile, cache sizes, packing, threads).",
    )
    inspect.add_argument("file", metavar="FILE")
    view = inspect.add_mutually_exclusive_group()
    view.add_argument(
        "--text", dest="view", action="store_const", const="text", help="as_text() (default)"
    )
    view.add_argument(
        "--python", dest="view", action="store_const", const="python", help="as_python()"
    )
    view.add_argument("--stats", dest="view", action="store_const", const="stats", help="stats()")
    inspect.set_defaults(handler=_cmd_inspect, view="text")

    run = commands.add_parser(
        "run",
        help="run a function of a saved executable on numpy inputs",
        description="Run a function of an executable file on the CPU and print a summary of "
        "each output. Inputs: .npy files for the first parameters in order, --inputs IN.npz "
        "(keys are parameter names, or arr_0, arr_1, ... as np.savez writes them), --params "
        "W.npz (keys are parameter names) and --arg NAME=VALUE (a scalar for an R.Prim "
        "parameter, or an .npy file), in any order. Every parameter must get a value.",
    )
    add_input_arguments(run, "run")
    run.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE[:FUNC]",
        help="import MODULE (from sys.path or the working directory) and call FUNC first, to "
        "register the kernels the executable calls; may be repeated (the demo's: "
        "relaxvm.cli.demo_bytecode:register_kernels)",
    )
    run.add_argument("--repeat", type=int, default=0, metavar="N", help="also time N runs")
    run.add_argument("--output", metavar="OUT.npz", help="save the outputs to an .npz file")
    run.set_defaults(handler=_cmd_run)

    from .build import add_commands

    add_commands(commands)
    return parser, dict(commands.choices)


# -- demo --------------------------------------------------------------------------------------
def _cmd_demo(options: argparse.Namespace) -> int:
    from .demo import run_demo

    ok = run_demo(save_path=options.save, show_text=not options.no_text, out=sys.stdout)
    return 0 if ok else 1


# -- inspect -----------------------------------------------------------------------------------


def _cmd_inspect(options: argparse.Namespace) -> int:
    ex = load_executable(options.file)
    render = {"text": ex.as_text, "python": ex.as_python, "stats": ex.stats}[options.view]
    text = render()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    comment = "# " if options.view == "python" else ""  # the Python view stays runnable
    for line in _kernel_lib_lines(ex):
        sys.stdout.write(f"{comment}{line}\n")
    return 0


def _kernel_lib_lines(ex: Any) -> list[str]:
    """What each kernel library of ``ex`` says about how it was built: a module may offer
    ``describe() -> str`` (core knows no target; a kind's modules define it if they wish)."""
    lines = []
    for kind_name, _target, module in getattr(ex, "kernel_libs", ()):
        describe = getattr(module, "describe", None)
        text = describe() if callable(describe) else ""
        if not isinstance(text, str) or not text:
            continue
        # The text comes from the file: keep one line of printable characters.
        text = "".join(ch if ch.isprintable() else "?" for ch in " ".join(text.split()))
        lines.append(text if text.startswith(kind_name) else f"{kind_name}: {text}")
    return lines


# -- run ---------------------------------------------------------------------------------------
def _cmd_run(options: argparse.Namespace) -> int:
    if options.repeat < 0:
        raise CLIError(f"--repeat must be >= 0, got {options.repeat}")
    ex = load_executable(options.file)
    for spec in options.imports:
        _import_setup(spec)
    name = options.func
    if not ex.has_function(name):
        raise CLIError(
            f"{options.file} has no function {name!r}; its functions are "
            f"{', '.join(ex.function_names()) or 'none'}"
        )
    device = cpu()
    try:
        vm = VirtualMachine(ex, device)
    except FunctionNotFoundError as err:
        raise CLIError(
            f"{one_line(err)}. An executable names the kernels it calls; register them "
            "before running it, e.g. with --import MODULE:FUNCTION"
        ) from err
    specs = params_from_executable(ex, name)
    bound = bind_inputs(options, specs, name)
    if len(bound) < len(specs):
        raise missing_error(specs, bound, name)
    args = [to_vm_value(spec, bound[spec.name]) for spec in specs]
    result = vm[name](*args)
    out = sys.stdout
    print(f"{name}({', '.join(spec.name for spec in specs)}) returned:", file=out)
    leaves = list(_flatten(result, "output"))
    for label, value in leaves:
        print(f"  {label}: {_summary(value)}", file=out)
    if options.output:
        _save_outputs(options.output, leaves)
        print(f"saved the outputs to {options.output}", file=out)
    if options.repeat:
        timing = vm.time_evaluator(name, device, number=1, repeat=options.repeat)(*args)
        print(
            f"time over {options.repeat} runs: mean {format_ms(timing.mean)}, median "
            f"{format_ms(timing.median)}, min {format_ms(timing.min)}, max {format_ms(timing.max)}, "
            f"std {format_ms(timing.std)}",
            file=out,
        )
    return 0


def _import_setup(spec: str) -> None:
    """Import ``module`` or ``module:function`` and call the function (entry-point syntax)."""
    module_name, _, func_name = spec.partition(":")
    # The ``relaxvm`` script's sys.path lacks the working directory (``python -m`` has it);
    # a kernels file next to the executable should import either way.
    added = os.getcwd() not in sys.path
    if added:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise CLIError(f"--import {spec}: cannot import {module_name!r}: {err}") from err
    finally:
        if added:
            sys.path.remove(os.getcwd())
    if func_name:
        func = getattr(module, func_name, None)
        if not callable(func):
            raise CLIError(f"--import {spec}: module {module_name!r} has no function {func_name!r}")
        func()


def _flatten(value: Any, label: str) -> Iterator[tuple[str, Any]]:
    """(label, leaf) pairs of a possibly nested tuple output: ``output[1][0]``."""
    if isinstance(value, tuple) and not isinstance(value, Shape):
        for index, item in enumerate(value):
            yield from _flatten(item, f"{label}[{index}]")
    else:
        yield label, value


def _summary(value: Any) -> str:
    if isinstance(value, Tensor):
        array = value.numpy()
        text = f"Tensor shape={tuple(array.shape)} dtype={value.dtype}"
        if array.size and array.dtype.kind in "biuf":
            numbers = array.astype("float64")
            text += f" min={numbers.min():.6g} max={numbers.max():.6g} mean={numbers.mean():.6g}"
        flat = array.reshape(-1)
        shown = np.array2string(flat[:6], precision=5, separator=", ")
        return text + f" values={shown[:-1]}{', ...]' if flat.size > 6 else ']'}"
    if isinstance(value, Shape):
        return f"Shape{tuple(value)}"
    if isinstance(value, VMClosure):
        return f"closure {value.func_name}"
    return f"{type(value).__name__} {value!r}"


def _save_outputs(path: str, leaves: list[tuple[str, Any]]) -> None:
    arrays: dict[str, np.ndarray] = {}
    for label, value in leaves:
        # output[1][0] -> output_1_0: a valid, predictable .npz key.
        key = label.replace("][", "_").replace("[", "_").replace("]", "")
        if isinstance(value, Tensor):
            arrays[key] = value.numpy()
        elif isinstance(value, Shape):
            arrays[key] = np.array(tuple(value), dtype="int64")
        elif isinstance(value, bool | int | float | np.generic):
            arrays[key] = np.asarray(value)
        else:
            raise CLIError(
                f"--output: {label} is a {type(value).__name__}, which an .npz file cannot hold"
            )
    # Keys are output_* so none can collide with savez's own allow_pickle keyword (numpy >= 2.1),
    # which is what the stubs' complaint is about; numpy 1.x has no such keyword to pass.
    np.savez(path, **arrays)  # type: ignore[arg-type]


if __name__ == "__main__":  # pragma: no cover - python -m relaxvm
    sys.exit(main())
