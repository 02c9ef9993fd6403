"""The ``relaxvm demo`` program: compile models for the LLVM CPU target and run them.

It is the README's main job, end to end:

1. parse the seed example (``R.add(x, x)`` on a ``(3, 4)`` tensor) from script text, compile it
   for ``llvm``, print its bytecode and check the result against numpy;
2. compile a two-layer MLP with a symbolic batch size ``n`` (fused matmul + bias + relu
   kernels), write it with ``export_library``, load it back with ``load_module`` (no
   recompilation), run it for two batch sizes in both exec modes, check the results against
   numpy, and check that a badly shaped input is refused with an error naming the parameter.

It prints ``PASS`` or ``FAIL``; :func:`run_demo` returns the same as a bool.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

from ..errors import RelaxVMError
from ..runtime import cpu, tensor
from ..vm.interpreter import VirtualMachine

__all__ = ["MLP_SOURCE", "SEED_SOURCE", "reference_mlp", "run_demo"]

#: The seed example of the spec, as a user would write it.
SEED_SOURCE = """\
from relaxvm.script import ir as I, relax as R

@I.ir_module
class MyModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        return R.add(x, x)
"""

#: A two-layer MLP with a symbolic batch size.
MLP_SOURCE = """\
from relaxvm.script import ir as I, relax as R

@I.ir_module
class MLP:
    @R.function
    def main(
        x: R.Tensor(("n", 64), "float32"),
        w1: R.Tensor((64, 128), "float32"),
        b1: R.Tensor((128,), "float32"),
        w2: R.Tensor((128, 10), "float32"),
        b2: R.Tensor((10,), "float32"),
    ) -> R.Tensor(("n", 10), "float32"):
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, w1), b1))
            out = R.add(R.matmul(h, w2), b2)
            R.output(out)
        return out
"""


def reference_mlp(x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    """The MLP in numpy."""
    w1, b1, w2, b2 = params
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


def _close(got: Any, want: np.ndarray) -> tuple[bool, str]:
    array = got.numpy() if hasattr(got, "numpy") else None
    if array is None or array.shape != want.shape:
        return False, f"got {got!r}"
    error = float(np.max(np.abs(array - want))) if want.size else 0.0
    ok = array.dtype == want.dtype and np.allclose(array, want, rtol=1e-4, atol=1e-4)
    return ok, f"max abs error {error:.2e}"


def run_demo(
    save_path: str | None = None,
    show_text: bool = True,
    out: TextIO | None = None,
    seed: int = 0,
    target: str = "llvm",
) -> bool:
    """Compile, export, load and run the demo models; compare with numpy.

    Parameters
    ----------
    save_path : str, optional
        Where to write the MLP's executable (kept); by default a temporary file.
    show_text : bool
        Print the seed example's script and bytecode.
    out : text stream, optional
        Where to print (standard output by default).
    seed : int
        Seed for the random inputs and weights.
    target : str
        The target to compile for.

    Returns
    -------
    bool
        True when every result matches numpy and the bad input is refused.
    """
    from .. import compile as compile_module
    from .. import load_module
    from ..script import from_source

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    ok = True
    say(f"relaxvm demo: compile and run on the {target} target")
    # -- 1. the seed example -------------------------------------------------------------
    seed_mod = from_source(SEED_SOURCE, source_name="<seed example>")
    started = time.perf_counter()
    seed_ex = compile_module(seed_mod, target=target)
    say(f"[seed] compiled MyModule in {time.perf_counter() - started:.2f} s")
    if show_text:
        say("--- script ---")
        say(SEED_SOURCE.rstrip("\n"))
        say("--- bytecode (as_text) ---")
        say(seed_ex.as_text().rstrip("\n"))
        say("--------------")
    x = np.arange(12, dtype="float32").reshape(3, 4)
    match, detail = _close(VirtualMachine(seed_ex, cpu())["main"](tensor(x)), x + x)
    say(f"[seed] main(x) {'matches' if match else 'DOES NOT match'} numpy x + x ({detail})")
    ok &= match
    # -- 2. the dynamic-batch MLP --------------------------------------------------------
    mlp_mod = from_source(MLP_SOURCE, source_name="<demo MLP>")
    rng = np.random.default_rng(seed)
    params = [
        (rng.standard_normal(shape) / np.sqrt(shape[0])).astype("float32")
        for shape in [(64, 128), (128,), (128, 10), (10,)]
    ]
    with tempfile.TemporaryDirectory(prefix="relaxvm-demo-") as scratch:
        for exec_mode in ("bytecode", "compiled"):
            started = time.perf_counter()
            built = compile_module(mlp_mod, target=target, exec_mode=exec_mode)
            seconds = time.perf_counter() - started
            path = save_path if save_path and exec_mode == "bytecode" else None
            path = path or os.path.join(scratch, f"mlp_{exec_mode}.rvm")
            built.export_library(path)
            loaded = load_module(path)
            say(
                f"[mlp/{exec_mode}] compiled in {seconds:.2f} s; exported to {path} "
                f"({os.path.getsize(path)} bytes) and loaded back"
            )
            ok &= _check_mlp(VirtualMachine(loaded, cpu()), params, rng, say, exec_mode)
    say("PASS" if ok else "FAIL")
    return bool(ok)


def _check_mlp(
    vm: VirtualMachine,
    params: list[np.ndarray],
    rng: np.random.Generator,
    say: Callable[[str], None],
    label: str,
) -> bool:
    ok = True
    tensors = [tensor(p) for p in params]
    for n in (1, 16):
        x = rng.standard_normal((n, 64)).astype("float32")
        want = reference_mlp(x, params)
        match, detail = _close(vm["main"](tensor(x), *tensors), want)
        verdict = "matches" if match else "DOES NOT match"
        say(f"[mlp/{label}] n={n}: out {want.shape} {verdict} numpy ({detail})")
        ok &= match
    try:
        vm["main"](tensor(np.zeros((2, 63), "float32")), *tensors)
    except RelaxVMError as err:
        first_line = str(err).splitlines()[0]
        say(f"[mlp/{label}] bad input x: (2, 63) refused: {type(err).__name__}: {first_line}")
    else:
        say(f"[mlp/{label}] bad input x: (2, 63) was NOT refused")
        ok = False
    return ok
