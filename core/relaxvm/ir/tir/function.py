"""``PrimFunc``: a TIR kernel with buffer parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import VMTypeError, VMValueError
from .._scalar import is_int_dtype
from ..expr import Var
from .buffer import Buffer
from .stmt import Stmt

__all__ = ["PrimFunc"]


class PrimFunc:
    """A TIR function (TVM's ``tir.PrimFunc``), called in destination-passing style.

    Parameters
    ----------
    params : sequence of Var or Buffer
        Handle variables (``Var(name, "handle")``) for buffers, or integer scalar variables.
        A :class:`Buffer` given directly becomes a fresh handle parameter mapped to it.
    body : Stmt
    buffer_map : mapping of Var to Buffer, optional
        The buffer each handle parameter points to. Symbolic variables in these buffers'
        shapes (``Buffer("A", (n, 4))``) are bound from the arguments' shapes when called.
    attrs : mapping, optional
        Function attributes, such as ``{"global_symbol": "main"}``.
    """

    __slots__ = ("attrs", "body", "buffer_map", "params")
    params: tuple[Var, ...]
    body: Stmt
    buffer_map: dict[Var, Buffer]
    attrs: dict[str, Any]

    def __init__(
        self,
        params: Sequence[Var | Buffer],
        body: Stmt,
        buffer_map: Mapping[Var, Buffer] | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        mapping = dict(buffer_map or {})
        handles: list[Var] = []
        for position, param in enumerate(params):
            if isinstance(param, Buffer):
                handle = Var(f"{param.name}_handle", "handle")
                mapping[handle] = param
                param = handle
            if not isinstance(param, Var):
                raise VMTypeError(
                    f"PrimFunc: parameter {position} must be a Var or a Buffer, got {param!r}"
                )
            # A handle without a buffer is opaque (TVM allows it); lower_blocks binds it or
            # rejects it before a kernel runs.
            is_handle = str(param.dtype) == "handle"
            if not is_handle and not is_int_dtype(param.dtype):
                raise VMTypeError(
                    f"PrimFunc: scalar parameter {param.name!r} must be an integer, "
                    f"got {param.dtype}"
                )
            if param in handles:
                raise VMValueError(f"PrimFunc: parameter {param.name!r} appears twice")
            handles.append(param)
        for handle, buffer in mapping.items():
            if handle not in handles:
                raise VMValueError(
                    f"PrimFunc: buffer_map names {handle!r}, which is not a parameter"
                )
            if not isinstance(buffer, Buffer):
                raise VMTypeError(f"PrimFunc: buffer_map[{handle.name}] must be a Buffer")
        if not isinstance(body, Stmt):
            raise VMTypeError(f"PrimFunc: body must be a Stmt, got {type(body).__name__}")
        object.__setattr__(self, "params", tuple(handles))
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "buffer_map", mapping)
        object.__setattr__(self, "attrs", dict(attrs or {}))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("PrimFunc is immutable; use with_body / with_attr")

    @property
    def name(self) -> str:
        """The ``global_symbol`` attribute, or ``"main"``."""
        return str(self.attrs.get("global_symbol", "main"))

    @property
    def struct_info(self) -> Any:
        """The Relax-level signature: an opaque, pure callable.

        An IRModule annotates each GlobalVar with its function's signature; Relax calls a
        PrimFunc only through ``R.call_tir``, which declares the outputs itself.
        """
        from ..relax.struct_info import FuncStructInfo  # relax builds on tir, not the reverse

        return FuncStructInfo.opaque_func(purity=True)

    def with_attr(self, key: str, value: Any) -> PrimFunc:
        """A copy with one attribute set."""
        return PrimFunc(self.params, self.body, self.buffer_map, {**self.attrs, key: value})

    def with_body(self, body: Stmt) -> PrimFunc:
        """A copy with a new body."""
        return PrimFunc(self.params, body, self.buffer_map, self.attrs)

    def script(self, **options: Any) -> str:
        """``@T.prim_func`` TVMScript text (``relaxvm.script.from_source`` reads it back).

        ``options`` are TVM's printer options (see :mod:`relaxvm.ir.relax.text_options`)."""
        from ..relax.text_options import apply_layout, script_options
        from .script import prim_func_to_str  # the printer imports this module

        return apply_layout(prim_func_to_str(self), script_options("PrimFunc", **options))

    def __str__(self) -> str:
        from .script import prim_func_to_str

        return prim_func_to_str(self)

    def __repr__(self) -> str:
        return f"PrimFunc({self.name}, params=[{', '.join(p.name for p in self.params)}])"

    def __call__(self, *args: Any) -> None:
        """Run with the reference interpreter (:func:`relaxvm.ir.tir.run_prim_func`)."""
        from .interpreter import run_prim_func

        run_prim_func(self, *args)
