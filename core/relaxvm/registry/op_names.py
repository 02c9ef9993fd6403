"""Checking that a legalization names a Relax op that exists, with a did-you-mean.

The op table lives in the IR (:mod:`relaxvm.ir.relax.op`), which the registry must not import:
the VM loads plugins (and so runs every ``relaxvm_register_legalizations`` hook) without the
IR. The check therefore runs in two places:

* **at registration**, when the op table is already imported (a compiler process, a notebook
  that built IR first): :func:`loaded_op_names` returns it without importing anything;
* **before the first use** otherwise: ``LegalizeOps`` calls :func:`check_legalization_table`,
  which imports the op table (the compiler has it anyway) and refuses every registration of an
  unknown op, naming the plugin (or user code) that made it.

A process that never compiles (it only runs executables) never needs the check: nothing ever
looks a legalization up there.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Collection

from ..errors import RegistryError

__all__ = [
    "UnknownOpError",
    "all_op_names",
    "check_legalization_table",
    "close_op_names",
    "describe_source",
    "loaded_op_names",
    "unknown_op_message",
]

#: The module holding the op table; only read from ``sys.modules`` (never imported here).
_OP_PACKAGE = "relaxvm.ir.relax.op"


class UnknownOpError(RegistryError):
    """A legalization was registered for an op name that no one registered as a Relax op."""


def loaded_op_names() -> Collection[str] | None:
    """The registered Relax op names if the op table is imported already, else ``None``.

    Never imports the IR. A package still being imported (its ``__all__``, assigned last, is
    not there yet) counts as not imported: its table may be incomplete.
    """
    package = sys.modules.get(_OP_PACKAGE)
    if package is None or not hasattr(package, "__all__"):
        return None
    return frozenset(package.list_ops())


def all_op_names() -> Collection[str]:
    """The registered Relax op names, importing the op table if needed (compiler side)."""
    from ..ir.relax.op import list_ops

    return frozenset(list_ops())


def close_op_names(op_name: str, known: Collection[str], n: int = 3) -> list[str]:
    """The registered op names closest to ``op_name``, best first.

    The last component is compared as well as the whole name, so that a misspelt op in the
    wrong namespace (``relax.sofmax``) still finds ``relax.nn.softmax``.
    """
    leaf = op_name.rsplit(".", 1)[-1]
    scored = []
    for name in known:
        whole = difflib.SequenceMatcher(None, op_name, name).ratio()
        last = difflib.SequenceMatcher(None, leaf, name.rsplit(".", 1)[-1]).ratio()
        score = max(whole, last)
        if score >= 0.75:
            scored.append((-score, -whole, name))
    return [name for _, _, name in sorted(scored)[:n]]


def unknown_op_message(op_name: str, known: Collection[str]) -> str:
    """``unknown op 'relax.sofmax'; did you mean 'relax.nn.softmax'? (...)``: why a
    legalization of ``op_name`` is refused, to follow "registered a legalization for"."""
    close = close_op_names(op_name, known)
    hint = "; did you mean " + " or ".join(repr(name) for name in close) + "?" if close else ""
    return (
        f"unknown op {op_name!r}{hint} (a legalization must name a registered Relax op: "
        "relaxvm.ir.relax.op.list_ops() lists them, and relaxvm.ir.relax.op.register_op adds "
        "your own)"
    )


def describe_source(source: str) -> str:
    """A registration's source as a message names it: ``plugin 'x'`` or ``user code (m)``."""
    if source.startswith("user:"):
        return f"user code ({source[len('user:') :]})"
    return source


def check_legalization_table() -> None:
    """Refuse the registered legalizations whose op is unknown (before they are used).

    Raises
    ------
    UnknownOpError
        A legalization names an op that is not registered; the message names who registered
        it (the plugin, or user code) and the closest op names.
    """
    from . import extensions

    extensions._ensure_plugins()
    if not extensions._legalizations:
        return
    known = all_op_names()
    for (op_name, target), (_, source) in list(extensions._legalizations.items()):
        if op_name in known:
            continue
        where = f" for target {target!r}" if target else ""
        raise UnknownOpError(
            f"{describe_source(source)} registered a legalization{where} for "
            f"{unknown_op_message(op_name, known)}"
        )
