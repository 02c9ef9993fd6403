"""TVM's remaining ``relax.BlockBuilder`` spellings, mixed into :class:`BlockBuilder`.

``call_te`` / ``emit_te`` (the ``R.call_tir`` of a TE function), TVM's fresh variable names
(``lv``, ``lv1``...), the private block API (``_begin_dataflow_block``...),
``emit_normalized`` (append a binding that is already in normal form), ``begin_scope``/``end_scope`` (the variable scopes
TVM's normalizer keeps for mutators that rebuild functions binding by binding) and
``finalize`` (the finished module). They live here so that the builder module stays about one
concept: building and normalizing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .block import Binding, BindingBlock, DataflowBlock, MatchCast, VarBinding
from .expr import Call, DataflowVar, Var

if TYPE_CHECKING:
    from .module import IRModule

__all__ = ["TVMBuilderMethods"]

# The builders whose ``function()`` scope is open, innermost last, per thread (TVM keeps one
# stack per process; per thread lets builders on different threads not see each other).
_ACTIVE = threading.local()


def _active_stack() -> list[Any]:
    stack: list[Any] | None = getattr(_ACTIVE, "stack", None)
    if stack is None:
        stack = _ACTIVE.stack = []
    return stack


class TVMBuilderMethods:
    """The TVM-named methods of :class:`~relaxvm.ir.relax.block_builder.BlockBuilder`.

    A mixin: it relies on the builder's state (``_bindings``, ``_in_dataflow``, ``_scopes``)
    and helpers (``_require_function``, ``_new_var``...), which the builder defines.
    """

    _bindings: list[Any]
    _in_dataflow: bool
    _scopes: list[list[Var]]
    _block_stack: list[tuple[list[Any], bool]]
    _name_counts: dict[str, int]

    # Provided by BlockBuilder; declared for the type checker.
    if TYPE_CHECKING:

        def _require_function(self, method: str) -> Any: ...

        def get(self) -> IRModule: ...

        def normalize(self, expr: Any) -> Any: ...

        def emit(self, expr: Any, name_hint: str = "") -> Var: ...

    def call_te(
        self,
        te_func: Callable[..., Any],
        *args: Any,
        primfunc_name_hint: str | None = None,
        primfunc_attrs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Call:
        """The ``R.call_tir`` of a TE function of Relax tensors, without emitting it.

        As TVM's ``BlockBuilder.call_te``: the PrimFunc is added to the module (once, under a
        unique name) and the call is returned, for the caller to emit, return or nest.

        Parameters
        ----------
        te_func : callable
            A function of ``te.Tensor`` s (and other arguments) returning the output tensor(s).
        *args, **kwargs
            Its arguments; Relax tensors (also inside lists) become ``te.placeholder`` s.
        primfunc_name_hint : str, optional
            The PrimFunc's name (default: from ``te_func``).
        primfunc_attrs : mapping, optional
            Extra attributes of the PrimFunc (which is private, as in TVM).

        Returns
        -------
        Call
            ``R.call_tir(gvar, (tensors...), out_sinfo)``, normalized (its struct info is
            set; its arguments are already leaves, so nothing is bound).
        """
        from ._emit_te import build_call_tir

        call = build_call_tir(
            self,  # type: ignore[arg-type]
            te_func,
            args,
            kwargs,
            primfunc_name_hint,
            primfunc_attrs,
        )
        normalized = self.normalize(call)
        assert isinstance(normalized, Call)  # normalizing a Call gives a Call
        return normalized

    def emit_te(
        self,
        te_func: Callable[..., Any],
        *args: Any,
        primfunc_name_hint: str | None = None,
        name_hint: str = "",
        primfunc_attrs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Var:
        """Build a PrimFunc from a TE function of Relax tensors and emit ``R.call_tir`` of it.

        Relax tensor arguments (anywhere in ``args``/``kwargs``, also inside lists) become
        ``te.placeholder`` s of their shapes; the TE function returns the output tensor(s).
        The PrimFunc is added once under a unique name (``add``, ``add1``...), private (no
        ``global_symbol``) as in TVM, with ``primfunc_attrs`` added to its attributes.
        """
        from ._emit_te import build_call_tir

        self._require_function("emit_te")
        call = build_call_tir(
            self,  # type: ignore[arg-type]
            te_func,
            args,
            kwargs,
            primfunc_name_hint,
            primfunc_attrs,
        )
        return self.emit(call, name_hint)

    @staticmethod
    def current() -> Any:
        """The builder whose ``function()`` scope is open on this thread (innermost), or None.

        TVM's ``BlockBuilder.current()``, which helpers such as ``relax.testing.nn`` use to
        emit into the function being built without being passed the builder.
        """
        stack = _active_stack()
        return stack[-1] if stack else None

    def _enter_current(self) -> None:
        _active_stack().append(self)

    def _exit_current(self) -> None:
        stack = _active_stack()
        # Remove this builder's innermost entry (scopes close in order, but be robust).
        for index in range(len(stack) - 1, -1, -1):
            if stack[index] is self:
                del stack[index]
                break

    def get_unique_name(self, name_prefix: str) -> str:
        """A variable name not yet handed out by this builder: ``name_prefix``, then
        ``name_prefix1``... (TVM's ``BlockBuilder.get_unique_name``)."""
        return self._fresh_name(name_prefix)

    def _fresh_name(self, prefix: str) -> str:
        """``prefix``, then ``prefix1``, ``prefix2``... skipping names already used, as TVM's
        builder names (one name table for the whole builder, across functions)."""
        if prefix not in self._name_counts:
            self._name_counts[prefix] = 0
            return prefix
        while True:
            self._name_counts[prefix] += 1
            name = f"{prefix}{self._name_counts[prefix]}"
            if name not in self._name_counts:
                self._name_counts[name] = 0
                return name

    def emit_normalized(self, binding: Binding) -> None:
        """Append ``binding`` (a ``VarBinding`` or ``MatchCast`` already in normal form) to the
        current block as it is, as TVM's ``BlockBuilder.emit_normalized``.

        The variable kind must suit the block: a ``DataflowVar`` only inside a dataflow block.

        Raises
        ------
        BlockBuilderError
            Outside a function, for a non-binding, or for a DataflowVar outside a dataflow
            block.
        """
        from .block_builder import BlockBuilderError

        func = self._require_function("emit_normalized")
        if not isinstance(binding, (VarBinding, MatchCast)):
            raise BlockBuilderError(
                "BlockBuilder.emit_normalized: expected a VarBinding or MatchCast, got "
                f"{type(binding).__name__}"
            )
        if isinstance(binding.var, DataflowVar) and not self._in_dataflow:
            raise BlockBuilderError(
                f"BlockBuilder.emit_normalized: dataflow variable '{binding.var.name_hint}' "
                f"bound outside a dataflow block of function '{func.name}'"
            )
        if binding.var.struct_info is None:
            raise BlockBuilderError(
                f"BlockBuilder.emit_normalized: variable '{binding.var.name_hint}' has no "
                "struct info (normalize the value first)"
            )
        self._bindings.append(binding)

    def _begin_dataflow_block(self) -> None:
        """Start a dataflow block of its own, as TVM's private ``_begin_dataflow_block``;
        :meth:`_end_block` returns it. It may be opened outside a function (to build a block
        by itself) and nests: the block being filled resumes after ``_end_block``."""
        self._block_stack.append((self._bindings, self._in_dataflow))
        self._bindings, self._in_dataflow = [], True

    def _begin_binding_block(self) -> None:
        """Start a plain binding block of its own, as TVM's ``_begin_binding_block``."""
        self._block_stack.append((self._bindings, self._in_dataflow))
        self._bindings, self._in_dataflow = [], False

    def _end_block(self) -> BindingBlock:
        """End the block started by the matching ``_begin_*_block`` and return it (empty
        blocks included); the enclosing block, if any, resumes."""
        from .block_builder import BlockBuilderError

        if not self._block_stack:
            raise BlockBuilderError(
                "BlockBuilder._end_block: no block is open (call _begin_dataflow_block or "
                "_begin_binding_block first)"
            )
        block = (DataflowBlock if self._in_dataflow else BindingBlock)(self._bindings)
        self._bindings, self._in_dataflow = self._block_stack.pop()
        return block

    def begin_scope(self, params: Sequence[Var] | None = None) -> None:
        """Open a variable scope in which ``params`` are visible, as TVM's
        ``BlockBuilder.begin_scope``; close it with :meth:`end_scope`.

        relaxvm's normalizer needs no scope to look variables up; the scopes are kept so that
        code written for TVM (mutators that rebuild a function) runs unchanged and unbalanced
        scopes are caught.
        """
        from .block_builder import BlockBuilderError

        listed = list(params or [])
        for index, param in enumerate(listed):
            if not isinstance(param, Var):
                raise BlockBuilderError(
                    f"BlockBuilder.begin_scope: params[{index}] must be a relax Var, got "
                    f"{type(param).__name__}"
                )
        self._scopes.append(listed)

    def end_scope(self) -> None:
        """Close the scope opened by the matching :meth:`begin_scope`."""
        from .block_builder import BlockBuilderError

        if not self._scopes:
            raise BlockBuilderError("BlockBuilder.end_scope: no scope is open (call begin_scope)")
        self._scopes.pop()

    def scope_params(self) -> list[Var]:
        """The parameters visible in the open scopes, outermost first."""
        return [param for scope in self._scopes for param in scope]

    def finalize(self) -> IRModule:
        """The finished module, as TVM's ``BlockBuilder.finalize``.

        Raises
        ------
        BlockBuilderError
            While a function is still being built.
        """
        return self.get()
