"""The names of the ops this package legalizes, without importing the IR.

The plugin loader calls every hook when relaxvm first looks up any registered name, for
instance when a VM starts. So the legalization hook must stay light. It registers thin
wrappers that import the family modules, and the IR with them, the first time a legalization
actually runs. A test checks that this list and the family modules agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._names_index import NAMES as _INDEX
from ._names_math import NAMES as _MATH
from ._names_nn import NAMES as _NN
from ._names_shape import NAMES as _SHAPE
from ._names_sort import NAMES as _SORT
from ._names_tvm_extra_a import NAMES as _TVM_EXTRA_A
from ._names_tvm_extra_b import NAMES as _TVM_EXTRA_B
from ._names_tvm_extra_c import NAMES as _TVM_EXTRA_C

__all__ = ["LEGALIZED_OPS", "lazy_legalization"]

_UNARY = "abs ceil erf exp floor log negative round rsqrt sigmoid sqrt tanh logical_not"
_BINARY = (
    "add subtract multiply divide floor_divide power maximum minimum equal not_equal less "
    "less_equal greater greater_equal logical_and logical_or logical_xor"
)
_OTHER = (
    "astype clip where nn.relu nn.gelu nn.silu "
    "arange full full_like ones ones_like zeros zeros_like "
    "sum mean max min prod variance argmax argmin cumsum nn.softmax nn.log_softmax "
    "matmul linear "
    "reshape flatten expand_dims squeeze permute_dims broadcast_to concat split strided_slice "
    "take "
    "nn.layer_norm nn.rms_norm nn.batch_norm nn.conv2d nn.max_pool2d nn.avg_pool2d "
    "nn.adaptive_avg_pool2d "
    "print assert_op"
)

#: Every op with a generic legalization here, sorted.
LEGALIZED_OPS: tuple[str, ...] = tuple(
    sorted(
        f"relax.{name}"
        for name in (
            f"{_UNARY} {_BINARY} {_OTHER} {_MATH} {_SHAPE} {_INDEX} {_NN} {_SORT} {_TVM_EXTRA_A} "
            f"{_TVM_EXTRA_B} {_TVM_EXTRA_C}"
        ).split()
    )
)


def lazy_legalization(op_name: str) -> Callable[[Any, Any], Any]:
    """A legalization of ``op_name`` that loads the real one on its first call."""

    def legalize(bb: Any, call: Any) -> Any:
        from .legalizations import all_legalizations

        return all_legalizations()[op_name](bb, call)

    legalize.__name__ = legalize.__qualname__ = f"legalize[{op_name}]"
    legalize.__doc__ = f"The relaxvm_ops legalization of {op_name} (loaded on first use)."
    return legalize
