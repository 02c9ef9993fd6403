"""relaxvm: Apache TVM's Relax virtual machine, rebuilt in Python.

Importing this package registers nothing and loads no plugin: plugins load on the first
registry lookup.
"""

from __future__ import annotations

import os
from typing import Any

from . import errors
from .registry import (
    get_global_func,
    hookimpl,
    list_global_func_names,
    register_func,
    remove_global_func,
)
from .runtime import (
    DataType,
    Device,
    Module,
    Shape,
    Storage,
    Tensor,
    cpu,
    cuda,
    device,
    empty,
    tensor,
)
from .vm import (
    Arg,
    ArgKind,
    BenchmarkResult,
    ExecBuilder,
    Executable,
    Opcode,
    SpecialReg,
    VirtualMachine,
    VMClosure,
    VMFuncInfo,
    VMFuncKind,
    VMInstrumentReturnKind,
)

__version__ = "0.1.0"


_LAZY_SUBMODULES = {
    "ir": "relaxvm.ir",
    "relax": "relaxvm.relax",
    "tir": "relaxvm.ir.tir",
    "te": "relaxvm.ir.tir.te",
}


def __getattr__(name: str) -> Any:
    # The IR is imported on first use, so that `import relaxvm` for running executables stays
    # light.
    module_name = _LAZY_SUBMODULES.get(name)
    if module_name is None:
        raise AttributeError(f"module 'relaxvm' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(module_name)
    globals()[name] = module
    return module


def compile(mod: Any, target: Any = None, **kwargs: Any) -> Executable:
    """Compile a Relax IRModule into an :class:`Executable` (TVM's ``tvm.compile``).

    ``target`` is ``None``, ``"llvm"``, ``"cuda"``, a dict or a ``relaxvm.target.Target``;
    keyword arguments (``relax_pipeline``, ``params``, ``exec_mode``) are those of
    :func:`relaxvm.relax.build`. The compiler is imported on first use, so that
    ``import relaxvm`` stays light for running executables.

    Raises
    ------
    CompileError
        The module cannot be compiled (the message names the function, binding and reason).
    ValueError
        ``exec_mode`` is unknown.
    """
    from .backend.build import compile as compile_module

    return compile_module(mod, target, **kwargs)


def load_module(path: str | os.PathLike[str], *, trust: bool = False) -> Executable:
    """Load a file written by :meth:`Executable.export_library` (or :meth:`Executable.save`).

    Loading reads data only: nothing from the file is imported or executed. Native code in
    it (an llvm export's kernels) runs only when its tag verifies under your key
    (``docs/security.md``); otherwise the kernels are rebuilt from the TIR the file carries.

    Parameters
    ----------
    path : str or PathLike
        The file.
    trust : bool
        Run the file's object code even if it is not signed with your key, like ``dlopen``
        of a ``.so``. Only for files from a source you trust as you trust your compiler.

    Raises
    ------
    ExecutableFormatError
        The file is missing, corrupt, truncated, foreign or of another format version.
    """
    if not trust:
        return Executable.load(path)
    from .security import trusting_object_code

    with trusting_object_code():
        return Executable.load(path)


__all__ = [
    "Arg",
    "ArgKind",
    "BenchmarkResult",
    "DataType",
    "Device",
    "ExecBuilder",
    "Executable",
    "Module",
    "Opcode",
    "Shape",
    "SpecialReg",
    "Storage",
    "Tensor",
    "VMClosure",
    "VMFuncInfo",
    "VMFuncKind",
    "VMInstrumentReturnKind",
    "VirtualMachine",
    "__version__",
    "compile",
    "cpu",
    "cuda",
    "device",
    "empty",
    "errors",
    "get_global_func",
    "hookimpl",
    "list_global_func_names",
    "load_module",
    "register_func",
    "remove_global_func",
    "tensor",
]
