"""Helpers shared by the builtins' error paths.

Nothing here runs on a builtin's success path: the builtins test their inputs with cheap
``type(x) is`` checks and only call these helpers to word an error.
"""

from __future__ import annotations

from typing import Any

from relaxvm.runtime import DataType, Device, Shape, Storage, Tensor
from relaxvm.vm.closure import VMClosure

__all__ = ["error_prefix", "type_name"]

# Names in the vocabulary of Relax (a Python ``tuple`` is a Relax Tuple), so that messages
# read the same as the annotations they are checking.
_TYPE_NAMES: dict[type, str] = {
    Tensor: "Tensor",
    Shape: "Shape",
    tuple: "Tuple",
    list: "Tuple (list)",
    VMClosure: "VMClosure",
    Storage: "Storage",
    DataType: "DataType",
    Device: "Device",
    type(None): "None",
}


def type_name(value: Any) -> str:
    """How an error message names the kind of ``value`` (``Tensor``, ``Shape``, ``int`` ...)."""
    for cls in type(value).__mro__:
        name = _TYPE_NAMES.get(cls)
        if name is not None:
            return name
    if callable(value):
        return f"Function ({type(value).__name__})"
    return type(value).__name__


def error_prefix(err_ctx: Any, builtin_name: str) -> str:
    """The text that starts an error message.

    The compiler's ``err_ctx`` (``"ErrorContext(fn=main, loc=param[0], ...) "``) says where in
    the program the check came from, which is what a user needs; without one, the builtin's
    own name is the most useful thing to say.

    Parameters
    ----------
    err_ctx : str or None
        The optional trailing argument of the checking builtins.
    builtin_name : str
        The short builtin name, used when ``err_ctx`` is absent.
    """
    if err_ctx is None or err_ctx == "":
        return f"vm.builtin.{builtin_name}: "
    text = str(err_ctx)
    # TVM's contexts end with a space; tolerate hand-written ones that do not.
    return text if text.endswith(" ") else text + " "
