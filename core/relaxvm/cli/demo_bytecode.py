"""Hand-written bytecode: what the compiler emits for a small model, written with ExecBuilder.

``relaxvm demo`` compiles models with ``relaxvm.compile``; this module shows the lower road
that the VM's layers are tested on. It writes, with :class:`~relaxvm.ExecBuilder`, the
bytecode that ``relaxvm.compile`` emits for

.. code-block:: python

    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8, 3), "float32"),
             b: R.Tensor((3,), "float32")):
        return R.nn.relu(R.matmul(x, w) + b)

with a numpy function as the kernel (:func:`register_kernels` registers it, so ``relaxvm run
FILE --import relaxvm.cli.demo_bytecode:register_kernels`` runs a saved copy). The program checks its inputs
with the ``vm.builtin.*`` checks (binding ``n`` in the shape heap), computes the output size
with a host "shape function", allocates the output with ``alloc_storage`` / ``alloc_tensor``
and calls the kernel in destination-passing style, as compiled code does. :func:`run_demo` saves the
executable to a file, loads it back, runs it for two values of ``n``, checks a bad input is
rejected, and compares the results with numpy.

Core never imports a plugin: builtins are named by string, and their codes (TVM's
``MatchShapeCode`` / ``MakeShapeCode``) are written here as the integers the bytecode holds.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from ..errors import RelaxVMError
from ..registry.functions import get_global_func, register_func
from ..runtime import DataType, Tensor, cpu, tensor
from ..vm.builder import ExecBuilder
from ..vm.executable.executable import Executable
from ..vm.interpreter import VirtualMachine

__all__ = [
    "KERNEL_NAME",
    "SHAPE_FUNC_NAME",
    "build_executable",
    "reference",
    "register_kernels",
    "run_demo",
]

#: The numpy "kernel": ``out = relu(x @ w + b)``, destination-passing.
KERNEL_NAME = "demo.linear_relu"
#: The host shape function: ``heap[1] = heap[0] * 3 * 4`` (output bytes from ``n``).
SHAPE_FUNC_NAME = "demo.output_bytes"

IN_FEATURES = 8
OUT_FEATURES = 3
_FLOAT32 = DataType("float32")
_ITEMSIZE = 4

# MatchShapeCode / MakeShapeCode values (see the builtins plugin and docs/file_format.md).
_ASSERT_EQUAL_TO_IMM = 0
_STORE_TO_HEAP = 1
_ASSERT_EQUAL_TO_LOAD = 3
_USE_IMM = 0
_LOAD_SHAPE = 1
# Shape-heap slots: n, then the output's byte count.
_SLOT_N = 0
_SLOT_BYTES = 1

#: The builtins the program calls; the demo refuses to run, naming them, if any is missing.
REQUIRED_BUILTINS = (
    "vm.builtin.alloc_shape_heap",
    "vm.builtin.check_tensor_info",
    "vm.builtin.match_shape",
    "vm.builtin.make_shape",
    "vm.builtin.alloc_storage",
    "vm.builtin.alloc_tensor",
)


def _linear_relu(x: Tensor, w: Tensor, b: Tensor, out: Tensor) -> None:
    """The stand-in kernel. Its inputs were checked by the program before this call, as
    compiled kernels' are, so it only computes."""
    result = x.host_array() @ w.host_array()
    result += b.host_array()
    np.maximum(result, 0, out=out.host_array())


def _output_bytes(heap: Tensor) -> None:
    """The stand-in host shape function: computes a symbolic expression into the heap."""
    words = heap.host_array()
    words[_SLOT_BYTES] = words[_SLOT_N] * OUT_FEATURES * _ITEMSIZE


def register_kernels() -> None:
    """Register the demo's kernel and shape function (idempotent).

    An executable file holds only names, so any process that runs a saved demo executable
    calls this first (``relaxvm run FILE --import relaxvm.cli.demo:register_kernels``).

    Raises
    ------
    RegistryError
        Another function already holds one of the demo's names.
    """
    for name, func in ((KERNEL_NAME, _linear_relu), (SHAPE_FUNC_NAME, _output_bytes)):
        if get_global_func(name, allow_missing=True) is not func:
            register_func(name, func)


def _err_ctx(index: int, name: str, annotation: str) -> str:
    # The compiler's error-context prefix: a failed check names the function and parameter.
    return f"ErrorContext(fn=main, loc=param[{index}], param={name}, annotation={annotation}) "


def build_executable() -> Executable:
    """The bytecode of ``main(x, w, b) = relu(x @ w + b)``, as the compiler would emit it."""
    ib = ExecBuilder()
    f32 = _FLOAT32
    x, w, b = ib.r(0), ib.r(1), ib.r(2)
    heap, nbytes, storage, out_shape, out = ib.r(3), ib.r(4), ib.r(5), ib.r(6), ib.r(7)
    x_ann = f'R.Tensor((n, {IN_FEATURES}), "float32")'
    w_ann = f'R.Tensor(({IN_FEATURES}, {OUT_FEATURES}), "float32")'
    b_ann = f'R.Tensor(({OUT_FEATURES},), "float32")'
    with ib.function("main", num_inputs=3, param_names=["x", "w", "b"]):
        ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.vm_state(), ib.imm(2)], dst=heap)
        for index, (reg, ndim, name, ann) in enumerate(
            ((x, 2, "x", x_ann), (w, 2, "w", w_ann), (b, 1, "b", b_ann))
        ):
            ib.emit_call(
                "vm.builtin.check_tensor_info", args=[reg, ndim, f32, _err_ctx(index, name, ann)]
            )
        # x: bind n (first dimension) into the heap, the second must be 8.
        ib.emit_call(
            "vm.builtin.match_shape",
            args=[x, heap, 2, _STORE_TO_HEAP, _SLOT_N, _ASSERT_EQUAL_TO_IMM, IN_FEATURES,
                  _err_ctx(0, "x", x_ann)],
        )  # fmt: skip
        ib.emit_call(
            "vm.builtin.match_shape",
            args=[w, heap, 2, _ASSERT_EQUAL_TO_IMM, IN_FEATURES, _ASSERT_EQUAL_TO_IMM,
                  OUT_FEATURES, _err_ctx(1, "w", w_ann)],
        )  # fmt: skip
        ib.emit_call(
            "vm.builtin.match_shape",
            args=[b, heap, 1, _ASSERT_EQUAL_TO_IMM, OUT_FEATURES, _err_ctx(2, "b", b_ann)],
        )
        ib.emit_call(SHAPE_FUNC_NAME, args=[heap])
        ib.emit_call("vm.builtin.make_shape", args=[heap, 1, _LOAD_SHAPE, _SLOT_BYTES], dst=nbytes)
        ib.emit_call(
            "vm.builtin.alloc_storage",
            args=[ib.vm_state(), nbytes, ib.imm(0), f32, "global"],
            dst=storage,
        )
        ib.emit_call(
            "vm.builtin.make_shape",
            args=[heap, 2, _LOAD_SHAPE, _SLOT_N, _USE_IMM, OUT_FEATURES],
            dst=out_shape,
        )
        ib.emit_call("vm.builtin.alloc_tensor", args=[storage, 0, out_shape, f32], dst=out)
        ib.emit_call(KERNEL_NAME, args=[x, w, b, out])
        # A function's return value is checked too: y must be (n, 3) with the same n.
        ib.emit_call(
            "vm.builtin.match_shape",
            args=[out, heap, 2, _ASSERT_EQUAL_TO_LOAD, _SLOT_N, _ASSERT_EQUAL_TO_IMM,
                  OUT_FEATURES, "ErrorContext(fn=main, loc=return) "],
        )  # fmt: skip
        ib.emit_ret(out)
    return ib.get()


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What ``main`` must compute, in numpy."""
    return np.maximum(x @ w + b, 0)


def _missing_builtins() -> list[str]:
    return [name for name in REQUIRED_BUILTINS if get_global_func(name, allow_missing=True) is None]


def run_demo(
    save_path: str | None = None,
    show_text: bool = True,
    out: TextIO | None = None,
    seed: int = 0,
) -> bool:
    """Build, save, load, print and run the demo program; compare with numpy.

    Parameters
    ----------
    save_path : str, optional
        Where to write the executable (kept); by default a temporary file, removed after.
    show_text : bool
        Print the loaded executable's ``as_text()``.
    out : text stream, optional
        Where to print (standard output by default).
    seed : int
        Seed for the random inputs.

    Returns
    -------
    bool
        True when every result matches numpy and the bad input is rejected.

    Raises
    ------
    RelaxVMError
        A builtin is missing or the executable cannot be saved, loaded or run.
    """

    def say(text: str = "") -> None:
        print(text, file=out)

    missing = _missing_builtins()
    if missing:
        raise RelaxVMError(
            f"relaxvm demo needs the builtins {', '.join(missing)}, which no installed plugin "
            "registers (is the builtins plugin installed and up to date?)"
        )
    register_kernels()
    say(
        f"relaxvm demo: y = relu(x @ w + b), x: (n, {IN_FEATURES}), w: ({IN_FEATURES}, "
        f"{OUT_FEATURES}), b: ({OUT_FEATURES},), all float32"
    )
    say(
        "(hand-written bytecode standing in for relaxvm.compile; a numpy kernel stands in for LLVM)"
    )
    built = build_executable()
    with tempfile.TemporaryDirectory(prefix="relaxvm-demo-") as scratch:
        path = save_path or os.path.join(scratch, "demo.rvm")
        built.save(path)
        loaded = Executable.load(path)
        kind = "" if save_path else "a temporary file, "
        say(f"saved the executable ({kind}{os.path.getsize(path)} bytes) to {path}; loaded it back")
    same_text = loaded.as_text() == built.as_text()
    say(f"as_text() identical after the round trip: {'yes' if same_text else 'NO'}")
    if show_text:
        say("--- as_text() ---")
        say(loaded.as_text().rstrip("\n"))
        say("-----------------")
    ok = same_text and _run_checks(VirtualMachine(loaded, cpu()), say, seed)
    say("PASS" if ok else "FAIL")
    return ok


def _run_checks(vm: VirtualMachine, say: Callable[[str], None], seed: int) -> bool:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((IN_FEATURES, OUT_FEATURES)).astype("float32")
    b = rng.standard_normal(OUT_FEATURES).astype("float32")
    ok = True
    for n in (5, 2):
        x = rng.standard_normal((n, IN_FEATURES)).astype("float32")
        result: Any = vm["main"](tensor(x), tensor(w), tensor(b))
        expected = reference(x, w, b)
        got = result.numpy() if isinstance(result, Tensor) else None
        match = (
            got is not None
            and got.shape == expected.shape
            and got.dtype == expected.dtype
            and np.allclose(got, expected, rtol=1e-5, atol=1e-5)
        )
        if got is not None and got.shape == expected.shape:
            detail = f"max abs error {float(np.max(np.abs(got - expected))):.2e}"
        else:
            detail = f"got {result!r}"
        say(
            f"n={n}: y {expected.shape} {'matches' if match else 'DOES NOT match'} numpy ({detail})"
        )
        ok = ok and match
    bad = tensor(np.zeros((2, IN_FEATURES + 1), "float32"))
    try:
        vm["main"](bad, tensor(w), tensor(b))
    except RelaxVMError as err:
        say(f"bad input x: (2, {IN_FEATURES + 1}) rejected: {type(err).__name__}: {err}")
    else:
        say(f"bad input x: (2, {IN_FEATURES + 1}) was NOT rejected")
        ok = False
    return ok
