"""TVM's ``tvm.contrib.cc`` names, present so TVM code imports; they do not compile.

TVM's ``create_shared``, ``create_staticlib`` and ``create_executable`` run the system C
compiler over the object files TVM's codegen writes, and ``export_library(path,
fcompile=cc.create_staticlib)`` uses them to link kernels into ``system_lib`` archives.
relaxvm writes no C and no object files for a user to link: ``Executable.export_library``
produces a loadable ``.rvm`` (or a ``.so`` the llvm target links itself) and takes no ``fcompile``,
and there is no ``runtime.system_lib`` registry for a linked archive to join. A compiler
wrapper here would only run ``cc`` on files relaxvm never produces, so these functions raise
:class:`CompilerNotSupportedError`, saying what to use instead (``docs/contrib.md``).
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilerNotSupportedError

__all__ = [
    "CompilerNotSupportedError",
    "create_executable",
    "create_shared",
    "create_staticlib",
    "cross_compiler",
]

_ADVICE = (
    "relaxvm does not compile or link C: Executable.export_library(path) writes a complete, "
    "loadable file itself ('.rvm', or '.so' for the llvm target) and relaxvm.load_module(path) "
    "reads it back; there is no system_lib to link static archives into"
)


def _unsupported(name: str) -> CompilerNotSupportedError:
    return CompilerNotSupportedError(f"relaxvm.contrib.cc.{name}: {_ADVICE}")


def create_shared(
    output: str, objects: Any, options: Any = None, cc: Any = None, **kwargs: Any
) -> None:
    """TVM links ``objects`` into a shared library here.

    Raises
    ------
    CompilerNotSupportedError
        Always (see the module docstring).
    """
    raise _unsupported("create_shared")


def create_staticlib(output: str, inputs: Any, ar: Any = None, **kwargs: Any) -> None:
    """TVM archives ``inputs`` into a static library here.

    Raises
    ------
    CompilerNotSupportedError
        Always (see the module docstring).
    """
    raise _unsupported("create_staticlib")


def create_executable(
    output: str, objects: Any, options: Any = None, cc: Any = None, **kwargs: Any
) -> None:
    """TVM links ``objects`` into an executable here.

    Raises
    ------
    CompilerNotSupportedError
        Always (see the module docstring).
    """
    raise _unsupported("create_executable")


def cross_compiler(
    compile_func: Any, options: Any = None, output_format: Any = None, **kwargs: Any
) -> Any:
    """TVM wraps a compiler command into an ``fcompile`` function here.

    Raises
    ------
    CompilerNotSupportedError
        Always (see the module docstring).
    """
    raise _unsupported("cross_compiler")
