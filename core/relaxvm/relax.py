"""TVM's ``tvm.relax`` namespace: ``from relaxvm import relax`` as ``from tvm import relax``.

The Relax IR itself lives in :mod:`relaxvm.ir.relax` (expressions, StructInfo, IRModule,
BlockBuilder, ``op``); this module adds what ``tvm.relax`` also offers from the other layers:
:func:`build` (the compiler), :class:`VirtualMachine`, :class:`Executable` and
:class:`ExecBuilder` (the runtime),
``transform`` (the Relax passes, :mod:`relaxvm.transform`, so ``relax.transform.LegalizeOps()``
works as in TVM), ``frontend`` (the importers, :mod:`relaxvm.frontend`), ``testing`` (TVM's
VM test helpers, :mod:`relaxvm.testing.relax`) and
:func:`get_pipeline`. Keeping that here, not in the IR package, lets the IR stay below the
compiler and the runtime in the import graph.

Import statements work too, as in TVM: ``from relaxvm.relax.frontend.onnx import from_onnx``,
``import relaxvm.relax.transform``, ``from relaxvm.relax.op import nn``. ``relaxvm.relax.X``
is the very module ``relaxvm.X`` (for ``transform``, ``frontend``, ``backend``) or
``relaxvm.ir.relax.X`` (the IR's own submodules), never a second copy of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import VMTypeError as _VMTypeError
from .errors import VMValueError as _VMValueError
from .ir.relax import *  # noqa: F403 - the whole Relax IR, as tvm.relax has it
from .ir.relax import Expr, ShapeStructInfo, TensorStructInfo, update_struct_info
from .ir.relax import __all__ as _ir_names
from .ir.relax import op as op
from .ir.relax.op import call_dps_packed as call_dps_packed
from .ir.relax.op import call_pure_packed as call_pure_packed
from .ir.relax.op import call_tir as call_tir
from .ir.relax.op import call_tir_inplace as call_tir_inplace
from .ir.relax.ty import *  # noqa: F403 - TVM's Relax types (ShapeType, TensorType...)
from .ir.relax.ty import __all__ as _type_names

# isort: split
from . import _module_alias
from . import transform as transform
from .backend.build import build as build
from .transform.pipeline import get_pipeline as get_pipeline
from .vm import ExecBuilder as ExecBuilder
from .vm import Executable as Executable
from .vm import VirtualMachine as VirtualMachine

if TYPE_CHECKING:
    from . import frontend as frontend

__all__ = sorted(
    {
        *_ir_names,
        *_type_names,
        "ExecBuilder",
        "call_dps_packed",
        "call_pure_packed",
        "call_tir",
        "call_tir_inplace",
        "Executable",
        "VirtualMachine",
        "build",
        "frontend",
        "get_pipeline",
        "get_shape_of",
        "op",
        "transform",
    }
)

#: A package for the import system, so that ``import relaxvm.relax.<name>`` reaches
#: :mod:`._module_alias` (the list stays empty: nothing is ever loaded from a directory).
__path__: list[str] = []

#: ``relaxvm.relax.<first>`` -> the real package, for names outside the IR package.
_OUTSIDE_IR = {
    "backend": "relaxvm.backend",
    "frontend": "relaxvm.frontend",
    "testing": "relaxvm.testing.relax",
    "transform": "relaxvm.transform",
}

# Every other ``relaxvm.relax.<name>`` is the IR's own ``relaxvm.ir.relax.<name>``.
_module_alias.install(
    {
        f"{__name__}.": "relaxvm.ir.relax.",
        **{f"{__name__}.{name}": real for name, real in _OUTSIDE_IR.items()},
    }
)


def get_shape_of(expr: Expr) -> Expr:
    """The shape of a normalized tensor expression, as TVM's ``relax.get_shape_of``.

    Parameters
    ----------
    expr : Expr
        A Relax expression whose struct info is already set (normalize it with a
        :class:`BlockBuilder` first) and is a :class:`TensorStructInfo`.

    Returns
    -------
    Expr
        The shape held by the struct info (a :class:`ShapeExpr`, or the shape Var it names)
        when it is known; otherwise a fresh ``R.shape_of(expr)`` call whose struct info is a
        :class:`ShapeStructInfo` of the tensor's rank, so the shape is read at run time.

    Raises
    ------
    ValueError
        If ``expr`` has no struct info yet (it was never normalized).
    TypeError
        If ``expr`` is not a Relax expression or its struct info is not a TensorStructInfo.
    """
    if not isinstance(expr, Expr):
        raise _VMTypeError(f"get_shape_of: expected a Relax expression, got {type(expr).__name__}")
    info = expr.struct_info
    if info is None:
        raise _VMValueError(
            f"get_shape_of: {type(expr).__name__} has no struct info; normalize it first "
            "(BlockBuilder.normalize)"
        )
    if not isinstance(info, TensorStructInfo):
        raise _VMTypeError(
            f"get_shape_of: expected an expression with TensorStructInfo, got {info}"
        )
    if info.shape is not None:
        return info.shape
    # Unknown extents: the shape is only known at run time, as in TVM's GetShapeOf.
    call = op.shape_of(expr)
    update_struct_info(call, ShapeStructInfo(ndim=info.ndim))
    return call


def __getattr__(name: str) -> Any:
    if name in ("frontend", "testing"):
        module = importlib.import_module(_OUTSIDE_IR[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module 'relaxvm.relax' has no attribute '{name}'", name=name)
