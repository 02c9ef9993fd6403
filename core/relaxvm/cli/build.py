"""The ``compile`` and ``bench`` subcommands of the ``relaxvm`` command line.

``compile MODEL.py | MODEL.onnx``
    Run a model file (a Python file defining an ``@I.ir_module`` class, or any IRModule) or
    import an ONNX file (``--shape`` overrides its input shapes; :mod:`relaxvm.cli.onnx_load`),
    compile the module for a target and write the executable with ``export_library``.
``bench MODEL.py | MODEL.onnx | EXE.rvm``
    Time a function on given inputs, or on random inputs made from its parameter annotations.

They live apart from :mod:`relaxvm.cli.commands` because they need the compiler (and so the IR), which
the other subcommands never import.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import RelaxVMError
from .common import CLIError, format_ms, load_executable
from .inputs import (
    ParamSpec,
    add_input_arguments,
    bind_inputs,
    params_from_executable,
    params_from_function,
    to_vm_value,
)
from .onnx_load import add_shape_argument, is_onnx_file, load_onnx
from .random_inputs import describe, infer_dims, parse_dims, random_value, symbolic_names

__all__ = ["add_commands", "load_any", "load_model"]


def add_commands(commands: Any) -> None:
    """Add ``compile`` and ``bench`` to the ``relaxvm`` subcommand parser."""
    compile_cmd = commands.add_parser(
        "compile",
        aliases=["build"],
        help="compile a model file (script format or ONNX) into an executable file",
        description="Run MODEL.py, take the IRModule it defines (an @I.ir_module class or any "
        "IRModule at top level; --module picks one when there are several), or import "
        "MODEL.onnx (its symbolic dims stay symbolic; --shape overrides input shapes), compile "
        "it and write the executable with export_library (kernels included). A .py model file "
        "is Python and runs as such: compile only files you trust.",
    )
    compile_cmd.add_argument("model", metavar="MODEL")
    compile_cmd.add_argument("-o", "--output", metavar="OUT.rvm", help="default: MODEL.rvm")
    _add_build_options(compile_cmd)
    compile_cmd.add_argument(
        "--time-passes", action="store_true", help="print the time each pass took"
    )
    compile_cmd.add_argument(
        "--print-ir", action="store_true", help="print the module before compiling"
    )
    compile_cmd.add_argument(
        "--text", action="store_true", help="print the executable's bytecode (as_text)"
    )
    add_shape_argument(compile_cmd)
    compile_cmd.set_defaults(handler=_cmd_compile)

    bench = commands.add_parser(
        "bench",
        help="time a function of a model file (.py or .onnx) or executable",
        description="Time FUNC with time_evaluator. Inputs are given as for run (.npy files, "
        "--inputs, --params, --arg, in any order); for a model file, every parameter left "
        "without a value gets a random one made from its annotation (give symbolic sizes "
        "with --dim n=64).",
    )
    add_input_arguments(bench, "time")
    bench.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="the size of a symbolic dimension for random inputs; may be repeated",
    )
    bench.add_argument(
        "--profile",
        action="store_true",
        help="after timing, run once with the profiler and print its per-op table",
    )
    add_shape_argument(bench)
    bench.add_argument("--number", type=int, default=10, help="calls per measurement")
    bench.add_argument("--repeat", type=int, default=5, help="measurements")
    _add_build_options(bench)
    bench.set_defaults(handler=_cmd_bench)


def _add_build_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="llvm", help="target (default: llvm)")
    parser.add_argument(
        "--exec-mode", default="bytecode", choices=["bytecode", "compiled"], help="VM mode"
    )
    parser.add_argument("--module", metavar="NAME", help="which IRModule of the file to use")
    parser.add_argument("--pipeline", default="default", help="relax pipeline (default: default)")


# -- loading a model file ------------------------------------------------------------------------
def load_model(path: str, name: str | None = None) -> tuple[str, Any]:
    """Run the Python file ``path`` and return ``(name, IRModule)`` of the module it defines.

    Raises
    ------
    CLIError
        The file is missing or fails, or it defines no IRModule, or several and ``name`` does
        not pick one.
    """
    from ..ir.relax import IRModule

    if not os.path.isfile(path):
        raise CLIError(f"no such model file: {path}")
    try:
        namespace = runpy.run_path(path, run_name="__relaxvm_model__")
    except RelaxVMError:
        raise
    except SystemExit as err:
        raise CLIError(f"{path} exited (status {err.code}) while being loaded") from err
    except Exception as err:
        raise CLIError(f"{path} failed to run: {type(err).__name__}: {err}") from err
    modules = {key: value for key, value in namespace.items() if isinstance(value, IRModule)}
    if name is not None:
        if name not in modules:
            raise CLIError(
                f"{path} defines no IRModule named {name!r}; it defines "
                f"{', '.join(sorted(modules)) or 'none'}"
            )
        return name, modules[name]
    if len(modules) != 1:
        what = ", ".join(sorted(modules)) if modules else "none"
        raise CLIError(
            f"{path} must define exactly one IRModule (an @I.ir_module class) or you must "
            f"pick one with --module; it defines {what}"
        )
    return next(iter(modules.items()))


def load_any(path: str, options: argparse.Namespace) -> tuple[str, Any]:
    """``(name, IRModule)`` of a Python model file or an ONNX file, by its suffix."""
    shapes = getattr(options, "shape", [])
    if is_onnx_file(path):
        if options.module is not None:
            raise CLIError(
                "--module picks one IRModule of a Python model file; an ONNX file holds one model"
            )
        return load_onnx(path, shapes)
    if shapes:
        raise CLIError(f"--shape applies to ONNX models (.onnx files), not to {path}")
    return load_model(path, options.module)


def _compile(mod: Any, options: argparse.Namespace, instruments: Sequence[Any] = ()) -> Any:
    from .. import transform
    from ..backend.build import build

    with transform.PassContext(opt_level=3, instruments=list(instruments)):
        return build(
            mod,
            target=options.target,
            relax_pipeline=options.pipeline,
            exec_mode=options.exec_mode,
        )


# -- compile -------------------------------------------------------------------------------------
def _cmd_compile(options: argparse.Namespace) -> int:
    from .. import transform

    name, mod = load_any(options.model, options)
    out = sys.stdout
    if options.print_ir:
        print(mod.script(), file=out)
    timing = transform.PassTimingInstrument()
    started = time.perf_counter()
    print(f"compiling {name} from {options.model} for {options.target} ...", file=out, flush=True)
    ex = _compile(mod, options, [timing] if options.time_passes else [])
    seconds = time.perf_counter() - started
    output = options.output or os.path.splitext(options.model)[0] + ".rvm"
    ex.export_library(output)
    functions = ", ".join(ex.function_names())
    print(f"compiled in {seconds:.2f} s: functions {functions}", file=out)
    print(f"wrote {output} ({os.path.getsize(output)} bytes)", file=out)
    if options.time_passes:
        print(timing.render(), file=out)
    if options.text:
        print(ex.as_text(), file=out)
    return 0


# -- bench ---------------------------------------------------------------------------------------
def _cmd_bench(options: argparse.Namespace) -> int:
    from ..runtime import cpu
    from ..vm.interpreter import VirtualMachine

    if options.number < 1 or options.repeat < 1:
        raise CLIError("--number and --repeat must be >= 1")
    out = sys.stdout
    name = options.func
    model = options.file.endswith(".py") or is_onnx_file(options.file)
    dims: dict[str, int] = {}
    if model:
        _, mod = load_any(options.file, options)
        if name not in mod:
            raise CLIError(f"{options.file} has no function {name!r}")
        specs = params_from_function(mod[name])
        # Checked before compiling: a misspelt --dim must not cost a compilation.
        dims = parse_dims(options.dim, symbolic_names(specs), name)
        bound = bind_inputs(options, specs, name)
        started = time.perf_counter()
        ex = _compile(mod, options)
        print(f"compiled for {options.target} in {time.perf_counter() - started:.2f} s", file=out)
    else:
        if options.shape:
            raise CLIError(f"--shape applies to ONNX models (.onnx files), not to {options.file}")
        ex = load_executable(options.file)
        if options.dim:
            raise CLIError(
                "--dim sizes random inputs, which need the model file (its annotations); "
                f"{options.file} is an executable"
            )
    if not ex.has_function(name):
        raise CLIError(
            f"{options.file} has no function {name!r}; its functions are "
            f"{', '.join(ex.function_names())}"
        )
    if not model:
        specs = params_from_executable(ex, name)
        bound = bind_inputs(options, specs, name)
        if len(bound) < len(specs):
            missing = ", ".join(spec.name for spec in specs if spec.name not in bound)
            raise CLIError(
                f"an executable file needs its inputs (no value for {missing}): give them as "
                "for run, or bench the model file, whose annotations make random inputs"
            )
    args, source = _bench_inputs(specs, bound, dims)
    device = cpu()
    vm = VirtualMachine(ex, device)
    result = vm.time_evaluator(name, device, number=options.number, repeat=options.repeat)(*args)
    print(
        f"{name} on {source}: mean {format_ms(result.mean)}, median {format_ms(result.median)}, "
        f"min {format_ms(result.min)}, std {format_ms(result.std)} "
        f"({options.repeat} x {options.number} calls)",
        file=out,
    )
    if options.profile:
        profile = getattr(vm, "profile", None)
        if profile is None:
            raise CLIError("--profile: profiling is not available (no VirtualMachine.profile)")
        print(profile(name, *args).table(), file=out)
    return 0


def _bench_inputs(
    specs: Sequence[ParamSpec], bound: dict[str, Any], dims: dict[str, int]
) -> tuple[list[Any], str]:
    """The VM arguments (given ones converted, the others random) and how to describe them."""
    infer_dims(specs, bound, dims)
    rng = np.random.default_rng(0)
    args, made = [], []
    for spec in specs:
        if spec.name in bound:
            args.append(to_vm_value(spec, bound[spec.name]))
        else:
            args.append(random_value(spec, dims, rng))
            made.append((spec.name, describe(args[-1])))
    if not made:
        return args, "given inputs"
    given = [spec.name for spec in specs if spec.name in bound]
    if not given:
        return args, "random inputs " + ", ".join(text for _, text in made)
    random = ", ".join(f"{name} {text}" for name, text in made)
    return args, f"given {', '.join(given)} and random {random}"
