"""Assemble PTX with the toolkit's ``ptxas`` (a check that needs no GPU)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from .codegen import check_arch
from .errors import CUDABuildError

__all__ = ["find_ptxas", "ptxas_check"]

#: Seconds one ``ptxas`` run may take.
PTXAS_TIMEOUT = 300


def find_ptxas() -> str | None:
    """The ``ptxas`` executable: on ``PATH``, else under ``$CUDA_HOME/bin`` or
    ``$CUDA_PATH/bin``; None when absent."""
    found = shutil.which("ptxas")
    if found:
        return found
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        if root:
            candidate = os.path.join(root, "bin", "ptxas")
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def ptxas_check(ptx: str, arch: str) -> None:
    """Assemble ``ptx`` for ``arch`` into a temporary directory.

    Raises
    ------
    CUDABuildError
        ``ptxas`` is absent, a bad ``arch``, or ``ptxas`` rejected the PTX (its log is in the
        message).
    """
    arch = check_arch(arch)
    exe = find_ptxas()
    if exe is None:
        raise CUDABuildError("ptxas_check: ptxas is not on PATH (nor under $CUDA_HOME/bin)")
    with tempfile.TemporaryDirectory(prefix="relaxvm-ptxas-") as folder:
        source = os.path.join(folder, "kernels.ptx")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(ptx)
        command = [exe, f"-arch={arch}", "-o", os.path.join(folder, "kernels.cubin"), source]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=PTXAS_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            raise CUDABuildError(
                f"ptxas_check: ptxas -arch={arch} ran for more than {PTXAS_TIMEOUT} s"
            ) from None
        if done.returncode != 0:
            log = (done.stderr + done.stdout).strip()
            raise CUDABuildError(
                f"ptxas_check: ptxas -arch={arch} rejected the PTX (exit {done.returncode}):\n{log}"
            )
