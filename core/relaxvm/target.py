"""``Target``: what to compile for (TVM's ``tvm.target.Target``), over registered kinds.

A target is a kind (``llvm``, ``cuda``; registered by target plugins through
``relaxvm_register_targets``) plus attributes (``mcpu``, ``mattr``, ``arch``...) and an optional
host target. It is built from a string in TVM's spelling (``"llvm -mcpu=skylake
-mattr=+avx2,+fma"``), a dict (``{"kind": "llvm", "mcpu": "skylake"}``) or another Target.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from .errors import RegistryError
from .registry.extensions import TargetKind, get_target_kind

__all__ = ["Target", "TargetError", "TargetKind"]


class TargetError(RegistryError):
    """A target string, dict or attribute is malformed."""


#: Characters that make shlex's splitting differ from splitting at spaces.
_QUOTING = frozenset("'\"\\")


def _parse_string(text: str) -> tuple[str, dict[str, Any]]:
    if text.isascii() and text.isprintable() and not _QUOTING & set(text):
        words = text.split()  # what shlex gives for plain text (spaces only), at no cost
    else:
        try:
            words = shlex.split(text)
        except ValueError as err:
            raise TargetError(f"Target: cannot parse {text!r}: {err}") from None
    if not words:
        raise TargetError("Target: empty target string")
    kind, attrs = words[0], {}
    for word in words[1:]:
        if not word.startswith("-") or word == "-":
            raise TargetError(
                f"Target: in {text!r}, expected attributes as -key=value, got {word!r}"
            )
        key, sep, value = word.lstrip("-").partition("=")
        attrs[key] = value if sep else True
    return kind, attrs


class Target:
    """A compilation target.

    Parameters
    ----------
    target : str, dict or Target
        ``"llvm"``, ``"llvm -mcpu=skylake -mattr=+avx2"``, ``{"kind": "cuda", "arch":
        "sm_80"}``...
    host : str, dict or Target, optional
        The host target (for device targets such as ``cuda``); defaults to ``llvm`` for
        non-CPU kinds when that kind is registered.

    Attributes
    ----------
    kind : TargetKind
        The registered kind.
    attrs : dict
        The kind's defaults overridden by the given attributes.
    host : Target or None

    Examples
    --------
    A target is also a scope, as in TVM: inside ``with Target("llvm"):``,
    :meth:`Target.current` returns it and ``relaxvm.compile(mod)`` compiles for it.

    >>> with Target("llvm"):
    ...     Target.current().kind_name
    'llvm'
    >>> Target.current() is None
    True
    """

    __slots__ = ("attrs", "host", "kind")

    def __init__(self, target: str | Mapping[str, Any] | Target, host: Any = None) -> None:
        if isinstance(target, Target):
            self.kind: TargetKind = target.kind
            self.attrs: dict[str, Any] = dict(target.attrs)
            self.host: Target | None = target.host if host is None else Target(host)
            return
        if isinstance(target, str):
            kind_name, given = _parse_string(target)
        elif isinstance(target, Mapping):
            given = dict(target)
            kind_name = given.pop("kind", None)
            if not isinstance(kind_name, str):
                raise TargetError(f"Target: a dict target needs a 'kind' string, got {target!r}")
            given_host = given.pop("host", None)
            host = host if host is not None else given_host
        else:
            raise TargetError(
                f"Target: expected a string, dict or Target, got {type(target).__name__}"
            )
        self.kind = get_target_kind(kind_name)
        defaults = dict(self.kind.default_attrs() if self.kind.default_attrs else {})
        defaults.update(given)
        self.attrs = defaults
        self.host = Target(host) if host is not None else None

    # ---- scoping (TVM's ``with target:`` and ``Target.current()``) -------------------------
    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The target of the innermost enclosing ``with Target(...):`` block of this thread.

        Parameters
        ----------
        allow_none : bool
            With ``True`` (the default, as in TVM), return ``None`` outside every block;
            with ``False``, raise instead.

        Returns
        -------
        Target or None

        Raises
        ------
        TargetError
            ``allow_none`` is false and no target scope is active.
        """
        stack = _scope_stack()
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError(
                "Target.current: no target is in scope; enter one with `with Target(...):` "
                "or pass allow_none=True"
            )
        return None

    def __enter__(self) -> Target:
        _scope_stack().append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stack = _scope_stack()
        # Scopes nest, so the innermost one is this target (the same object, not merely an
        # equal one); anything else means the blocks were entered and exited out of order.
        if not stack or stack[-1] is not self:
            raise TargetError(f"Target.__exit__: {self!r} is not the innermost target scope")
        stack.pop()

    @property
    def kind_name(self) -> str:
        """The kind's name, e.g. ``"llvm"``."""
        return self.kind.name

    @property
    def device(self) -> str:
        """The runtime device kind the kernels run on (``"cpu"``, ``"cuda"``)."""
        return self.kind.device

    def get(self, key: str, default: Any = None) -> Any:
        """Attribute ``key`` or ``default``."""
        return self.attrs.get(key, default)

    def __str__(self) -> str:
        parts = [self.kind.name]
        for key, value in sorted(self.attrs.items()):
            parts.append(f"-{key}" if value is True else f"-{key}={value}")
        return " ".join(shlex.quote(part) for part in parts)

    def __repr__(self) -> str:
        host = f", host={self.host}" if self.host is not None else ""
        return f"Target({str(self)!r}{host})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Target)
            and self.kind.name == other.kind.name
            and self.attrs == other.attrs
            and self.host == other.host
        )

    def __hash__(self) -> int:
        return hash(str(self))


#: Each thread has its own stack of ``with Target(...):`` scopes, as TVM's thread-local one.
_scopes = threading.local()


def _scope_stack() -> list[Target]:
    stack: list[Target] | None = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    return stack
