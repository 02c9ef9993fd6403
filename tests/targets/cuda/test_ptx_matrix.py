"""Every kernel the op conformance matrix legalizes gets a GPU schedule, compiles to PTX and
assembles with ptxas for sm_80 and sm_90.

Static and symbolic-shape cases are compiled: the kernels are built once per session
(conftest.matrix_kernels, shared with test_gpu_sched_matrix), generated for sm_80 in two
worker processes, and each of the two PTX modules is assembled for sm_80 and sm_90. Symbolic
kernels that keep a scratch buffer of symbolic shape run as row kernels when their stages
allow it, else in one thread with the scratch taken from the device heap.
"""

from __future__ import annotations

import collections
import concurrent.futures
import re
import subprocess
import sys
from typing import Any

import pytest

from relaxvm.ir import IntImm
from relaxvm.ir.tir import Allocate, PrimFunc, post_order_visit
from relaxvm_cuda.ptxas import PTXAS_TIMEOUT, find_ptxas, ptxas_check
from relaxvm_cuda.schedule import schedule_kind
from relaxvm_llvm.tir_data import encode

KINDS = {"injective", "gemm", "small_reduction", "rows", "outer_parallel", "single_thread"}

pytestmark = pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not on PATH")


@pytest.fixture(scope="module")
def kernel_groups(matrix_kernels: dict[Any, list[Any]]) -> dict[Any, list[tuple[str, PrimFunc]]]:
    # The session's matrix build (conftest.matrix_kernels): its scheduled kernels.
    return {
        group: [(name, sched) for name, _, sched in found]
        for group, found in matrix_kernels.items()
    }


def test_every_matrix_kernel_is_scheduled(kernel_groups: dict[Any, Any]) -> None:
    kinds = collections.Counter(
        schedule_kind(func) for funcs in kernel_groups.values() for _, func in funcs
    )
    assert set(kinds) <= KINDS
    # Over 900 kernels at the time of writing, about 60 % injective; single_thread holds
    # index-checked gathers and scatters, adaptive pools, whole-tensor argmin, flattened scans.
    assert kinds["injective"] > 300 and kinds["rows"] > 70 and kinds["gemm"] > 50
    assert kinds["small_reduction"] > 30 and kinds["outer_parallel"] > 20
    assert kinds["single_thread"] < 0.2 * sum(kinds.values())


#: Compiles the kernels it reads (relaxvm_llvm.tir_data bytes on stdin) into one PTX
#: module for sm_80 and writes the PTX to stdout.
_WORKER = (
    "import sys\n"
    "from relaxvm_llvm.tir_data import decode\n"
    "from relaxvm_cuda.codegen import compile_ptx\n"
    "sys.stdout.write(compile_ptx(list(decode(sys.stdin.buffer.read())), 'sm_80').ptx)\n"
)
#: Processes compiling the matrix at once (the code generator holds one lock per process).
WORKERS = 2


@pytest.fixture(scope="module")
def programs(kernel_groups: dict[Any, Any]) -> list[str]:
    """The matrix's kernels as PTX for sm_80: one module per worker process, each compiling
    every WORKERS-th kernel (the code generation is most of this module's time; on two cores
    two processes halve it). The kernels travel as the strict TIR encoding exported files
    use, under unique names."""
    funcs = [item for funcs in kernel_groups.values() for item in funcs]
    shares = [funcs[k::WORKERS] for k in range(WORKERS)]

    def compile_share(share: list[tuple[str, PrimFunc]]) -> str:
        data = encode([(f"k{k}_{name}", func) for k, (name, func) in enumerate(share)])
        done = subprocess.run(
            [sys.executable, "-c", _WORKER], input=data, capture_output=True, check=False,
            timeout=PTXAS_TIMEOUT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
        ptx = done.stdout.decode()
        assert len(re.findall(r"\.visible \.entry ", ptx)) == len(share)
        return ptx

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(compile_share, shares))


def test_every_matrix_kernel_assembles(kernel_groups: dict[Any, Any], programs: list[str]) -> None:
    # PTX generated for sm_80 assembles for later architectures too, so one code generation
    # is checked for both (test_ptx_codegen generates for sm_90 itself).
    count = sum(len(funcs) for funcs in kernel_groups.values())
    entries = sum(len(re.findall(r"\.visible \.entry ", ptx)) for ptx in programs)
    assert entries == count > 700
    jobs = [(ptx, arch) for ptx in programs for arch in ("sm_80", "sm_90")]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two ptxas processes at once
        list(pool.map(lambda job: ptxas_check(*job), jobs))


def test_symbolic_scratch_of_a_one_thread_kernel_comes_from_the_device_heap(
    kernel_groups: dict[Any, Any], programs: list[str]
) -> None:
    heap = [
        name
        for funcs in kernel_groups.values()
        for name, func in funcs
        if schedule_kind(func) == "single_thread" and _symbolic_scratch(func)
    ]
    assert any(name.startswith("median") for name in heap)
    ptx = "".join(programs)
    assert "call.uni (retval0), malloc" in ptx and "call.uni free" in ptx


def test_softmax_and_norms_with_a_symbolic_row_count_are_row_kernels(
    kernel_groups: dict[Any, Any],
) -> None:
    kinds = {
        name: schedule_kind(func)
        for group, funcs in kernel_groups.items()
        if "symbolic" in group
        for name, func in funcs
    }
    for name in ("softmax", "log_softmax", "layer_norm", "rms_norm", "variance", "std",
                 "attention", "group_norm"):  # fmt: skip
        assert kinds[name] == "rows", name


def _symbolic_scratch(func: PrimFunc) -> bool:
    found = []

    def visit(node: object) -> None:
        if isinstance(node, Allocate) and not all(isinstance(e, IntImm) for e in node.buffer.shape):
            found.append(node)

    post_order_visit(func.body, visit)
    return bool(found)
