"""relaxvm: Apache TVM's Relax virtual machine, rebuilt in Python.

Importing this package registers nothing and loads no plugin: plugins load on the first
registry lookup. It imports the runtime only; the submodules TVM code reaches for
(``relaxvm.ir``, ``.relax``, ``.transform``, ``.script``, ``.target``, ``.nd``, ``.testing``,
``.rpc``, ``.contrib``...)
and ``relaxvm.IRModule`` / ``relaxvm.Target`` load on first attribute access
(``docs/tvm_compat.md``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _module_alias, errors
from .errors import RelaxVMError as TVMError
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

if TYPE_CHECKING:
    # What ``__getattr__`` below provides on first access, spelled out for type checkers and
    # IDEs (at run time these imports do not happen, so ``import relaxvm`` stays light).
    # The ``x as x`` form marks them as re-exports.
    from . import backend as backend
    from . import cli as cli
    from . import contrib as contrib
    from . import error as error
    from . import frontend as frontend
    from . import ir as ir
    from . import nd as nd
    from . import registry as registry
    from . import relax as relax
    from . import rpc as rpc
    from . import runtime as runtime
    from . import script as script
    from . import security as security
    from . import target as target
    from . import testing as testing
    from . import topi as topi
    from . import transform as transform
    from . import vm as vm
    from .ir import tir as tir
    from .ir.relax import Function
    from .ir.relax.module import IRModule as IRModule
    from .ir.tir import te as te
    from .registry import extensions as extensions
    from .registry import hookspecs as hookspecs
    from .registry import loader as plugins  # noqa: F401 - relaxvm.plugins, the loader
    from .runtime import from_dlpack as from_dlpack
    from .target import Target as Target
    from .transform import Pass

__version__ = "0.1.0"

# ``import relaxvm.tir`` / ``from relaxvm.tir.function import PrimFunc`` as in TVM: the names are
# the very modules under ``relaxvm.ir.tir`` (no second copy), found on first import.
_module_alias.install({"relaxvm.tir": "relaxvm.ir.tir", "relaxvm.te": "relaxvm.ir.tir.te"})


#: Submodules (TVM's ``tvm.ir``, ``tvm.relax``, ``tvm.transform``...) imported on first
#: attribute access (PEP 562), so ``import relaxvm`` for running executables stays light while
#: ``relaxvm.transform.LegalizeOps()`` works without an explicit import, as in TVM.
_LAZY_SUBMODULES: dict[str, str] = {
    "backend": "relaxvm.backend",
    "cli": "relaxvm.cli",
    "contrib": "relaxvm.contrib",
    "error": "relaxvm.error",
    "extensions": "relaxvm.registry.extensions",
    "frontend": "relaxvm.frontend",
    "hookspecs": "relaxvm.registry.hookspecs",
    "ir": "relaxvm.ir",
    "nd": "relaxvm.nd",
    "plugins": "relaxvm.registry.loader",
    "registry": "relaxvm.registry",
    "relax": "relaxvm.relax",
    "rpc": "relaxvm.rpc",
    "runtime": "relaxvm.runtime",
    "script": "relaxvm.script",
    "security": "relaxvm.security",
    "target": "relaxvm.target",
    "te": "relaxvm.ir.tir.te",
    "testing": "relaxvm.testing",
    "tir": "relaxvm.ir.tir",
    "transform": "relaxvm.transform",
    "vm": "relaxvm.vm",
    "topi": "relaxvm.topi",
}

#: Names defined in a submodule and re-exported here on first access: name -> (module, name).
_LAZY_ATTRIBUTES: dict[str, tuple[str, str]] = {
    "IRModule": ("relaxvm.ir.relax.module", "IRModule"),
    "Target": ("relaxvm.target", "Target"),
    "from_dlpack": ("relaxvm.runtime", "from_dlpack"),
}


def __getattr__(name: str) -> Any:
    import importlib

    module_name = _LAZY_SUBMODULES.get(name)
    if module_name is not None:
        value = importlib.import_module(module_name)
    elif name in _LAZY_ATTRIBUTES:
        module_name, attribute = _LAZY_ATTRIBUTES[name]
        value = getattr(importlib.import_module(module_name), attribute)
    else:
        raise AttributeError(_missing_attribute_message(name), name=name)
    globals()[name] = value  # later lookups are plain module attributes, at no cost
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_SUBMODULES, *_LAZY_ATTRIBUTES})


def _missing_attribute_message(name: str) -> str:
    # Python only suggests names for modules without ``__getattr__``; say it ourselves, in
    # Python's words.
    import difflib

    message = f"module 'relaxvm' has no attribute {name!r}"
    public = [candidate for candidate in __dir__() if not candidate.startswith("_")]
    close = difflib.get_close_matches(name, public, n=1)
    return f"{message}. Did you mean: {close[0]!r}?" if close else message


def compile(
    mod: IRModule | Function,
    target: str | Mapping[str, Any] | Target | None = None,
    *,
    relax_pipeline: str | Pass | None = "default",
    params: Mapping[str, Any] | None = None,
    exec_mode: str = "bytecode",
) -> Executable:
    """Compile a Relax IRModule into an :class:`Executable` (TVM's ``tvm.compile``).

    The compiler is imported on first use, so that ``import relaxvm`` stays light for running
    executables. This is :func:`relaxvm.relax.build` with keyword-only options.

    Parameters
    ----------
    mod : IRModule or relax.Function
        The module to compile; a lone Relax function is compiled as ``main``.
    target : str, dict, Target or None
        ``"llvm"``, ``"cuda"``, ``{"kind": "llvm", "mcpu": "skylake"}`` or a
        :class:`relaxvm.target.Target`. With ``None``, the target of the enclosing
        ``with Target(...):`` block, else ``llvm`` when the module has kernels (a module
        without kernels needs no target).
    relax_pipeline : str, Pass or None
        A registered pipeline name (``"default"``, see
        :func:`relaxvm.transform.list_pipelines`), a Pass, or None to run no pass (the module
        must then be lowered already).
    params : mapping of str to array, optional
        Values bound to ``main``'s parameters of those names before the pipeline (TVM's
        ``BindParams``).
    exec_mode : {"bytecode", "compiled"}
        How the VM runs the functions: the dispatch loop, or Python generated from the
        bytecode when the executable is loaded.

    Returns
    -------
    Executable

    Raises
    ------
    CompileError
        The module cannot be compiled (the message names the function, binding and reason).
    ValueError
        ``exec_mode`` is unknown.
    """
    from .backend.build import compile as compile_module

    return compile_module(
        mod, target, relax_pipeline=relax_pipeline, params=params, exec_mode=exec_mode
    )


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
    "IRModule",
    "Module",
    "Opcode",
    "Shape",
    "SpecialReg",
    "Storage",
    "TVMError",
    "Target",
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
    "from_dlpack",
    "get_global_func",
    "hookimpl",
    "list_global_func_names",
    "load_module",
    "register_func",
    "remove_global_func",
    "tensor",
]
