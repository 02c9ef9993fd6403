"""The inputs of ``relaxvm run`` and ``relaxvm bench``: one argument grammar, bound by name.

Both commands take ``FILE [X.npy ...] [--inputs IN.npz] [--params W.npz ...] [--arg NAME=VALUE
...] [--func F]`` in any order. Values are bound to parameters (:func:`bind_inputs`), checked
against what is known of each parameter (:class:`ParamSpec`: from the model's annotations, or
from the type checks that the compiler puts at the start of every function of an executable),
and converted into VM values (:func:`to_vm_value`): tensors, Python scalars for ``R.Prim``,
:class:`~relaxvm.runtime.Shape` for ``R.Shape``.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..runtime import Shape, cpu, tensor
from ..vm.bytecode import ArgKind, Opcode
from ..vm.executable import Executable
from .common import CLIError, load_npy, load_npz

__all__ = [
    "ParamSpec",
    "add_input_arguments",
    "bind_inputs",
    "missing_error",
    "params_from_executable",
    "params_from_function",
    "parse_scalar",
    "to_vm_value",
]

_TRUE = ("true", "1")
_FALSE = ("false", "0")


@dataclass(frozen=True)
class ParamSpec:
    """What the CLI knows about one parameter.

    Attributes
    ----------
    name : str
        The parameter name.
    kind : {"tensor", "prim", "shape", "tuple", "object"}
        ``object``: nothing is known (a hand-built executable without type checks).
    dtype : str or None
        The dtype of a tensor or ``R.Prim`` parameter, when known.
    struct_info : StructInfo or None
        The full annotation, from a model file (needed for random inputs).
    """

    name: str
    kind: str
    dtype: str | None = None
    struct_info: Any = None

    @property
    def annotation(self) -> str:
        """The parameter's type as a user reads it (``R.Prim("bool")``)."""
        if self.struct_info is not None:
            return str(self.struct_info.script())
        if self.kind == "prim":
            return f'R.Prim("{self.dtype}")'
        if self.kind == "tensor":
            return f'R.Tensor(dtype="{self.dtype}")' if self.dtype else "R.Tensor"
        return {"shape": "R.Shape", "tuple": "R.Tuple"}.get(self.kind, "R.Object")


def add_input_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """The input grammar ``run`` and ``bench`` share (``verb``: what the command does)."""
    parser.add_argument("file", metavar="FILE")
    parser.add_argument(
        "inputs",
        nargs="*",
        default=[],
        metavar="X.npy",
        help="arrays for the first parameters, in order",
    )
    parser.add_argument("--func", default="main", help=f"the function to {verb} (default: main)")
    parser.add_argument(
        "--inputs",
        dest="npz",
        metavar="IN.npz",
        help="inputs in one .npz: keys are parameter names, or arr_0, arr_1, ... (np.savez)",
    )
    parser.add_argument(
        "--params",
        action="append",
        default=[],
        metavar="W.npz",
        help="arrays bound by name: each key must be a parameter name; may be repeated",
    )
    parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one parameter: a scalar for R.Prim (true/false/1/0, 5, 0.5) or an .npy file; "
        "may be repeated",
    )


# -- what is known of the parameters ---------------------------------------------------------
def params_from_function(func: Any) -> list[ParamSpec]:
    """The parameters of a Relax function, from their annotations."""
    from ..ir.relax import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo

    specs = []
    for param in func.params:
        sinfo = param.struct_info
        kind, dtype = "object", None
        if isinstance(sinfo, TensorStructInfo):
            kind, dtype = "tensor", None if sinfo.dtype is None else str(sinfo.dtype)
        elif isinstance(sinfo, PrimStructInfo):
            kind, dtype = "prim", str(sinfo.dtype)
        elif isinstance(sinfo, ShapeStructInfo):
            kind = "shape"
        elif isinstance(sinfo, TupleStructInfo):
            kind = "tuple"
        specs.append(ParamSpec(param.name_hint, kind, dtype, sinfo))
    return specs


_CHECKS = {
    "vm.builtin.check_tensor_info": "tensor",
    "vm.builtin.check_prim_value_info": "prim",
    "vm.builtin.check_shape_info": "shape",
    "vm.builtin.check_tuple_info": "tuple",
}


def params_from_executable(ex: Executable, func_name: str) -> list[ParamSpec]:
    """The parameters of ``func_name`` as far as its bytecode tells.

    The compiler starts each function by checking every parameter against its annotation
    (``vm.builtin.check_*_info(param, ..., dtype, ...)``); those calls give each parameter's
    kind and dtype. A parameter without a check (a hand-built executable) is ``object``.
    """
    info = ex.func_table[ex.func_map[func_name]]
    found: dict[int, ParamSpec] = {}
    for instr in ex.instructions[info.start_instr : info.end_instr]:
        if instr.opcode != Opcode.CALL or not instr.args:
            continue
        kind = _CHECKS.get(ex.func_table[instr.func_idx].name)
        arg_kind, register = instr.args[0]
        if kind is None or arg_kind != ArgKind.REGISTER or not 0 <= register < info.num_args:
            continue
        dtype = None
        for other_kind, value in instr.args[1:]:
            if other_kind == ArgKind.CONST_IDX and type(ex.constants[value]).__name__ == "DataType":
                dtype = str(ex.constants[value])
                break
        found.setdefault(register, ParamSpec(info.param_names[register], kind, dtype))
    return [found.get(i, ParamSpec(n, "object")) for i, n in enumerate(info.param_names)]


# -- binding -----------------------------------------------------------------------------------
def bind_inputs(
    options: argparse.Namespace, specs: Sequence[ParamSpec], func_name: str
) -> dict[str, Any]:
    """The values given on the command line, by parameter name, in parameter order.

    Values are numpy arrays (from files) or Python scalars (from ``--arg``), not yet
    converted (see :func:`to_vm_value`). Parameters left unbound are absent.

    Raises
    ------
    CLIError
        Too many positional arrays, a name that is not a parameter (the error lists the
        parameters), a parameter bound twice, a file that cannot be read, a bad ``--arg``.
    """
    names = [spec.name for spec in specs]
    by_name = {spec.name: spec for spec in specs}
    signature = f"{func_name}({', '.join(names)})"
    bound: dict[str, Any] = {}
    given_by: dict[str, str] = {}

    def refuse_unknown(source: str, unknown: Sequence[str]) -> None:
        if not unknown:
            return
        if not names:
            raise CLIError(f"{source}: {func_name} takes no parameters")
        listed = ", ".join(map(repr, unknown))
        verb = "is not a parameter" if len(unknown) == 1 else "are not parameters"
        close = difflib.get_close_matches(unknown[0], names, n=1) if len(unknown) == 1 else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise CLIError(f"{source}: {listed} {verb} of {signature}{hint}")

    def bind(name: str, value: Any, source: str) -> None:
        refuse_unknown(source, [] if name in by_name else [name])
        if name in given_by:
            raise CLIError(
                f"parameter {name!r} of {func_name} is given twice: {given_by[name]} and {source}"
            )
        bound[name], given_by[name] = value, source

    if options.npz and options.inputs:
        raise CLIError("give inputs either as .npy files or with --inputs FILE.npz, not both")
    positional: list[tuple[str, np.ndarray]] = [(p, load_npy(p)) for p in options.inputs]
    if options.npz:
        arrays = load_npz(options.npz, "--inputs ")
        keys = [f"arr_{i}" for i in range(len(arrays))]
        if set(arrays) == set(keys) and not set(keys) & set(names):
            positional = [(f"{options.npz}[{key}]", arrays[key]) for key in keys]
        else:
            unknown = sorted(set(arrays) - set(names))
            if unknown:
                raise CLIError(
                    f"{options.npz}: keys {', '.join(unknown)} are not parameters of "
                    f"{signature}; use parameter names or arr_0, arr_1, ..."
                )
            for key, array in arrays.items():
                bind(key, array, f"--inputs {options.npz}")
    if len(positional) > len(names):
        raise CLIError(
            f"{signature} takes {len(names)} parameter{'s' if len(names) != 1 else ''}, "
            f"got {len(positional)} positional arrays"
        )
    for name, (source, array) in zip(names, positional, strict=False):
        bind(name, array, source)
    for path in options.params:
        arrays = load_npz(path, "--params ")
        refuse_unknown(f"--params {path}", [key for key in arrays if key not in by_name])
        for key, array in arrays.items():
            bind(key, array, f"--params {path}")
    for spec in options.arg:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CLIError(f"--arg {spec!r}: expected NAME=VALUE, e.g. --arg use_relu=true")
        where = f"--arg {spec}"
        refuse_unknown(where, [] if name in by_name else [name])
        if text.endswith(".npy"):
            bind(name, load_npy(text, f"{where}: "), where)
        else:
            bind(name, parse_scalar(text, by_name[name], where), where)
    return {name: bound[name] for name in names if name in bound}


def missing_error(specs: Sequence[ParamSpec], bound: dict[str, Any], func_name: str) -> CLIError:
    """The error for parameters left unbound (listing them and how to give them)."""
    names = [spec.name for spec in specs]
    missing = [name for name in names if name not in bound]
    return CLIError(
        f"no value for {', '.join(missing)} of {func_name}({', '.join(names)}): give them "
        "as .npy files, --inputs IN.npz, --params W.npz or --arg NAME=VALUE"
    )


def parse_scalar(text: str, spec: ParamSpec, where: str) -> bool | int | float:
    """``text`` as a value of ``spec``'s dtype: ``true``/``false``/``1``/``0`` for bool, an
    integer for int/uint (range-checked), a number for float; any of those when the dtype is
    unknown.

    Raises
    ------
    CLIError
        The text is not a value of that dtype (the message names the parameter), or the
        parameter cannot take a scalar (a shape or a tuple).
    """
    if spec.kind in ("shape", "tuple"):
        raise CLIError(
            f"{where}: parameter {spec.name!r} is {spec.annotation}, which takes no scalar"
        )
    dtype = spec.dtype
    word = text.strip().lower()
    expected = f"parameter {spec.name!r} is {spec.annotation}"
    if dtype == "bool" or (dtype is None and word in ("true", "false")):
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise CLIError(f"{where}: {expected}; expected true, false, 1 or 0, got {text!r}")
    if dtype is not None and dtype.startswith(("int", "uint")):
        try:
            number = int(word, 10)
        except ValueError:
            raise CLIError(f"{where}: {expected}; expected an integer, got {text!r}") from None
        info = np.iinfo(np.dtype(dtype))
        if not info.min <= number <= info.max:
            raise CLIError(
                f"{where}: {expected}; {number} is out of range [{info.min}, {info.max}]"
            )
        return number
    if dtype is None:
        try:
            return int(word, 10)
        except ValueError:
            pass
    try:
        return float(word)
    except ValueError:
        what = "a number" if dtype is None else "a floating-point number"
        raise CLIError(f"{where}: {expected}; expected {what}, got {text!r}") from None


# -- conversion --------------------------------------------------------------------------------
def to_vm_value(spec: ParamSpec, value: Any) -> Any:
    """A bound value as the VM takes it for ``spec``: tensors for tensors, Python scalars for
    ``R.Prim``, a :class:`Shape` for ``R.Shape``.

    Raises
    ------
    CLIError
        The value cannot be that kind of parameter (an array for an ``R.Prim``, a float array
        for a shape, a file for a tuple).
    """
    if isinstance(value, bool | int | float) and spec.kind in ("tensor", "object"):
        if spec.kind == "object":
            return value  # nothing known: Python scalars reach the program as they are
        return tensor(np.array(value, dtype=spec.dtype or None), cpu())
    if not isinstance(value, np.ndarray):
        return value  # already a VM value (random inputs) or a scalar for an R.Prim
    where = f"parameter {spec.name!r} is {spec.annotation}"
    if spec.kind == "prim":
        if value.ndim != 0:
            raise CLIError(f"{where}: expected a scalar (a 0-d array), got shape {value.shape}")
        scalar = value.item()
        if spec.dtype is not None:
            return parse_scalar(str(scalar).lower(), spec, f"the value for {spec.name}")
        return scalar
    if spec.kind == "shape":
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise CLIError(
                f"{where}: expected a 1-d integer array, got {value.dtype} of shape {value.shape}"
            )
        return Shape([int(v) for v in value])
    if spec.kind == "tuple":
        raise CLIError(
            f"{where}: a tuple cannot be read from an array file; bench invents it from a "
            "model file"
        )
    return tensor(value, cpu())
