"""Every kernel the op conformance matrix legalizes gets a GPU schedule, compiles to PTX and
assembles with ptxas for sm_80 and sm_90.

Static and symbolic-shape cases are compiled (one PTX program per case family, dtype and
shape kind, generated for sm_80 and assembled for sm_80 and sm_90). Symbolic kernels that
keep a scratch buffer of symbolic shape run as row kernels when their stages allow it, else
in one thread with the scratch taken from the device heap.
"""

from __future__ import annotations

import collections
import concurrent.futures
from typing import Any

import pytest

from relaxvm.ir import IntImm
from relaxvm.ir.tir import Allocate, PrimFunc, lower_blocks, post_order_visit
from relaxvm.testing.conformance.cases import all_cases, build_module
from relaxvm.transform.pipeline import get_pipeline
from relaxvm_cuda.codegen import compile_ptx
from relaxvm_cuda.ptxas import find_ptxas, ptxas_check
from relaxvm_cuda.schedule import schedule_kind, schedule_prim_func

KINDS = {"injective", "gemm", "small_reduction", "rows", "outer_parallel", "single_thread"}

pytestmark = pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not on PATH")


@pytest.fixture(scope="module")
def kernel_groups() -> dict[Any, list[tuple[str, PrimFunc]]]:
    groups: dict[Any, list[Any]] = collections.defaultdict(list)
    for case in all_cases():
        groups[case.group].append(case)
    pipeline = get_pipeline("default")
    kernels = {}
    for group, cases in groups.items():
        mod = pipeline(build_module(cases))
        kernels[group] = [
            (gvar.name_hint, schedule_prim_func(lower_blocks(func)))
            for gvar, func in mod.functions.items()
            if isinstance(func, PrimFunc) and not func.attrs.get("tir.is_host_func")
        ]
    return kernels


def test_every_matrix_kernel_is_scheduled(kernel_groups: dict[Any, Any]) -> None:
    kinds = collections.Counter(
        schedule_kind(func) for funcs in kernel_groups.values() for _, func in funcs
    )
    assert set(kinds) <= KINDS
    # 740 kernels at the time of writing: 406 injective, 82 rows, 68 gemm, 46
    # small_reduction, 32 outer_parallel, 106 single_thread (index-checked gathers and
    # scatters, adaptive pools, whole-tensor argmin, flattened scans).
    assert kinds["injective"] > 300 and kinds["rows"] > 70 and kinds["gemm"] > 50
    assert kinds["small_reduction"] > 30 and kinds["outer_parallel"] > 20
    assert kinds["single_thread"] < 0.2 * sum(kinds.values())


@pytest.fixture(scope="module")
def program(kernel_groups: dict[Any, Any]) -> Any:
    # Every kernel in one module: one code generation and one ptxas run per architecture.
    funcs = [item for funcs in kernel_groups.values() for item in funcs]
    return compile_ptx(funcs, "sm_80")


def test_every_matrix_kernel_assembles(kernel_groups: dict[Any, Any], program: Any) -> None:
    # PTX generated for sm_80 assembles for later architectures too, so one code generation
    # is checked for both (test_ptx_codegen generates for sm_90 itself).
    count = sum(len(funcs) for funcs in kernel_groups.values())
    assert len(program.kernels) == count > 700
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two ptxas processes at once
        list(pool.map(lambda arch: ptxas_check(program.ptx, arch), ("sm_80", "sm_90")))


def test_symbolic_scratch_of_a_one_thread_kernel_comes_from_the_device_heap(
    kernel_groups: dict[Any, Any], program: Any
) -> None:
    heap = [
        name
        for funcs in kernel_groups.values()
        for name, func in funcs
        if schedule_kind(func) == "single_thread" and _symbolic_scratch(func)
    ]
    assert any(name.startswith("median") for name in heap)
    ptx = program.ptx
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
