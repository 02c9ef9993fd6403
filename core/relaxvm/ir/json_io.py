"""Saving IR nodes as JSON text and loading them back (TVM's ``tvm.ir.save_json`` /
``tvm.ir.load_json``).

:func:`save_json` writes any IR node (struct info, ``PrimExpr`` s and TIR variables, Relax
expressions, bindings and functions, TIR statements and ``PrimFunc`` s, ``IRModule`` s) and
:func:`load_json` rebuilds a structurally equal node. The format is relaxvm's own, not TVM's
(documented in ``docs/ir.md``)::

    {"format": "relaxvm.ir.json", "version": 1,
     "root": {"$node": 2},
     "nodes": [{"type": "tir.Var", "fields": {"name": "n", "dtype": "int64"}},
               {"type": "relax.ShapeStructInfo", "fields": {"values": [{"$node": 0}], "ndim": 1}},
               ...]}

Each node is written once in ``nodes`` and referred to by its position, so an object used in
several places (a variable, a shared sub-expression) is one object again after loading. A
node only refers to nodes before it; the root may refer to any. Field values are JSON
``null``, booleans, integers, finite numbers, strings and lists, plus single-key objects:
``{"$node": i}``, ``{"$tuple": [...]}``, ``{"$dict": [[key, value], ...]}`` (keys may be
nodes, as a ``PrimFunc``'s ``buffer_map`` has), ``{"$dtype": "float32"}`` and
``{"$float": "nan" | "inf" | "-inf"}``. Constants hold their elements as base64 bytes
(little-endian) with their dtype and shape. Source spans are not saved.

Loading treats the document as data: type names are looked up in a fixed table
(:data:`relaxvm.ir._json_nodes.NODE_KINDS`), nodes are rebuilt through their constructors,
which check their arguments, and nothing is imported, evaluated or unpickled. Anything wrong
raises :class:`IRJSONError` naming the place, such as ``nodes[3].fields.body``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import VMValueError
from ..runtime.dtype import DataType
from ._json_nodes import NODE_KINDS, kind_of

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "IRJSONError", "load_json", "save_json"]

#: The ``format`` entry of every document.
FORMAT_NAME = "relaxvm.ir.json"
#: The ``version`` this module writes; :func:`load_json` reads this version only.
FORMAT_VERSION = 1

_TAGS = ("$node", "$tuple", "$dict", "$dtype", "$float")


class IRJSONError(VMValueError):
    """An IR JSON document is malformed, or a value cannot be saved (a ``ValueError``).

    Attributes
    ----------
    where : str
        The place in the document (``nodes[3].fields.body``) or, when saving, in the node
        (``<root>.body.attrs["x"]``).
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


# ---- saving ---------------------------------------------------------------------------------
def save_json(node: Any) -> str:
    """Serialize an IR node to JSON text (TVM's ``tvm.ir.save_json``).

    Parameters
    ----------
    node : IR node
        Struct info, a ``PrimExpr``, a Relax expression, binding or function, a TIR statement
        or ``PrimFunc``, an ``IRModule``; or a list/tuple/dict of them.

    Returns
    -------
    str
        The document; :func:`load_json` reads it back.

    Raises
    ------
    IRJSONError
        ``node`` holds a value of a type the format cannot hold; the message names where.

    Examples
    --------
    >>> from relaxvm.ir import relax as rx, load_json, save_json, structural_equal
    >>> sinfo = rx.TensorStructInfo([2, 3], "float32")
    >>> structural_equal(load_json(save_json(sinfo)), sinfo)
    True
    """
    writer = _Writer()
    try:
        root = writer.value(node, "<root>")
    except RecursionError:
        raise IRJSONError("<root>", "the IR is nested too deeply to save") from None
    document = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "root": root,
        "nodes": writer.nodes,
    }
    return json.dumps(document, allow_nan=False, separators=(",", ":"))


class _Writer:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self._index: dict[int, int] = {}  # id(node) -> its position in nodes
        self._alive: list[Any] = []  # keeps ids unique while saving

    def value(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and type(value) is int:
            return value
        if isinstance(value, float) and type(value) is float:
            return _float(value)
        if isinstance(value, DataType):
            return {"$dtype": str(value)}
        kind = kind_of(value)
        if kind is not None:
            return {"$node": self.node(kind, value, where)}
        if isinstance(value, list):
            return [self.value(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, tuple):
            return {"$tuple": [self.value(item, f"{where}[{i}]") for i, item in enumerate(value)]}
        if isinstance(value, Mapping):
            return {"$dict": [self._item(key, item, where) for key, item in value.items()]}
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return self.value(value.item(), where)  # numpy scalars in attributes
        if isinstance(value, int):  # an IntEnum (a loop kind): its number
            return int(value)
        raise IRJSONError(where, f"cannot save a value of type {type(value).__name__}: {value!r}")

    def _item(self, key: Any, item: Any, where: str) -> list[Any]:
        label = f'{where}["{key}"]' if isinstance(key, str) else f"{where}[{key!r}]"
        return [self.value(key, f"{label} (key)"), self.value(item, label)]

    def node(self, kind: str, node: Any, where: str) -> int:
        found = self._index.get(id(node))
        if found is not None:
            return found
        fields = NODE_KINDS[kind].encode(node)
        encoded = {name: self.value(v, f"{where}.{name}") for name, v in fields.items()}
        index = len(self.nodes)
        self.nodes.append({"type": kind, "fields": encoded})
        self._index[id(node)] = index
        self._alive.append(node)
        return index


def _float(value: float) -> Any:
    if math.isnan(value):
        return {"$float": "nan"}
    if math.isinf(value):
        return {"$float": "inf" if value > 0 else "-inf"}
    return value


# ---- loading --------------------------------------------------------------------------------
def load_json(text: str | bytes) -> Any:
    """Rebuild the IR node that :func:`save_json` wrote (TVM's ``tvm.ir.load_json``).

    Parameters
    ----------
    text : str or bytes
        A document written by :func:`save_json`.

    Returns
    -------
    IR node
        Structurally equal to the saved one; a node saved once (a variable used in several
        places) is one object.

    Raises
    ------
    IRJSONError
        The text is not such a document: not JSON, another format or version, an unknown
        node type, a missing or unexpected field, a reference to a node not defined before,
        or field values a node's constructor rejects. The message names the place.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise IRJSONError("<document>", f"not UTF-8 text: {err}") from None
    if not isinstance(text, str):
        raise IRJSONError("<document>", f"expected JSON text, got {type(text).__name__}")
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise IRJSONError("<document>", f"not valid JSON: {err}") from None
    except (RecursionError, ValueError) as err:
        raise IRJSONError("<document>", f"not valid JSON: {err}") from None
    nodes = _check_header(document)
    built: list[Any] = []
    try:
        for index, entry in enumerate(nodes):
            built.append(_build_node(entry, index, built))
        return _Reader(built, len(built)).value(document["root"], "root")
    except RecursionError:
        raise IRJSONError("<document>", "values are nested too deeply") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed (non-finite numbers are written as $float)")


def _check_header(document: Any) -> list[Any]:
    if not isinstance(document, dict):
        raise IRJSONError("<document>", f"expected a JSON object, got {_json_type(document)}")
    expected = {"format", "version", "root", "nodes"}
    missing, extra = expected - document.keys(), document.keys() - expected
    if missing or extra:
        raise IRJSONError("<document>", _key_problem(missing, extra))
    if document["format"] != FORMAT_NAME:
        raise IRJSONError("format", f"expected {FORMAT_NAME!r}, got {document['format']!r}")
    version = document["version"]
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise IRJSONError(
            "version", f"this relaxvm reads version {FORMAT_VERSION} only, got {version!r}"
        )
    nodes = document["nodes"]
    if not isinstance(nodes, list):
        raise IRJSONError("nodes", f"expected a list, got {_json_type(nodes)}")
    return nodes


def _build_node(entry: Any, index: int, built: list[Any]) -> Any:
    where = f"nodes[{index}]"
    if not isinstance(entry, dict) or entry.keys() != {"type", "fields"}:
        raise IRJSONError(where, 'expected an object with exactly "type" and "fields"')
    name, fields = entry["type"], entry["fields"]
    kind = NODE_KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise IRJSONError(f"{where}.type", f"unknown node type {name!r}")
    if not isinstance(fields, dict):
        raise IRJSONError(f"{where}.fields", f"expected an object, got {_json_type(fields)}")
    missing, extra = set(kind.fields) - fields.keys(), fields.keys() - set(kind.fields)
    if missing or extra:
        raise IRJSONError(f"{where}.fields", f"{name}: {_key_problem(missing, extra)}")
    reader = _Reader(built, index)
    values = {key: reader.value(fields[key], f"{where}.fields.{key}") for key in kind.fields}
    try:
        return kind.decode(values)
    except Exception as err:  # a constructor's check: report it with the place
        raise IRJSONError(where, f"cannot build {name}: {err}") from err


class _Reader:
    """Decodes field values; ``limit`` is how many nodes they may refer to."""

    def __init__(self, built: list[Any], limit: int) -> None:
        self.built = built
        self.limit = limit

    def value(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self.value(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _TAGS:
            raise IRJSONError(
                where, f"expected a value or an object with one of the keys {', '.join(_TAGS)}"
            )
        ((tag, body),) = value.items()
        if tag == "$node":
            return self._ref(body, where)
        if tag == "$float":
            if body not in ("nan", "inf", "-inf"):
                raise IRJSONError(where, f'$float must be "nan", "inf" or "-inf", got {body!r}')
            return float(body)
        if tag == "$dtype":
            try:
                return DataType(body)
            except Exception as err:
                raise IRJSONError(where, f"bad $dtype {body!r}: {err}") from None
        if not isinstance(body, list):
            raise IRJSONError(where, f"{tag} must hold a list, got {_json_type(body)}")
        if tag == "$tuple":
            return tuple(self.value(item, f"{where}[{i}]") for i, item in enumerate(body))
        return self._dict(body, where)

    def _ref(self, body: Any, where: str) -> Any:
        if isinstance(body, bool) or not isinstance(body, int):
            raise IRJSONError(where, f"$node must be an integer, got {body!r}")
        if not 0 <= body < self.limit:
            raise IRJSONError(
                where,
                f"refers to node {body}, which is not defined before this point (a node may "
                f"only refer to nodes 0..{self.limit - 1})",
            )
        return self.built[body]

    def _dict(self, body: list[Any], where: str) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for i, pair in enumerate(body):
            if not isinstance(pair, list) or len(pair) != 2:
                raise IRJSONError(f"{where}[{i}]", "a $dict entry must be a [key, value] pair")
            key = self.value(pair[0], f"{where}[{i}][0]")
            try:
                hash(key)
            except TypeError:
                raise IRJSONError(f"{where}[{i}][0]", "a $dict key must be hashable") from None
            result[key] = self.value(pair[1], f"{where}[{i}][1]")
        return result


def _key_problem(missing: set[str], extra: set[str]) -> str:
    parts = []
    if missing:
        parts.append(f"missing {', '.join(sorted(missing))}")
    if extra:
        parts.append(f"unexpected {', '.join(sorted(extra))}")
    return "; ".join(parts)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number")
