"""The case table of the per-target op conformance matrix (:mod:`.test_ops`).

One :class:`OpTemplate` per (op, variant) says how to build the call, which dtypes it is run in,
how to make inputs and what numpy computes for them. :func:`all_cases` expands every template
into :class:`OpCase` objects, one per dtype and shape kind:

* ``static``: the leading extent is the constant :data:`STATIC_N`;
* ``symbolic``: the leading extent is the symbolic ``n`` and the one compiled function is run
  with every value of :data:`SYMBOLIC_NS`.

:func:`build_module` puts many cases into one IRModule (one Relax function per case) so that a
target compiles them in one go.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir import Var as SymVar
from ...ir.relax import BlockBuilder, PrimValue, TensorStructInfo, Var
from ...ir.relax import op as _op
from ...ir.relax.module import IRModule

__all__ = [
    "IMPURE_OPS",
    "STATIC_N",
    "SYMBOLIC_NS",
    "OpCase",
    "OpTemplate",
    "all_cases",
    "build_module",
    "make_inputs",
    "templates",
]

# Several op builders are generated when their module is imported, out of mypy's sight.
op: Any = _op

#: The leading extent of static cases.
STATIC_N = 3
#: The values the symbolic ``n`` takes, all on one compiled executable.
SYMBOLIC_NS = (2, 5)
#: Ops run for their effect: the function emits the call outside dataflow and returns ``x``.
IMPURE_OPS = frozenset({"relax.print", "relax.assert_op"})

Dim = Any  # int or SymVar (a leading extent) or a PrimExpr built from it
Param = tuple[str, tuple[Any, ...], str]
Arrays = list[np.ndarray]

# Tolerances. float32 kernels agree with numpy to about one ulp for arithmetic; the LLVM target
# compiles with contract/reassoc by default, so sums and dot products may be reassociated and
# fused (FMA), which moves results by a few ulps of the partial sums: 1e-5 covers that for the
# short (<= 18 term) reductions used here.
F32 = (1e-5, 1e-5)
# Transcendentals (exp, log, tanh, erf, sigmoid, gelu, power...) go through vectorized math
# approximations on native targets, accurate to a few ulps rather than correctly rounded.
F32_TRANSCENDENTAL = (2e-5, 1e-5)
# Normalisations divide by sqrt(var + eps) of a 4-element row: the error of the variance is
# amplified by the division, so allow 1e-4 relative.
F32_NORM = (1e-4, 1e-5)


@dataclass(frozen=True)
class OpTemplate:
    """How to run one op (in one variant) through the matrix.

    Attributes
    ----------
    op : str
        The registry name, ``"relax.add"``.
    label : str
        The variant, ``""`` when the op has one.
    family : str
        Cases of one family, dtype and shape kind share an IRModule.
    dtypes : tuple of str
        The dtypes the op runs in (its "main" input dtype).
    params : callable
        ``params(d, dtype) -> [(name, shape, dtype)]`` with ``d`` the leading extent.
    build : callable
        ``build(d, *vars) -> relax Call``.
    inputs : callable
        ``inputs(rng, n, dtype) -> [ndarray]``.
    ref : callable
        ``ref(*inputs) -> ndarray`` (or a tuple of them): the numpy oracle.
    tol : tuple of float
        ``(rtol, atol)`` for float outputs; integer and bool outputs must be exact.
    """

    op: str
    label: str
    family: str
    dtypes: tuple[str, ...]
    params: Callable[[Dim, str], list[Param]]
    build: Callable[..., Any]
    inputs: Callable[[np.random.Generator, int, str], Arrays]
    ref: Callable[..., Any]
    tol: tuple[float, float] = F32


@dataclass(frozen=True)
class OpCase:
    """One template in one dtype and shape kind: one Relax function, one test item per mode."""

    template: OpTemplate
    dtype: str
    symbolic: bool
    ns: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ns", SYMBOLIC_NS if self.symbolic else (STATIC_N,))

    @property
    def op(self) -> str:
        return self.template.op

    @property
    def shape_kind(self) -> str:
        return "symbolic" if self.symbolic else "static"

    @property
    def id(self) -> str:
        """``add-float32-static``, ``sum[axis1]-int32-symbolic``: names the op in test ids."""
        name = self.op.removeprefix("relax.")
        label = f"[{self.template.label}]" if self.template.label else ""
        return f"{name}{label}-{self.dtype}-{self.shape_kind}"

    @property
    def func_name(self) -> str:
        """The Relax function name of this case inside its module."""
        return "f_" + re.sub(r"[^0-9A-Za-z]+", "_", self.id).strip("_")

    @property
    def group(self) -> tuple[str, str, str]:
        """Cases with the same group are compiled together."""
        return (self.template.family, self.dtype, self.shape_kind)


def make_inputs(case: OpCase, n: int, seed: int = 0) -> Arrays:
    """Deterministic inputs of ``case`` for leading extent ``n``."""
    rng = np.random.default_rng([seed, n, sum(map(ord, case.id))])
    return case.template.inputs(rng, n, case.dtype)


def build_module(cases: Iterable[OpCase]) -> IRModule:
    """One IRModule with one Relax function per case (``case.func_name``)."""
    bb = BlockBuilder()
    for case in cases:
        _add_function(bb, case)
    return bb.get()


def _add_function(bb: BlockBuilder, case: OpCase) -> None:
    t = case.template
    # A fresh symbolic variable per function: functions never share shape variables.
    d: Dim = SymVar("n") if case.symbolic else STATIC_N
    params = [Var(name, TensorStructInfo(shape, dt)) for name, shape, dt in t.params(d, case.dtype)]
    with bb.function(case.func_name, params):
        if case.op in IMPURE_OPS:
            bb.emit(t.build(d, *params))
            bb.emit_func_output(params[0])
            return
        with bb.dataflow():
            out = bb.emit_output(t.build(d, *params))
        bb.emit_func_output(out)


# ---------------------------------------------------------------------------------------------
# Inputs


def random_values(
    rng: np.random.Generator, shape: Sequence[int], dtype: str, kind: str = ""
) -> Any:
    """Random data; ``kind``: "" (signed), "pos" (away from 0), "small" (|v| <= 2), "unit"."""
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int"):
        ilow, ihigh = {"pos": (1, 4), "small": (-2, 3), "unit": (0, 3)}.get(kind, (-6, 7))
        return rng.integers(ilow, ihigh, size=shape).astype(dtype)
    flow, fhigh = {"pos": (0.5, 2.0), "small": (-1.5, 1.5), "unit": (0.5, 1.5)}.get(kind, (-3, 3))
    return rng.uniform(flow, fhigh, size=shape).astype(dtype)


def one_input(shape: Callable[[int], tuple[int, ...]], kind: str = "") -> Callable[..., Arrays]:
    return lambda rng, n, dt: [random_values(rng, shape(n), dt, kind)]


def row_param(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 4), dt)]


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=["float64"])(x)


def _plain(f: Callable[..., Any]) -> Callable[..., Any]:
    """``build(d, *vars)`` that needs no extent: ``f(*vars)``."""
    return lambda d, *vs: f(*vs)


FLOAT = ("float32",)
FLOAT_INT = ("float32", "int32")

# ---------------------------------------------------------------------------------------------
# Elementwise

_UNARY: dict[str, tuple[Callable[..., Any], tuple[str, ...], str, tuple[float, float]]] = {
    # name: (reference, dtypes, input kind, tolerance)
    "abs": (np.abs, FLOAT_INT, "", F32),
    "negative": (np.negative, FLOAT_INT, "", F32),
    # Values at exact halves are avoided by the uniform draw; ints are unchanged.
    "round": (np.round, FLOAT_INT, "", F32),
    "floor": (np.floor, FLOAT_INT, "", F32),
    "ceil": (np.ceil, FLOAT_INT, "", F32),
    "exp": (np.exp, FLOAT, "", F32_TRANSCENDENTAL),
    "log": (np.log, FLOAT, "pos", F32_TRANSCENDENTAL),
    "sqrt": (np.sqrt, FLOAT, "pos", F32),
    "rsqrt": (lambda x: 1 / np.sqrt(x), FLOAT, "pos", F32_TRANSCENDENTAL),
    "tanh": (np.tanh, FLOAT, "", F32_TRANSCENDENTAL),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), FLOAT, "", F32_TRANSCENDENTAL),
    "erf": (_erf, FLOAT, "", F32_TRANSCENDENTAL),
}

_BINARY: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "add": (np.add, FLOAT_INT),
    "subtract": (np.subtract, FLOAT_INT),
    "multiply": (np.multiply, FLOAT_INT),
    "maximum": (np.maximum, FLOAT_INT),
    "minimum": (np.minimum, FLOAT_INT),
    "equal": (np.equal, FLOAT_INT),
    "not_equal": (np.not_equal, FLOAT_INT),
    "less": (np.less, FLOAT_INT),
    "less_equal": (np.less_equal, FLOAT_INT),
    "greater": (np.greater, FLOAT_INT),
    "greater_equal": (np.greater_equal, FLOAT_INT),
}


def _binary_params(d: Dim, dt: str) -> list[Param]:
    # (d, 4) with (4,): every binary case also exercises broadcasting.
    return [("a", (d, 4), dt), ("b", (4,), dt)]


def _binary_inputs(b_kind: str = "", a_kind: str = "") -> Callable[..., Arrays]:
    def make(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        a = random_values(rng, (n, 4), dt, a_kind)
        b = random_values(rng, (4,), dt, b_kind)
        if dt != "bool" and not b_kind:
            a[0, :2] = b[:2]  # equal elements, so comparisons see ties
        return [a, b]

    return make


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Integer division truncates toward zero (C semantics, as TVM's divide on ints): numpy's
    # floor quotient, one more where a nonzero remainder has the divisor's opposite sign. In
    # integers throughout, so the edges are numpy's (docs/ops.md): x / 0 is 0, INT_MIN / -1
    # wraps to INT_MIN.
    with np.errstate(divide="ignore", over="ignore"):
        floor, rem = np.floor_divide(a, b), np.remainder(a, b)
    return (floor + ((rem != 0) & ((a < 0) != (b < 0)))).astype(a.dtype)


def _elementwise() -> list[OpTemplate]:
    out = []
    for name, (ref, dtypes, kind, tol) in _UNARY.items():
        out.append(
            OpTemplate(
                f"relax.{name}",
                "",
                "unary",
                dtypes,
                row_param,
                _plain(getattr(op, name)),
                one_input(lambda n: (n, 4), kind),
                ref,
                tol,
            )
        )
    for name, (ref, dtypes) in _BINARY.items():
        out.append(
            OpTemplate(
                f"relax.{name}",
                "",
                "binary",
                dtypes,
                _binary_params,
                _plain(getattr(op, name)),
                _binary_inputs(),
                ref,
            )
        )
    out += [
        OpTemplate("relax.divide", "", "binary", FLOAT_INT, _binary_params,
                   lambda d, a, b: op.divide(a, b), _binary_inputs("pos"),
                   lambda a, b: a / b if a.dtype.kind == "f" else _int_divide(a, b)),
        OpTemplate("relax.floor_divide", "", "binary", FLOAT_INT, _binary_params,
                   lambda d, a, b: op.floor_divide(a, b), _binary_inputs("pos"),
                   np.floor_divide),
        OpTemplate("relax.power", "", "binary", FLOAT_INT, _binary_params,
                   lambda d, a, b: op.power(a, b), _power_inputs, np.power,
                   F32_TRANSCENDENTAL),
    ]  # fmt: skip
    bool2 = lambda d, dt: [("a", (d, 4), "bool"), ("b", (4,), "bool")]  # noqa: E731
    for name in ("logical_and", "logical_or", "logical_xor"):
        out.append(
            OpTemplate(
                f"relax.{name}",
                "",
                "logical",
                ("bool",),
                bool2,
                _plain(getattr(op, name)),
                _binary_inputs(),
                getattr(np, name),
            )
        )
    out.append(
        OpTemplate(
            "relax.logical_not",
            "",
            "logical",
            ("bool",),
            row_param,
            lambda d, x: op.logical_not(x),
            one_input(lambda n: (n, 4)),
            np.logical_not,
        )
    )
    return out


def _power_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    if dt.startswith("int"):
        # Small exponents keep integer powers exact and inside int32.
        return [random_values(rng, (n, 4), dt), rng.integers(0, 4, size=(4,)).astype(dt)]
    return [random_values(rng, (n, 4), dt, "pos"), random_values(rng, (4,), dt, "small")]


def _where_params(d: Dim, dt: str) -> list[Param]:
    return [("c", (d, 1), "bool"), ("a", (4,), dt), ("b", (d, 4), dt)]


def _where_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [
        random_values(rng, (n, 1), "bool"),
        random_values(rng, (4,), dt),
        random_values(rng, (n, 4), dt),
    ]


def _misc_elementwise() -> list[OpTemplate]:
    row = one_input(lambda n: (n, 4))

    def astype_ref(x: np.ndarray) -> np.ndarray:
        return x.astype("int32" if x.dtype.kind == "f" else "float32")

    return [
        OpTemplate("relax.astype", "", "misc", FLOAT_INT, row_param,
                   lambda d, x: op.astype(x, "int32" if str(x.struct_info.dtype) == "float32"
                                          else "float32"),
                   row, astype_ref),
        OpTemplate("relax.clip", "", "misc", FLOAT_INT, row_param, lambda d, x: op.clip(x, -1, 2), row,
                   lambda x: np.clip(x, -1, 2)),
        OpTemplate("relax.where", "", "misc", FLOAT_INT, _where_params,
                   lambda d, c, a, b: op.where(c, a, b), _where_inputs, np.where),
        OpTemplate("relax.nn.relu", "", "misc", FLOAT_INT, row_param, lambda d, x: op.nn.relu(x), row,
                   lambda x: np.maximum(x, 0)),
        OpTemplate("relax.nn.gelu", "", "misc", FLOAT, row_param, lambda d, x: op.nn.gelu(x), row,
                   lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), F32_TRANSCENDENTAL),
        OpTemplate("relax.nn.silu", "", "misc", FLOAT, row_param, lambda d, x: op.nn.silu(x), row,
                   lambda x: x / (1 + np.exp(-x.astype("float64"))), F32_TRANSCENDENTAL),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Creation


def _anchor(d: Dim, dt: str) -> list[Param]:
    # Creation ops take no tensor: ``x`` only carries the extent ``d`` into the function.
    return [("x", (d,), dt)]


def _anchor_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n,), dt)]


def _create() -> list[OpTemplate]:
    row = one_input(lambda n: (n, 4))
    return [
        OpTemplate("relax.arange", "", "create", FLOAT_INT, _anchor,
                   lambda d, x: op.arange(1, d * 3, 2, dtype=str(x.struct_info.dtype)),
                   _anchor_inputs, lambda x: np.arange(1, x.shape[0] * 3, 2, dtype=x.dtype)),
        OpTemplate("relax.full", "", "create", FLOAT_INT, _anchor,
                   lambda d, x: op.full((d, 2), PrimValue(7), str(x.struct_info.dtype)),
                   _anchor_inputs, lambda x: np.full((x.shape[0], 2), 7, x.dtype)),
        OpTemplate("relax.ones", "", "create", FLOAT_INT, _anchor,
                   lambda d, x: op.ones((2, d), str(x.struct_info.dtype)),
                   _anchor_inputs, lambda x: np.ones((2, x.shape[0]), x.dtype)),
        OpTemplate("relax.zeros", "", "create", FLOAT_INT, _anchor,
                   lambda d, x: op.zeros((d, 3), str(x.struct_info.dtype)),
                   _anchor_inputs, lambda x: np.zeros((x.shape[0], 3), x.dtype)),
        OpTemplate("relax.full_like", "", "create", FLOAT_INT, row_param,
                   lambda d, x: op.full_like(x, -5), row, lambda x: np.full_like(x, -5)),
        OpTemplate("relax.ones_like", "", "create", FLOAT_INT, row_param,
                   lambda d, x: op.ones_like(x), row, np.ones_like),
        OpTemplate("relax.zeros_like", "", "create", FLOAT_INT, row_param,
                   lambda d, x: op.zeros_like(x), row, np.zeros_like),
    ]  # fmt: skip


def templates() -> list[OpTemplate]:
    """Every template of the matrix."""
    # The second half of the table imports this module's helpers, hence the late import.
    from . import cases_index, cases_math, cases_matmul_rows, cases_nn, cases_shape, cases_sort
    from . import cases_nn_packed as packed
    from . import cases_qdq_float8 as float8
    from . import cases_tvm_extra_a as tvm_extra_a
    from . import cases_tvm_extra_b as tvm_extra_b
    from . import cases_tvm_extra_c as tvm_extra_c
    from .cases_tensor import tensor_templates

    modules = (cases_math, cases_shape, cases_index, cases_nn, cases_sort, cases_matmul_rows)
    families = [
        m.templates() for m in (*modules, packed, float8, tvm_extra_a, tvm_extra_b, tvm_extra_c)
    ]
    extra = [template for family in families for template in family]
    return _elementwise() + _misc_elementwise() + _create() + tensor_templates() + extra


def all_cases() -> list[OpCase]:
    """Every template in every dtype, static and symbolic."""
    return [
        OpCase(t, dtype, symbolic)
        for t in templates()
        for dtype in t.dtypes
        for symbolic in (False, True)
    ]
