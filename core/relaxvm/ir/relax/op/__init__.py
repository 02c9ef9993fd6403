"""Relax operators: builders in TVM's spelling and StructInfo inference, keyed by op name.

``op.add(x, y)`` returns a :class:`~relaxvm.ir.relax.Call` of ``Op.get("relax.add")`` and
does not infer anything; :func:`infer_struct_info` (what the BlockBuilder normalizer calls)
derives the result's StructInfo from the arguments' struct info and the call's attributes.
See ``docs/ops.md`` for the list of ops and how to add one.
"""

from __future__ import annotations

from . import image, memory, nn
from .create import *  # noqa: F403
from .create import __all__ as _create_all
from .datadep import *  # noqa: F403
from .datadep import __all__ as _datadep_all
from .elementwise import *  # noqa: F403
from .elementwise import __all__ as _elementwise_all
from .index import *  # noqa: F403
from .index import __all__ as _index_all
from .layout import *  # noqa: F403
from .layout import __all__ as _layout_all
from .linalg import *  # noqa: F403
from .linalg import __all__ as _linalg_all
from .manipulate import *  # noqa: F403
from .manipulate import __all__ as _manipulate_all
from .memory import builtin, call_builtin_with_ctx, vm
from .qdq import *  # noqa: F403
from .qdq import __all__ as _qdq_all
from .reduction import *  # noqa: F403
from .reduction import __all__ as _reduction_all
from .registry import (
    InferContext,
    OpError,
    OpInfo,
    OpTypeError,
    get_op_info,
    infer_struct_info,
    list_ops,
    register_op,
)
from .sort import *  # noqa: F403
from .sort import __all__ as _sort_all
from .structural import *  # noqa: F403
from .structural import __all__ as _structural_all
from .tvm_extra_a import *  # noqa: F403
from .tvm_extra_a import __all__ as _tvm_extra_a_all
from .tvm_extra_b import *  # noqa: F403
from .tvm_extra_b import __all__ as _tvm_extra_b_all
from .tvm_extra_c import *  # noqa: F403
from .tvm_extra_c import __all__ as _tvm_extra_c_all

#: Shorter spelling for tests and interactive use.
infer = infer_struct_info

__all__ = [
    "InferContext",
    "OpError",
    "OpInfo",
    "OpTypeError",
    "get_op_info",
    "infer",
    "infer_struct_info",
    "builtin",
    "call_builtin_with_ctx",
    "list_ops",
    "image",
    "memory",
    "nn",
    "vm",
    "register_op",
    *_create_all,
    *_datadep_all,
    *_qdq_all,
    *_elementwise_all,
    *_index_all,
    *_layout_all,
    *_sort_all,
    *_linalg_all,
    *_manipulate_all,
    *_reduction_all,
    *_structural_all,
    *_tvm_extra_b_all,
    *_tvm_extra_a_all,
    *_tvm_extra_c_all,
]
