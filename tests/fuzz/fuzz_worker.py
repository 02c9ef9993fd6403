"""Subprocess side of the loader fuzz test (tests/fuzz/test_loader_fuzz.py); not a test module.

``python fuzz_worker.py JOB.json`` loads every case file the job lists with
``relaxvm.load_module``, runs its ``main`` on the job's fixed inputs and prints one JSON line
per case, flushed before the next case starts: the parent knows which case was running when
the process died (a segfault or an abort cannot be caught in-process), and which one hung.

Each line: ``{"id", "stage", "exc", "format_error", "relaxvm_error", "same", "message"}`` with
``stage`` one of ``"load"`` (loading raised), ``"run"`` (building the VM or the call raised)
or ``"ok"`` (it ran; ``same``: the result equals the untampered one bit for bit; ``close``:
it differs only by float rounding).
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import warnings
from typing import Any


def _describe(err: BaseException) -> dict[str, Any]:
    from relaxvm.errors import ExecutableFormatError, RelaxVMError

    return {
        "exc": f"{type(err).__module__}.{type(err).__qualname__}",
        "format_error": isinstance(err, ExecutableFormatError),
        "relaxvm_error": isinstance(err, RelaxVMError),
        "message": str(err)[:300],
    }


#: What counts as float rounding for the MLP's float32 outputs (entries of order one).
RTOL, ATOL = 1e-5, 1e-6


def run_case(path: str, inputs: list[Any], expected: Any) -> dict[str, Any]:
    """Load, run and compare one case (every exception is reported, none escapes)."""
    import numpy as np

    import relaxvm

    try:
        ex = relaxvm.load_module(path)
    except BaseException as err:  # the parent decides which exceptions are allowed
        return {"stage": "load", **_describe(err)}
    try:
        vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
        out = vm["main"](*[relaxvm.tensor(x) for x in inputs])
        result = out.numpy()
    except BaseException as err:
        return {"stage": "run", **_describe(err)}
    same = (
        result.dtype == expected.dtype
        and result.shape == expected.shape
        and result.tobytes() == expected.tobytes()
    )
    close = False
    if not same and result.shape == expected.shape and result.dtype == expected.dtype:
        # Within float rounding: the same kernels compiled with other (validated) flags,
        # e.g. without fast-math or FMA, which reorders or fuses the sums.
        close = bool(np.allclose(result, expected, rtol=RTOL, atol=ATOL, equal_nan=True))
    return {"stage": "ok", "same": bool(same), "close": close, "exc": None}


def main(job_path: str) -> int:
    """Run every case of the job; one result line each on stdout."""
    import numpy as np

    faulthandler.enable()  # a crash prints where it happened: the parent reports that
    warnings.simplefilter("ignore")  # "rebuilding kernels from TIR" and the like
    with open(job_path, encoding="utf-8") as stream:
        job = json.load(stream)
    with np.load(job["inputs"]) as data:
        inputs = [data[f"arg{i}"] for i in range(len(data.files) - 1)]
        expected = data["expected"]
    for case_id, path in job["cases"]:
        # The harness's own test (test_harness_names_crashing_and_hanging_cases) plants these.
        if path.endswith(".abort"):
            os.abort()
        if path.endswith(".hang"):
            time.sleep(3600)
        line = {"id": case_id, **run_case(path, inputs, expected)}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
