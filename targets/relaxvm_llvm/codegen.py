"""PrimFuncs to optimized LLVM modules and their object code.

Each kernel is generated into its own ``llvmlite.ir`` module and verified alone, so an error
names the kernel. A small build links the verified modules, optimizes them together (O3 with
loop and SLP vectorization) and emits one object file; a large one optimizes and emits each
kernel on its own, in this process and in worker processes, while the next kernels' IR is
generated (:mod:`relaxvm_llvm.compile_pool`), and keeps one object file per kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.ir as ir

from relaxvm.ir.tir import PrimFunc
from relaxvm.runtime.dtype import DataType

from . import jit
from .codegen_expr import I32, I64, PTR, Lane
from .codegen_stmt import FunctionCodegen, ModuleState, finish_loop_metadata
from .errors import LLVMBuildError
from .signature import BufferParam, KernelSignature, assign_symbols, signature_of

__all__ = ["CompiledObject", "bind_arguments", "compile_prim_funcs", "generate_kernel_ir"]

_INT64 = DataType("int64")


@dataclass(frozen=True)
class CompiledObject:
    """Object code for a set of kernels plus what is needed to call them."""

    #: ELF object files, linked together into one engine (one per kernel for large builds).
    objects: tuple[bytes, ...]
    signatures: tuple[KernelSignature, ...]
    info: jit.TargetInfo
    #: The optimized LLVM IR (kept for inspection; not part of serialized modules).
    llvm_ir: str = ""


def generate_kernel_ir(
    func: PrimFunc, name: str, symbol: str, fastmath: tuple[str, ...]
) -> tuple[str, KernelSignature]:
    """LLVM IR text of one kernel and its signature.

    Raises
    ------
    LLVMBuildError
        An unsupported construct or type (the message names the kernel).
    """
    if not isinstance(func, PrimFunc):
        raise LLVMBuildError(
            f"llvm target: {name!r} is a {type(func).__name__}, not a tir.PrimFunc"
        )
    signature, variables = signature_of(func, name, symbol)
    module = ir.Module(name=symbol)
    nbuf = sum(isinstance(p, BufferParam) for p in signature.params)
    fn_type = ir.FunctionType(I32, [PTR] * nbuf + [I64] * len(variables))
    fn = ir.Function(module, fn_type, symbol)
    fn.attributes.add("nounwind")
    # TVM's `tir.noalias`: buffer arguments never overlap unless the function says otherwise.
    noalias = func.attrs.get("tir.noalias", True) is not False
    gen = FunctionCodegen(ModuleState(module, fastmath), fn, name, symbol)
    try:
        bind_arguments(gen, func, fn, variables, noalias)
        gen.emit_stmt(func.body)
        if not gen.builder.block.is_terminated:
            gen.builder.ret(ir.Constant(I32, 0))
        text = finish_loop_metadata(str(module))
    except LLVMBuildError:
        raise
    except RecursionError:
        raise LLVMBuildError(f"llvm target: kernel {name!r} is nested too deeply") from None
    except Exception as err:  # llvmlite type errors and the like: a codegen bug or bad IR
        raise LLVMBuildError(
            f"llvm target: kernel {name!r} could not be compiled: {type(err).__name__}: {err}"
        ) from err
    return text, signature


def bind_arguments(
    gen: FunctionCodegen, func: PrimFunc, fn: ir.Function, variables: Sequence[Any], noalias: bool
) -> None:
    """Bind a kernel's native arguments in ``gen`` (the calling convention of
    :mod:`.signature`: one pointer per buffer parameter, then one ``i64`` per variable): name
    them, mark buffers ``noalias`` when asked, and define the buffers. The CUDA target's code
    generator binds its kernels' arguments the same way."""
    args = iter(fn.args)
    buffers = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None:
            continue
        arg = next(args)
        arg.name = buffer.name
        if noalias:
            arg.add_attribute("noalias")
        gen.define_handle(buffer.data, arg)
        buffers.append(buffer)
    for var in variables:
        arg = next(args)
        arg.name = var.name
        value = arg if var.dtype == _INT64 else gen.cast_value(arg, _INT64, var.dtype)
        gen.env[var] = Lane(Lane.SCALAR, value)
    for buffer in buffers:
        gen.define_buffer(buffer)


def compile_prim_funcs(
    funcs: Sequence[tuple[str, PrimFunc]],
    info: jit.TargetInfo,
    progress: Callable[[str, int], None] | None = None,
) -> CompiledObject:
    """Compile named PrimFuncs into object code.

    ``progress(stage, done)``, when given, is called as kernels progress: ``("kernel", k)``
    with ``k`` kernels done so far, and for a small build ``"optimize"`` and ``"emit"`` before
    those steps.

    Raises
    ------
    LLVMBuildError
        A kernel cannot be compiled, or LLVM rejects its IR (naming the kernel).
    """
    from . import compile_pool

    report = progress or _no_progress
    workers = compile_pool.worker_count() if len(funcs) >= compile_pool.MIN_KERNELS else 0
    # LLVM's global context is not thread-safe: one compilation at a time per process (a
    # split build's modules live in contexts of their own, but other users of the global
    # context still wait for it).
    with jit.LLVM_LOCK:
        if workers:
            return _compile_split(funcs, info, report, workers)
        return _compile(funcs, info, report)


def _no_progress(stage: str, done: int) -> None:
    pass


def _compile_split(
    funcs: Sequence[tuple[str, PrimFunc]],
    info: jit.TargetInfo,
    progress: Callable[[str, int], None],
    workers: int,
) -> CompiledObject:
    from . import compile_pool

    signatures: list[KernelSignature] = []

    def texts() -> Iterator[tuple[str, str]]:
        symbols = assign_symbols([name for name, _ in funcs])
        for (name, func), symbol in zip(funcs, symbols, strict=True):
            text, signature = generate_kernel_ir(func, name, symbol, info.fastmath)
            signatures.append(signature)
            yield name, text

    kernels = compile_pool.compile_kernels(
        texts(), len(funcs), info, workers, lambda done: progress("kernel", done)
    )
    return CompiledObject(
        tuple(k.object_code for k in kernels),
        tuple(signatures),
        info,
        "\n".join(k.llvm_ir for k in kernels),
    )


def _compile(
    funcs: Sequence[tuple[str, PrimFunc]],
    info: jit.TargetInfo,
    progress: Callable[[str, int], None],
) -> CompiledObject:
    import llvmlite.binding as llvm

    signatures = []
    merged = None
    symbols = assign_symbols([name for name, _ in funcs])
    for (name, func), symbol in zip(funcs, symbols, strict=True):
        text, signature = generate_kernel_ir(func, name, symbol, info.fastmath)
        jit.target_machine(info.triple, info.cpu, info.features)  # initializes LLVM
        try:
            parsed = llvm.parse_assembly(text)
            parsed.verify()
        except RuntimeError as err:
            raise LLVMBuildError(
                f"llvm target: LLVM rejected the IR of kernel {name!r}: {err}"
            ) from None
        if merged is None:
            merged = parsed
        else:
            merged.link_in(parsed)
        signatures.append(signature)
        progress("kernel", len(signatures))
    if merged is None:
        return CompiledObject((), (), info)
    progress("optimize", len(signatures))
    optimized = jit.optimize_module(merged, info)
    progress("emit", len(signatures))
    obj = jit.emit_object(optimized, info)
    return CompiledObject((obj,), tuple(signatures), info, str(optimized))
