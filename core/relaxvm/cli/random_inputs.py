"""Random inputs for ``relaxvm bench``, made from a model's parameter annotations.

Every parameter kind gets one: tensors of any dtype (bool, int, uint, float), ``R.Prim``
scalars, ``R.Shape`` values and tuples of those. Symbolic sizes come from ``--dim NAME=SIZE``
(checked against the function's symbolic names before anything is compiled) or from the
arrays given for other parameters.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..runtime import Shape, Tensor, cpu, tensor
from .common import CLIError
from .inputs import ParamSpec

__all__ = ["describe", "infer_dims", "parse_dims", "random_value", "symbolic_names"]


def parse_dims(specs: Sequence[str], names: Sequence[str], func_name: str) -> dict[str, int]:
    """``--dim NAME=SIZE`` options as a dict, each name checked against ``names``.

    Raises
    ------
    CLIError
        A malformed option, a negative size, or a name that is not a symbolic size of the
        function's parameters (the error lists those).
    """
    dims: dict[str, int] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip().lstrip("-").isdigit():
            raise CLIError(f"--dim {spec!r}: expected NAME=SIZE, e.g. --dim n=64")
        if int(value) < 0:
            raise CLIError(f"--dim {spec!r}: a size must be >= 0")
        if key not in names:
            known = (
                f"its symbolic sizes are {', '.join(names)}"
                if names
                else "it has no symbolic sizes"
            )
            raise CLIError(f"--dim {spec}: {key!r} is not a symbolic size of {func_name}; {known}")
        dims[key] = int(value)
    return dims


def _exprs(sinfo: Any) -> Iterator[Any]:
    """The PrimExprs of an annotation: tensor and shape sizes, R.Prim values, in tuples."""
    from ..ir.relax import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo

    if isinstance(sinfo, TensorStructInfo):
        yield from sinfo.shape_values or ()
    elif isinstance(sinfo, ShapeStructInfo):
        yield from sinfo.values or ()
    elif isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        yield sinfo.value
    elif isinstance(sinfo, TupleStructInfo):
        for field in sinfo.fields:
            yield from _exprs(field)


def symbolic_names(specs: Sequence[ParamSpec]) -> list[str]:
    """The symbolic size names of the parameters, in order of first appearance."""
    from ..ir import free_vars

    names: dict[str, None] = {}
    for spec in specs:
        for expr in _exprs(spec.struct_info):
            names.update(dict.fromkeys(v.name for v in free_vars(expr)))
    return list(names)


def infer_dims(specs: Sequence[ParamSpec], bound: dict[str, Any], dims: dict[str, int]) -> None:
    """Add to ``dims`` the sizes that given arrays fix (``x: ("n", 4)`` given as (8, 4): n=8)."""
    from ..ir import Var
    from ..ir.relax import TensorStructInfo

    for spec in specs:
        value, sinfo = bound.get(spec.name), spec.struct_info
        if not isinstance(value, np.ndarray) or not isinstance(sinfo, TensorStructInfo):
            continue
        sizes = sinfo.shape_values
        if sizes is None or len(sizes) != value.ndim:
            continue
        for size, actual in zip(sizes, value.shape, strict=True):
            if isinstance(size, Var):
                dims.setdefault(size.name, int(actual))


def random_value(spec: ParamSpec, dims: dict[str, int], rng: np.random.Generator) -> Any:
    """A random VM value for ``spec`` (whose ``struct_info`` must be known).

    Raises
    ------
    CLIError
        A symbolic size without ``--dim``, or an annotation too loose to invent a value for
        (unknown rank or dtype, ``R.Object``, a function).
    """
    return _random(spec.struct_info, spec, dims, rng, spec.name)


def _size(expr: Any, spec: ParamSpec, dims: dict[str, int]) -> int | float:
    from ..ir import IntImm, evaluate, free_vars

    if isinstance(expr, IntImm):
        return int(expr.value)
    missing = sorted(v.name for v in free_vars(expr) if v.name not in dims)
    if missing:
        raise CLIError(
            f"parameter {spec.name!r} has symbolic size {expr}: give "
            + " ".join(f"--dim {name}=SIZE" for name in missing)
        )
    return evaluate(expr, {v: dims[v.name] for v in free_vars(expr)})


def _random(
    sinfo: Any, spec: ParamSpec, dims: dict[str, int], rng: np.random.Generator, label: str
) -> Any:
    from ..ir.relax import PrimStructInfo, ShapeStructInfo, TensorStructInfo, TupleStructInfo

    def refuse(why: str) -> CLIError:
        where = f"parameter {spec.name!r}" + (f" ({label})" if label != spec.name else "")
        return CLIError(
            f"cannot make a random input for {where}, annotated {sinfo.script()}: {why}; "
            "give it with --params, --arg or an .npy file"
        )

    if isinstance(sinfo, TupleStructInfo):
        return tuple(
            _random(field, spec, dims, rng, f"{label}[{i}]") for i, field in enumerate(sinfo.fields)
        )
    if isinstance(sinfo, ShapeStructInfo):
        if sinfo.values is not None:
            return Shape([int(_size(v, spec, dims)) for v in sinfo.values])
        if sinfo.ndim < 0:
            raise refuse("its rank is unknown")
        return Shape([int(v) for v in rng.integers(1, 9, sinfo.ndim)])
    if isinstance(sinfo, PrimStructInfo):
        dtype = str(sinfo.dtype)
        if sinfo.value is not None:
            value = _size(sinfo.value, spec, dims)
            return bool(value) if dtype == "bool" else value
        return _random_array((), dtype, rng, refuse).item()
    if isinstance(sinfo, TensorStructInfo):
        if sinfo.dtype is None:
            raise refuse("its dtype is unknown")
        if sinfo.shape_values is None:
            raise refuse("its shape is unknown")
        shape = tuple(int(_size(v, spec, dims)) for v in sinfo.shape_values)
        return tensor(_random_array(shape, str(sinfo.dtype), rng, refuse), cpu())
    raise refuse("only tensors, R.Prim, R.Shape and tuples of them can be invented")


def _random_array(shape: tuple[int, ...], dtype: str, rng: np.random.Generator, refuse: Any) -> Any:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise refuse(f"numpy has no dtype {dtype}") from None
    if np_dtype.kind in "iu":
        # Small non-negative values: safe as sizes, indices and loop counts.
        return rng.integers(0, 8, shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def describe(value: Any) -> str:
    """A short description of an input value: a shape, a scalar, a Shape, a tuple."""
    if isinstance(value, Tensor | np.ndarray):
        return str(tuple(value.shape))
    if isinstance(value, tuple) and not isinstance(value, Shape):
        return "(" + ", ".join(describe(v) for v in value) + ")"
    if isinstance(value, Shape):
        return f"Shape{tuple(value)}"
    return repr(value)
