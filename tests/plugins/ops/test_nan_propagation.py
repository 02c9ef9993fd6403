"""Issue 12: NaN and inf propagate through max/min, argmax/argmin, relu, clip and softmax, as in
numpy, on the llvm target (vectorized row reductions included) and on the TIR interpreter.

Before the fix, ``R.max``/``R.min`` dropped a NaN that was not the first element (their
combiner was Python's ``max(acc, x)``, LLVM's ``select(x > acc, x, acc)``), ``argmax`` never
took a NaN, and elementwise ``maximum(a, b)`` dropped a NaN in ``b``. The conformance suite's
edge-value test (``relaxvm.testing.conformance.test_edges``) covers every op; these are the
issue's named cases, readable on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from _ops_harness import make_params

import relaxvm
from relaxvm.ir.relax import BlockBuilder
from relaxvm.ir.relax import op as _op
from relaxvm.testing import interpreter_target, registered_target

op: Any = _op
NAN, INF = np.nan, np.inf
WIDE = 37  # rows long enough for the vectorized reduction, with a remainder


@pytest.fixture(scope="module", params=["llvm", "interp"])
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "interp":
        with registered_target(interpreter_target()):
            yield "interp"
    else:
        yield str(request.param)


def _run(target: str, build: Callable[..., Any], *inputs: np.ndarray) -> np.ndarray:
    params = make_params([(f"x{i}", a.shape, str(a.dtype)) for i, a in enumerate(inputs)])
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(build(*params))
        bb.emit_func_output(out)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target), relaxvm.cpu())
    return vm["main"](*inputs).numpy()  # type: ignore[no-any-return]


def _rows() -> np.ndarray:
    x = np.arange(4 * WIDE, dtype="float32").reshape(4, WIDE) % 7 - 3
    x[0, 33] = NAN  # in the remainder of a 16- or 32-lane loop
    x[1, 5] = NAN  # inside a vector lane
    x[1, 9] = NAN  # a second NaN: argmax must keep the first
    x[2, 3] = INF
    x[3, 0] = -INF
    return x


CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "max": (lambda x: op.max(x, axis=1), lambda x: x.max(axis=1)),
    "min": (lambda x: op.min(x, axis=1), lambda x: x.min(axis=1)),
    "max-all": (lambda x: op.max(x), lambda x: x.max()),
    "min-axis0": (lambda x: op.min(x, axis=0), lambda x: x.min(axis=0)),
    "argmax": (lambda x: op.argmax(x, axis=1), lambda x: np.argmax(x, axis=1)),
    "argmin": (lambda x: op.argmin(x, axis=1), lambda x: np.argmin(x, axis=1)),
    "argmax-all": (lambda x: op.argmax(x), lambda x: np.argmax(x)),
    "relu": (lambda x: op.nn.relu(x), lambda x: np.maximum(x, 0)),
    "clip": (lambda x: op.clip(x, -1, 2), lambda x: np.clip(x, -1, 2)),
    "softmax": (lambda x: op.nn.softmax(x), lambda x: _softmax(x)),
    "log_softmax": (lambda x: op.nn.log_softmax(x), lambda x: np.log(_softmax(x))),
}


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(CASES))
def test_nan_and_inf_propagate_like_numpy(target: str, name: str) -> None:
    build, reference = CASES[name]
    x = _rows()
    with np.errstate(all="ignore"):
        want = reference(x)
    got = _run(target, build, x)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    if name.startswith("arg"):
        np.testing.assert_array_equal(got, want)


def test_argmax_first_nan_wins(target: str) -> None:
    x = np.array([[1, NAN, INF, NAN], [NAN, NAN, 1, 2], [-INF, -INF, -INF, -INF]], "float32")
    np.testing.assert_array_equal(_run(target, lambda t: op.argmax(t, axis=1), x), [1, 0, 0])
    np.testing.assert_array_equal(_run(target, lambda t: op.argmin(t, axis=1), x), [1, 0, 0])


@pytest.mark.parametrize("nan_in", ["first", "second"])
def test_elementwise_maximum_minimum_propagate_nan_from_either_operand(
    target: str, nan_in: str
) -> None:
    a = np.full((2, WIDE), 0.5, "float32")
    b = np.linspace(-1, 1, WIDE, dtype="float32")
    (a if nan_in == "first" else b)[..., 7] = NAN
    for relax_op, numpy_op in ((op.maximum, np.maximum), (op.minimum, np.minimum)):
        got = _run(target, relax_op, a, b)
        np.testing.assert_array_equal(got, numpy_op(a, b))
        assert np.isnan(got[:, 7]).all()
