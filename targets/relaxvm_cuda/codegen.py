"""Thread-bound PrimFuncs to one PTX module (LLVM's NVPTX backend through llvmlite).

Each kernel is generated into its own ``llvmlite.ir`` module and verified alone, so an error
names the kernel; the modules are linked with one that defines the index-error slot
(:data:`.codegen_func.ERROR_SYMBOL`), optimized at O3 for the architecture and printed as
PTX. No GPU is needed.

A kernel's body must be its launch: a loop bound to ``blockIdx``/``threadIdx`` at the root,
whose thread-bound loops give the launch extents (per axis, the largest; expressions over the
kernel's parameters and shape variables, so the runtime computes the grid of a symbolic
kernel at call time). A function with no thread-bound loop at all runs as one thread
(:func:`relaxvm_cuda.schedule.single_thread`), so every kernel compiles.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import llvmlite.ir as ir

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.op import max_expr
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import For, ForKind, PrimFunc, post_order_visit
from relaxvm.runtime.dtype import DataType
from relaxvm_llvm.codegen import bind_arguments
from relaxvm_llvm.codegen_stmt import ModuleState, finish_loop_metadata
from relaxvm_llvm.errors import LLVMBuildError
from relaxvm_llvm.lltypes import I64, PTR
from relaxvm_llvm.signature import BufferParam, assign_symbols, encode_expr, signature_of

from .codegen_func import ERROR_SYMBOL, PTXFunctionCodegen, declare_error_slot
from .errors import CUDABuildError
from .program import LAUNCH_AXES, PTXKernel, PTXProgram

__all__ = ["NVPTX_TRIPLE", "SUPPORTED_ARCHS", "check_arch", "compile_ptx", "launch_extents"]

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
#: Compute capabilities LLVM's NVPTX backend knows (``sm_90a``-style suffixes: 90 and up).
SUPPORTED_ARCHS = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120)
#: Most threads a block may have.
MAX_BLOCK_THREADS = 1024
#: Fast-math flags on the kernels' float arithmetic: a product feeding a sum becomes one
#: ``fma`` (as nvcc's default ``--fmad=true``, which TVM's CUDA kernels are built with): one
#: rounding instead of two, and half the instructions of a matmul's inner loop. Nothing that
#: changes results further (no reassociation): reductions keep their order.
CONTRACT = ("contract",)
_INT64 = DataType("int64")
_ARCH = re.compile(r"sm_(\d+)([af]?)")


def check_arch(arch: Any) -> str:
    """``arch`` if it names a supported ``sm_XY`` architecture.

    Raises
    ------
    CUDABuildError
        Anything else (the message names the value and the supported ones).
    """
    match = _ARCH.fullmatch(arch) if isinstance(arch, str) else None
    number = int(match.group(1)) if match else None
    if match is None or number not in SUPPORTED_ARCHS or (match.group(2) and number < 90):
        known = ", ".join(f"sm_{n}" for n in SUPPORTED_ARCHS)
        raise CUDABuildError(
            f"cuda target: unknown GPU architecture {arch!r}; expected sm_XY with XY one of "
            f"{known} (sm_90a-style suffixes from sm_90)"
        )
    return str(arch)


def launch_extents(func: PrimFunc, name: str) -> dict[str, PrimExpr]:
    """The launch extent of each axis the kernel binds (the largest of its loops')."""
    extents: dict[str, PrimExpr] = {}

    def visit(node: Any) -> None:
        if isinstance(node, For) and node.kind == ForKind.THREAD_BINDING:
            axis = str(node.thread_binding)
            if axis not in LAUNCH_AXES:
                return
            extent = node.extent
            previous = extents.get(axis)
            if previous is None or structural_equal(previous, extent):
                extents[axis] = extent
            elif isinstance(previous, IntImm) and isinstance(extent, IntImm):
                extents[axis] = previous if previous.value >= extent.value else extent
            else:
                extents[axis] = max_expr(previous, extent)

    post_order_visit(func.body, visit)
    root = func.body
    if not (isinstance(root, For) and root.kind == ForKind.THREAD_BINDING and extents):
        raise CUDABuildError(
            f"cuda target: kernel {name!r}: the body must be a loop bound to blockIdx/threadIdx "
            "(the launch); schedule it with relaxvm_cuda.schedule first"
        )
    return extents


def _launch_data(
    name: str, extents: dict[str, PrimExpr], variables: list[Var]
) -> tuple[tuple[Any, ...], bool]:
    index = {var: k for k, var in enumerate(variables)}
    encoded = []
    for axis in LAUNCH_AXES:
        extent = extents.get(axis)
        if extent is None:
            encoded.append(1)
            continue
        try:
            encoded.append(encode_expr(extent, index, f"launch extent of {axis}"))
        except LLVMBuildError as err:
            raise CUDABuildError(f"cuda target: kernel {name!r}: {err}") from None
    threads = 1
    for value in encoded[3:]:
        threads = threads * value if isinstance(value, int) and isinstance(threads, int) else -1
    if isinstance(threads, int) and threads > MAX_BLOCK_THREADS:
        raise CUDABuildError(
            f"cuda target: kernel {name!r}: blocks of {threads} threads (at most "
            f"{MAX_BLOCK_THREADS})"
        )
    single = all(value == 1 for value in encoded)
    return tuple(encoded), single


class _ArgumentAttributes(ir.values.ArgumentAttributes):  # type: ignore[misc]
    """llvmlite's parameter attributes plus ``readonly`` (valid LLVM IR it does not list)."""

    _known = MappingProxyType({**ir.values.ArgumentAttributes._known, "readonly": False})


def generate_kernel_ir(func: PrimFunc, name: str, symbol: str) -> tuple[str, PTXKernel]:
    """The LLVM IR (NVPTX) of one kernel and its :class:`PTXKernel` entry.

    Raises
    ------
    CUDABuildError
        An unsupported construct, intrinsic or type (the message names the kernel).
    """
    if not isinstance(func, PrimFunc):
        raise CUDABuildError(f"cuda target: {name!r} is a {type(func).__name__}, not a PrimFunc")
    try:
        signature, variables = signature_of(func, name, symbol)
    except LLVMBuildError as err:
        raise CUDABuildError(str(err).replace("llvm target", "cuda target")) from None
    extents = launch_extents(func, name)
    launch, single = _launch_data(name, extents, variables)
    module = ir.Module(name=symbol)
    module.triple = NVPTX_TRIPLE
    nbuf = sum(isinstance(p, BufferParam) for p in signature.params)
    fn_type = ir.FunctionType(ir.VoidType(), [PTR] * nbuf + [I64] * len(variables))
    fn = ir.Function(module, fn_type, symbol)
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    noalias = signature.noalias
    gen = PTXFunctionCodegen(ModuleState(module, CONTRACT), fn, name, symbol, extents, single)
    try:
        bind_arguments(gen, func, fn, variables, noalias)
        # Inputs the kernel never writes are `readonly`: with `noalias`, what lets LLVM load
        # them through the read-only cache (ld.global.nc) even where a vector loop takes
        # their address to check its alignment (which hides the fact from LLVM's inference).
        buffer_params = [p for p in signature.params if isinstance(p, BufferParam)]
        for arg, param in zip(fn.args, buffer_params, strict=False):
            if not param.written:
                attributes = _ArgumentAttributes(arg.attributes)
                attributes.add("readonly")
                arg.attributes = attributes
        gen.emit_stmt(func.body)
        if not gen.builder.block.is_terminated:
            gen.builder.ret_void()
        text = finish_loop_metadata(str(module))
    except CUDABuildError:
        raise
    except LLVMBuildError as err:
        raise CUDABuildError(
            f"cuda target: kernel {name!r}: {str(err).replace('llvm target: ', '')}"
        ) from None
    except RecursionError:
        raise CUDABuildError(f"cuda target: kernel {name!r} is nested too deeply") from None
    except Exception as err:  # llvmlite type errors and the like: a codegen bug or bad IR
        raise CUDABuildError(
            f"cuda target: kernel {name!r} could not be compiled: {type(err).__name__}: {err}"
        ) from err
    return text, PTXKernel(name, symbol, signature, launch)


_machines: dict[str, Any] = {}


def _target_machine(arch: str) -> Any:
    """The NVPTX target machine for ``arch`` (callers hold ``jit.LLVM_LOCK``)."""
    import llvmlite.binding as llvm

    tm = _machines.get(arch)
    if tm is None:
        llvm.initialize_all_targets()  # idempotent; the NVPTX target ships with llvmlite
        llvm.initialize_all_asmprinters()
        target = llvm.Target.from_triple(NVPTX_TRIPLE)
        tm = _machines[arch] = target.create_target_machine(cpu=arch, opt=3, codemodel="default")
    return tm


def _slot_module() -> str:
    module = ir.Module(name="relaxvm_cuda_error_slot")
    module.triple = NVPTX_TRIPLE
    declare_error_slot(module, define=True)
    return str(module)


def compile_ptx(funcs: Sequence[tuple[str, PrimFunc]], arch: str = "sm_80") -> PTXProgram:
    """Compile named, GPU-scheduled PrimFuncs into one PTX module.

    Parameters
    ----------
    funcs : sequence of (name, PrimFunc)
        Kernels as :mod:`relaxvm_cuda.schedule` leaves them; a function without any
        thread-bound loop runs as one thread.
    arch : str
        The ``sm_XY`` to generate for (the PTX ISA version follows from it: 7.0 for sm_80).

    Returns
    -------
    PTXProgram

    Raises
    ------
    CUDABuildError
        A bad architecture, an unsupported construct or intrinsic, or IR LLVM rejects (the
        message names the kernel).
    """
    import llvmlite.binding as llvm

    from relaxvm_llvm import jit

    arch = check_arch(arch)
    from .schedule import single_thread

    with jit.LLVM_LOCK:
        tm = _target_machine(arch)
        symbols = assign_symbols([name for name, _ in funcs])
        merged = llvm.parse_assembly(_slot_module())
        kernels = []
        for (name, func), symbol in zip(funcs, symbols, strict=True):
            if isinstance(func, PrimFunc):
                func = single_thread(func)
            text, kernel = generate_kernel_ir(func, name, symbol)
            try:
                parsed = llvm.parse_assembly(text)
                parsed.verify()
            except RuntimeError as err:
                raise CUDABuildError(
                    f"cuda target: LLVM rejected the IR of kernel {name!r}: {err}"
                ) from None
            merged.link_in(parsed)
            kernels.append(kernel)
        merged.triple = NVPTX_TRIPLE
        merged.data_layout = str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = False
        pto.slp_vectorization = False
        pto.loop_unrolling = True
        builder = llvm.create_pass_builder(tm, pto)
        builder.getModulePassManager().run(merged, builder)
        ptx = tm.emit_assembly(merged)
    return PTXProgram(ptx, arch, tuple(kernels))


__all__ += ["ERROR_SYMBOL", "generate_kernel_ir"]
