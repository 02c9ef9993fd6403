"""Differential edge-value test over every op of the conformance matrix (:mod:`.cases`).

Each item runs one op variant in one dtype on the target under test with inputs full of edge
values and compares the result with the case's own numpy reference (``template.ref``), NaN
for NaN and inf for inf:

* float32: NaN, +inf, -inf, -0.0, +0.0 and subnormals (``1e-40``, ``-3e-42``), mixed with
  ordinary values (1.5, -2.5);
* int32: ``INT_MIN``, ``INT_MAX``, ``INT_MIN + 1``, ``INT_MAX - 1``, 0 and -1 (so integer
  division meets zero divisors and ``INT_MIN // -1``, whose results docs/ops.md defines);
* every dtype: empty tensors (leading extent 0).

Three kinds of input per case: *dense* (every element from the edge pool, so a row holds NaN
after inf, two NaNs, and so on; run once per pool value with the pattern shifted, so every
value reaches every position of every input), *sparse* (ordinary random values with one edge
value per row at a varying column: a single NaN or inf must reach the result from any lane of
a vectorized loop and from its remainder loop) and *empty*. Only the parameters whose dtype is
the case's dtype get edge values: index, condition and shape-carrying inputs keep their
ordinary values.

The symbolic case of each template is used (one compiled function runs every extent,
including 0), shared with :mod:`.test_ops` through :func:`.test_ops.matrix_build`, so the test
compiles nothing of its own. Numerics do not depend on the exec mode (both modes run the same
kernels), so it runs in bytecode mode only.

Where numpy's own answer at an edge is not a definition a kernel can be held to, the edge is
excluded for that op in :data:`EXCLUSIONS`, with the reason; nothing is skipped silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from . import cases_index, cases_math, cases_nn, cases_shape, cases_sort
from .cases import OpCase
from .test_ops import CASES, MatrixBuild, assert_matches, matrix_build

__all__ = ["EDGE_VALUES", "EXCLUSIONS", "edge_inputs"]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

#: Edge kind -> the values it puts into inputs, per dtype.
EDGE_VALUES: dict[str, dict[str, tuple[float, ...]]] = {
    "float32": {
        "nan": (np.nan,),
        "inf": (np.inf, -np.inf),
        "signed-zero": (-0.0, 0.0),
        "subnormal": (1e-40, -3e-42),
        # Ordinary numbers beside the edges: inf - 1.5, max(NaN, -2.5), and so on.
        "ordinary": (1.5, -2.5),
    },
    "int32": {
        "int-extremes": (INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1),
        "zero-minus-one": (0, -1),  # zero divisors, INT_MIN // -1, INT_MIN * -1
    },
}

_FLOAT_NONFINITE = ("nan", "inf")
_WIDENED_INT = (
    "the reference computes in int64 or float64 and casts back, where the kernel accumulates "
    "in int32 with wrap-around: numpy defines no int32 result to compare with"
)
_INT_POWER = (
    "numpy raises for integer powers with negative exponents, and INT_MAX ** k overflows: no "
    "defined int32 reference"
)

#: ``"<op>[label]-<dtype>"`` (a case id without the shape kind) -> {edge kind: reason}.
#: The edge kind ``"empty"`` excludes the empty-tensor input.
EXCLUSIONS: dict[str, dict[str, str]] = {
    # float -> int casts of NaN and inf are undefined in C; numpy warns and returns INT_MIN.
    "astype-float32": dict.fromkeys(
        _FLOAT_NONFINITE, "float->int cast of NaN/inf is undefined (numpy returns INT_MIN)"
    ),
    "mean[axis1]-int32": {"int-extremes": _WIDENED_INT},
    "variance[axis1]-int32": {"int-extremes": _WIDENED_INT},
    "nn.conv2d-int32": {"int-extremes": _WIDENED_INT},
    "nn.conv2d[nhwc]-int32": {"int-extremes": _WIDENED_INT},
    "sum[wide]-int32": {"int-extremes": _WIDENED_INT},
    "matmul[wide]-int32": {"int-extremes": _WIDENED_INT},
    "power-int32": dict.fromkeys(("int-extremes", "zero-minus-one"), _INT_POWER),
    # Whether a product of subnormals underflows to 0 before it meets an inf (0 * inf is NaN,
    # inf * 1e-40 is inf) depends on the order, and the llvm target may reassociate products
    # (fastmath `reassoc`, docs/llvm_target.md): numpy's left-to-right order is one of many.
    "prod[axis1]-float32": {"subnormal": "order-dependent underflow under reassociation"},
    # numpy raises ValueError for a max/min/argmax/argmin of no elements ("zero-size array to
    # reduction operation ... which has no identity"): the op does not accept the input.
    **{
        key: {"empty": "numpy raises on a reduction of no elements (no identity)"}
        for key in (
            "max[axis0]-float32",
            "max[axis0]-int32",
            "argmin[all]-float32",
            "argmin[all]-int32",
        )
    },
}
for _family in (cases_math, cases_shape, cases_index, cases_nn, cases_sort):
    EXCLUSIONS.update(_family.EXCLUSIONS)


def _key(case: OpCase) -> str:
    return case.id.removesuffix(f"-{case.shape_kind}")


def _excluded(case: OpCase) -> dict[str, str]:
    return EXCLUSIONS.get(_key(case), {})


def _edge_pool(case: OpCase) -> list[float]:
    skip = _excluded(case)
    kinds = EDGE_VALUES.get(case.dtype, {})
    return [v for kind, values in kinds.items() if kind not in skip for v in values]


def edge_inputs(case: OpCase, pattern: str, n: int) -> list[np.ndarray]:
    """The case's ordinary inputs for extent ``n`` with edge values written into every
    parameter of the case's dtype: ``pattern`` is ``"dense"`` or ``"sparse"``."""
    rng = np.random.default_rng([7, n, sum(map(ord, case.id))])
    if n == 0:
        return _empty_inputs(case, rng)
    arrays = [np.array(a, copy=True) for a in case.template.inputs(rng, n, case.dtype)]
    pool = _edge_pool(case)
    if not pool:
        return arrays
    for position, array in enumerate(arrays):
        if str(array.dtype) != case.dtype or array.size == 0:
            continue
        flat = array.reshape(-1)
        if pattern.startswith("dense"):
            # A stride coprime to the pool size spreads the values over rows and columns, and
            # the shifts put every value at every position of every input over the runs.
            shift = int(pattern.removeprefix("dense")) + 3 * position
            picks = [(i * 5 + shift) % len(pool) for i in range(flat.size)]
            flat[:] = np.asarray([pool[p] for p in picks], dtype=array.dtype)
        else:
            cols = array.shape[-1] if array.ndim else 1
            for row in range(flat.size // cols):
                flat[row * cols + (row * 7 + position) % cols] = pool[(row + position) % len(pool)]
    return arrays


def _empty_inputs(case: OpCase, rng: np.random.Generator) -> list[np.ndarray]:
    # Some input makers index their arrays (ties, guards), so make extent-1 inputs and give
    # every parameter whose shape has the leading extent the shape it has at extent 0.
    arrays = case.template.inputs(rng, 1, case.dtype)
    params = case.template.params(0, case.dtype)
    out = []
    for array, (_, shape, _) in zip(arrays, params, strict=True):
        shape0 = tuple(int(d) for d in shape)
        out.append(array if array.shape == shape0 else np.zeros(shape0, array.dtype))
    return out


def _reference(case: OpCase, inputs: list[np.ndarray]) -> Any:
    # Edge values make numpy warn (invalid value, overflow, divide by zero): the values are
    # the point here, and a warnings-as-errors session must not turn them into failures.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return case.template.ref(*inputs)


SYMBOLIC = [case for case in CASES if case.symbolic]
BY_ID = {case.id: case for case in SYMBOLIC}
_POOL_SIZE = max(len([v for vs in kinds.values() for v in vs]) for kinds in EDGE_VALUES.values())
PATTERNS: tuple[tuple[str, int], ...] = (
    *((f"dense{shift}", 3) for shift in range(_POOL_SIZE)),
    ("sparse", 5),
    ("empty", 0),
)


@pytest.fixture(scope="module")
def edge_matrix(request: pytest.FixtureRequest, target: str, target_device: Any) -> MatrixBuild:
    """The matrix's executables for the target (shared with :mod:`.test_ops`)."""
    return matrix_build(request.session, target, target_device)


@pytest.mark.parametrize("case_id", [pytest.param(c.id, id=_key(c)) for c in SYMBOLIC])
def test_edge_values(
    edge_matrix: MatrixBuild, case_id: str, capfd: pytest.CaptureFixture[str]
) -> None:
    case = BY_ID[case_id]
    vm = edge_matrix.vm(case, "bytecode")
    fn: Callable[..., Any] = vm[case.func_name]
    skip = _excluded(case)
    for pattern, n in PATTERNS:
        if pattern == "empty" and "empty" in skip:
            # Keep the exclusion honest: numpy must really refuse the input.
            with pytest.raises(ValueError):
                _reference(case, edge_inputs(case, pattern, n))
            continue
        inputs = edge_inputs(case, pattern, n)
        want = _reference(case, inputs)
        where = f"{case.id} ({edge_matrix.target}, {pattern} edges, n={n})"
        assert_matches(case, fn(*inputs), want, where)
    capfd.readouterr()  # relax.print's output is not part of the comparison


def test_every_exclusion_names_a_matrix_case() -> None:
    """An exclusion for an op the matrix no longer has is stale: remove it."""
    keys = {_key(case) for case in SYMBOLIC}
    assert set(EXCLUSIONS) <= keys, sorted(set(EXCLUSIONS) - keys)
    for key, kinds in EXCLUSIONS.items():
        assert kinds and all(reason.strip() for reason in kinds.values()), key
