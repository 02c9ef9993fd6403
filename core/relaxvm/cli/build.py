"""The ``compile`` and ``bench`` subcommands of the ``relaxvm`` command line.

``compile MODEL.py``
    Run a model file (a Python file defining an ``@I.ir_module`` class, or any IRModule),
    compile the module for a target and write the executable with ``export_library``.
``bench MODEL.py | EXE.rvm``
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
from .common import CLIError, format_ms, load_executable, read_inputs

__all__ = ["add_commands", "load_model", "random_inputs"]


def add_commands(commands: Any) -> None:
    """Add ``compile`` and ``bench`` to the ``relaxvm`` subcommand parser."""
    compile_cmd = commands.add_parser(
        "compile",
        help="compile a model file (script format) into an executable file",
        description="Run MODEL.py, take the IRModule it defines (an @I.ir_module class or any "
        "IRModule at top level; --module picks one when there are several), compile it and "
        "write the executable with export_library (kernels included). The model file is "
        "Python and runs as such: compile only files you trust.",
    )
    compile_cmd.add_argument("model", metavar="MODEL.py")
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
    compile_cmd.set_defaults(handler=_cmd_compile)

    bench = commands.add_parser(
        "bench",
        help="time a function of a model file or executable",
        description="Time FUNC with time_evaluator. Inputs come from .npy files or an .npz "
        "file; for a model file they may instead be random, made from the parameter "
        "annotations (give symbolic sizes with --dim n=64).",
    )
    bench.add_argument("file", metavar="MODEL.py|EXE.rvm")
    bench.add_argument("inputs", nargs="*", metavar="X.npy", help="one .npy file per parameter")
    bench.add_argument("--inputs", dest="npz", metavar="INPUTS.npz", help="all inputs in one .npz")
    bench.add_argument("--func", default="main", help="the function to time (default: main)")
    bench.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="the size of a symbolic dimension for random inputs; may be repeated",
    )
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

    name, mod = load_model(options.model, options.module)
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
def _parse_dims(specs: Sequence[str]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key or not value.strip().lstrip("-").isdigit():
            raise CLIError(f"--dim {spec!r}: expected NAME=SIZE, e.g. --dim n=64")
        if int(value) < 0:
            raise CLIError(f"--dim {spec!r}: a size must be >= 0")
        dims[key.strip()] = int(value)
    return dims


def random_inputs(func: Any, dims: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    """Random arrays matching the tensor parameters of a Relax function.

    Raises
    ------
    CLIError
        A parameter is not a tensor of known rank and dtype, or a symbolic size has no --dim.
    """
    from ..ir import IntImm, evaluate, free_vars
    from ..ir.relax import TensorStructInfo

    rng = np.random.default_rng(seed)
    arrays = []
    for param in func.params:
        sinfo = param.struct_info
        values = sinfo.shape_values if isinstance(sinfo, TensorStructInfo) else None
        if values is None or sinfo.dtype is None:
            raise CLIError(
                f"cannot make a random input for parameter {param.name_hint!r} ({sinfo}); "
                "give the inputs as .npy/.npz files"
            )
        shape = []
        for dim in values:
            if isinstance(dim, IntImm):
                shape.append(int(dim.value))
                continue
            missing = sorted(v.name for v in free_vars(dim) if v.name not in dims)
            if missing:
                raise CLIError(
                    f"parameter {param.name_hint!r} has symbolic size {dim}: give "
                    + " ".join(f"--dim {name}=SIZE" for name in missing)
                )
            shape.append(int(evaluate(dim, {v: dims[v.name] for v in free_vars(dim)})))
        dtype = str(sinfo.dtype)
        if dtype == "bool":
            arrays.append(rng.random(shape) < 0.5)
        elif dtype.startswith(("int", "uint")):
            arrays.append(rng.integers(0, 8, shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def _cmd_bench(options: argparse.Namespace) -> int:
    from ..runtime import cpu, tensor
    from ..vm.interpreter import VirtualMachine

    if options.number < 1 or options.repeat < 1:
        raise CLIError("--number and --repeat must be >= 1")
    out = sys.stdout
    func = None
    if options.file.endswith(".py"):
        _, mod = load_model(options.file, options.module)
        if options.func not in mod:
            raise CLIError(f"{options.file} has no function {options.func!r}")
        func = mod[options.func]
        started = time.perf_counter()
        ex = _compile(mod, options)
        print(f"compiled for {options.target} in {time.perf_counter() - started:.2f} s", file=out)
    else:
        ex = load_executable(options.file)
    if not ex.has_function(options.func):
        raise CLIError(
            f"{options.file} has no function {options.func!r}; its functions are "
            f"{', '.join(ex.function_names())}"
        )
    device = cpu()
    vm = VirtualMachine(ex, device)
    name = options.func
    params = [vm.get_function_param_name(name, i) for i in range(vm.get_function_arity(name))]
    if options.inputs or options.npz:
        args, kwargs = read_inputs(options, params)
        source = "given inputs"
    elif func is not None:
        args, kwargs = random_inputs(func, _parse_dims(options.dim)), {}
        source = "random inputs " + ", ".join(str(a.shape) for a in args)
    else:
        raise CLIError(
            "an executable file needs its inputs (.npy files or --inputs FILE.npz); random "
            "inputs need the model file, which has the parameter annotations"
        )
    vm.set_input(name, *[tensor(a) for a in args], **{k: tensor(v) for k, v in kwargs.items()})
    result = vm.time_evaluator(
        "invoke_stateful", device, number=options.number, repeat=options.repeat
    )(name)
    print(
        f"{name} on {source}: mean {format_ms(result.mean)}, median {format_ms(result.median)}, "
        f"min {format_ms(result.min)}, std {format_ms(result.std)} "
        f"({options.repeat} x {options.number} calls)",
        file=out,
    )
    return 0
