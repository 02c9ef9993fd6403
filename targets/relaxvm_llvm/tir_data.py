"""Kernels as data: PrimFuncs to and from a strict JSON encoding.

An export carries its kernels' TIR so that a loader that does not trust the file's object
code can rebuild them (``docs/security.md``). The script printer's text cannot serve: reading
it back (``relaxvm.script.from_source``) evaluates Python from the text. This encoding is
plain JSON decoded by a closed table of node kinds; every node is rebuilt through its
constructor, which checks types, and nothing from the file is ever evaluated, imported or
looked up by attribute name.

The bytes are zlib-compressed (decompression is bounded by :data:`MAX_TIR_BYTES`) UTF-8 JSON,
one object per library::

    {"v": 1,
     "vars": [[name, dtype, is_size_var], ...],          # every Var, by index
     "buffers": [{"name", "data", "shape", "dtype", "strides", "elem_offset", "scope"}, ...],
     "funcs": [{"name", "params", "buffer_map", "body", "attrs"}, ...]}

Expressions and statements are lists headed by a kind name: ``["v", 3]`` is variable 3,
``["i", "int64", 4]`` an integer, ``["f", "float32", "0x1.8p+0"]`` a float (``float.hex``, so
NaN and inf survive), ``["Add", a, b]``, ``["load", buffer, [indices]]``, ``["For", ...]``.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from relaxvm.errors import ExecutableFormatError, RelaxVMError
from relaxvm.ir import expr_nodes as nodes
from relaxvm.ir.expr_base import FloatImm, IntImm, PrimExpr, SizeVar, Var
from relaxvm.ir.tir.buffer import Buffer, BufferLoad
from relaxvm.ir.tir.function import PrimFunc
from relaxvm.ir.tir.intrin import Call
from relaxvm.ir.tir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = ["TIR_VERSION", "UnencodableTIR", "decode", "encode"]

TIR_VERSION = 1
#: Deepest nesting of expressions and statements accepted (and produced) here.
MAX_DEPTH = 400
#: Most nodes one library may hold: bounds the work a file can ask of the decoder.
MAX_NODES = 2_000_000
#: Largest decompressed TIR accepted (a zlib bomb is refused, not inflated).
MAX_TIR_BYTES = 256 << 20

_BINARY: dict[str, type[nodes.BinaryOpExpr]] = {
    cls.__name__: cls
    for cls in (
        nodes.Add,
        nodes.Sub,
        nodes.Mul,
        nodes.Div,
        nodes.Mod,
        nodes.FloorDiv,
        nodes.FloorMod,
        nodes.Min,
        nodes.Max,
        nodes.EQ,
        nodes.NE,
        nodes.LT,
        nodes.LE,
        nodes.GT,
        nodes.GE,
        nodes.And,
        nodes.Or,
    )
}
_JSON_SCALARS = (str, int, float, bool, type(None))


class UnencodableTIR(RelaxVMError, ValueError):
    """A kernel holds something this encoding cannot carry (an attribute of a foreign type)."""


# ---- encoding ----------------------------------------------------------------------------


class _Encoder:
    def __init__(self) -> None:
        self.vars: list[list[Any]] = []
        self.var_ids: dict[int, int] = {}
        self.buffers: list[dict[str, Any]] = []
        self.buffer_ids: dict[int, int] = {}
        self.keep: list[Any] = []  # holds encoded objects alive so their ids stay unique

    def var(self, var: Var) -> int:
        index = self.var_ids.get(id(var))
        if index is None:
            index = len(self.vars)
            self.vars.append([var.name, str(var.dtype), isinstance(var, SizeVar)])
            self.var_ids[id(var)] = index
            self.keep.append(var)
        return index

    def buffer(self, buffer: Buffer) -> int:
        index = self.buffer_ids.get(id(buffer))
        if index is None:
            record = {
                "name": buffer.name,
                "data": self.var(buffer.data),
                "shape": [self.expr(e, 0) for e in buffer.shape],
                "dtype": str(buffer.dtype),
                "strides": [self.expr(e, 0) for e in buffer.strides],
                "elem_offset": self.expr(buffer.elem_offset, 0),
                "scope": buffer.scope,
            }
            index = len(self.buffers)
            self.buffers.append(record)
            self.buffer_ids[id(buffer)] = index
            self.keep.append(buffer)
        return index

    def expr(self, e: PrimExpr, depth: int) -> list[Any]:
        if depth > MAX_DEPTH:
            raise UnencodableTIR(f"an expression is nested deeper than {MAX_DEPTH}")
        d = depth + 1
        if isinstance(e, Var):
            return ["v", self.var(e)]
        if isinstance(e, IntImm):
            return ["i", str(e.dtype), e.value]
        if isinstance(e, FloatImm):
            return ["f", str(e.dtype), e.value.hex()]
        if isinstance(e, BufferLoad):
            return ["load", self.buffer(e.buffer), [self.expr(i, d) for i in e.indices]]
        if isinstance(e, Call):
            return ["call", str(e.dtype), e.op, [self.expr(a, d) for a in e.args]]
        if isinstance(e, nodes.Cast):
            return ["Cast", str(e.dtype), self.expr(e.value, d)]
        if isinstance(e, nodes.Not):
            return ["Not", self.expr(e.a, d)]
        if isinstance(e, nodes.Select):
            return ["Select", *(self.expr(x, d) for x in e.operands)]
        name = type(e).__name__
        if _BINARY.get(name) is type(e):
            return [name, *(self.expr(x, d) for x in e.operands)]
        raise UnencodableTIR(f"cannot encode expression node {name}")

    def stmt(self, s: Stmt, depth: int) -> list[Any]:
        if depth > MAX_DEPTH:
            raise UnencodableTIR(f"statements are nested deeper than {MAX_DEPTH}")
        d = depth + 1
        if isinstance(s, SeqStmt):
            return ["seq", [self.stmt(x, d) for x in s.seq]]
        if isinstance(s, For):
            return [
                "for",
                self.var(s.loop_var),
                self.expr(s.min, d),
                self.expr(s.extent, d),
                int(s.kind),
                self.stmt(s.body, d),
                s.thread_binding,
                _attrs(s.annotations, "loop annotation"),
            ]
        if isinstance(s, BufferStore):
            return [
                "store",
                self.buffer(s.buffer),
                self.expr(s.value, d),
                [self.expr(i, d) for i in s.indices],
            ]
        if isinstance(s, LetStmt):
            return ["let", self.var(s.var), self.expr(s.value, d), self.stmt(s.body, d)]
        if isinstance(s, IfThenElse):
            other = None if s.else_case is None else self.stmt(s.else_case, d)
            return ["if", self.expr(s.condition, d), self.stmt(s.then_case, d), other]
        if isinstance(s, Allocate):
            return ["alloc", self.buffer(s.buffer), self.stmt(s.body, d)]
        if isinstance(s, Evaluate):
            return ["eval", self.expr(s.value, d)]
        raise UnencodableTIR(f"cannot encode statement {type(s).__name__}")


def _attrs(values: dict[str, Any], what: str) -> dict[str, Any]:
    for key, value in values.items():
        if not isinstance(key, str) or not isinstance(value, _JSON_SCALARS):
            raise UnencodableTIR(f"{what} {key!r} = {value!r} is not a JSON scalar")
    return dict(values)


def encode(funcs: Sequence[tuple[str, PrimFunc]]) -> bytes:
    """The named PrimFuncs as UTF-8 JSON (see the module docstring).

    Raises
    ------
    UnencodableTIR
        A function attribute or loop annotation is not a JSON scalar, or nesting is too deep.
    """
    enc = _Encoder()
    out = []
    for name, func in funcs:
        params = [enc.var(p) for p in func.params]
        buffer_map = [[enc.var(v), enc.buffer(b)] for v, b in func.buffer_map.items()]
        out.append(
            {
                "name": name,
                "params": params,
                "buffer_map": buffer_map,
                "body": enc.stmt(func.body, 0),
                "attrs": _attrs(func.attrs, "function attribute"),
            }
        )
    data = {"v": TIR_VERSION, "vars": enc.vars, "buffers": enc.buffers, "funcs": out}
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return zlib.compress(text, 6)


# ---- decoding ----------------------------------------------------------------------------


class _Bad(ValueError):
    pass


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise _Bad(what)


def _int(value: Any, what: str) -> int:
    _need(isinstance(value, int) and not isinstance(value, bool), f"{what} must be an int")
    return int(value)


def _str(value: Any, what: str) -> str:
    _need(isinstance(value, str), f"{what} must be a string")
    return str(value)


def _list(value: Any, what: str) -> list[Any]:
    _need(isinstance(value, list), f"{what} must be a list")
    return list(value)


class _Decoder:
    def __init__(self, data: dict[str, Any]) -> None:
        self.nodes = 0
        self.vars: list[Var] = []
        for i, item in enumerate(_list(data.get("vars"), "vars")):
            item = _list(item, f"var {i}")
            _need(len(item) == 3 and isinstance(item[2], bool), f"var {i} is malformed")
            cls = SizeVar if item[2] else Var
            self.vars.append(cls(_str(item[0], "a var name"), _str(item[1], "a var dtype")))
        self.buffers: list[Buffer] = []
        for i, rec in enumerate(_list(data.get("buffers"), "buffers")):
            _need(isinstance(rec, dict), f"buffer {i} must be an object")
            self.buffers.append(
                Buffer(
                    _str(rec["name"], "a buffer name"),
                    [self.expr(e, 0) for e in _list(rec["shape"], "a buffer shape")],
                    _str(rec["dtype"], "a buffer dtype"),
                    [self.expr(e, 0) for e in _list(rec["strides"], "buffer strides")] or None,
                    self.expr(rec["elem_offset"], 0),
                    _str(rec["scope"], "a buffer scope"),
                    self.var(rec["data"]),
                )
            )

    def var(self, index: Any) -> Var:
        index = _int(index, "a var reference")
        _need(0 <= index < len(self.vars), f"var reference {index} out of range")
        return self.vars[index]

    def buffer(self, index: Any) -> Buffer:
        index = _int(index, "a buffer reference")
        _need(0 <= index < len(self.buffers), f"buffer reference {index} out of range")
        return self.buffers[index]

    def _node(self, node: Any, depth: int, what: str) -> tuple[str, list[Any]]:
        self.nodes += 1
        _need(self.nodes <= MAX_NODES, f"more than {MAX_NODES} nodes")
        _need(depth <= MAX_DEPTH, f"nested deeper than {MAX_DEPTH}")
        _need(isinstance(node, list) and len(node) >= 1, f"{what} must be a non-empty list")
        return _str(node[0], f"{what} kind"), node[1:]

    def _arity(self, kind: str, args: list[Any], count: int) -> None:
        _need(len(args) == count, f"{kind} takes {count} fields, got {len(args)}")

    def expr(self, node: Any, depth: int) -> PrimExpr:
        kind, args = self._node(node, depth, "an expression")
        d = depth + 1
        if kind == "v":
            self._arity(kind, args, 1)
            return self.var(args[0])
        if kind == "i":
            self._arity(kind, args, 2)
            return IntImm(_str(args[0], "a dtype"), _int(args[1], "an integer constant"))
        if kind == "f":
            self._arity(kind, args, 2)
            return FloatImm(_str(args[0], "a dtype"), float.fromhex(_str(args[1], "a float")))
        if kind == "load":
            self._arity(kind, args, 2)
            indices = tuple(self.expr(i, d) for i in _list(args[1], "load indices"))
            return BufferLoad(self.buffer(args[0]), indices)
        if kind == "call":
            self._arity(kind, args, 3)
            call_args = [self.expr(a, d) for a in _list(args[2], "call arguments")]
            return Call(_str(args[0], "a dtype"), _str(args[1], "an intrinsic"), call_args)
        if kind == "Cast":
            self._arity(kind, args, 2)
            return nodes.Cast(_str(args[0], "a dtype"), self.expr(args[1], d))
        if kind == "Not":
            self._arity(kind, args, 1)
            return nodes.Not(self.expr(args[0], d))
        if kind == "Select":
            self._arity(kind, args, 3)
            return nodes.Select(*(self.expr(a, d) for a in args))
        cls = _BINARY.get(kind)
        if cls is None:
            raise _Bad(f"unknown expression kind {kind!r}")
        self._arity(kind, args, 2)
        return cls(self.expr(args[0], d), self.expr(args[1], d))

    def stmt(self, node: Any, depth: int) -> Stmt:
        kind, args = self._node(node, depth, "a statement")
        d = depth + 1
        if kind == "seq":
            self._arity(kind, args, 1)
            return SeqStmt([self.stmt(s, d) for s in _list(args[0], "a sequence")])
        if kind == "for":
            self._arity(kind, args, 7)
            binding = args[5]
            _need(binding is None or isinstance(binding, str), "thread_binding must be a string")
            return For(
                self.var(args[0]),
                self.expr(args[1], d),
                self.expr(args[2], d),
                _int(args[3], "a loop kind"),
                self.stmt(args[4], d),
                binding,
                _decode_attrs(args[6], "loop annotations"),
            )
        if kind == "store":
            self._arity(kind, args, 3)
            indices = tuple(self.expr(i, d) for i in _list(args[2], "store indices"))
            return BufferStore(self.buffer(args[0]), self.expr(args[1], d), indices)
        if kind == "let":
            self._arity(kind, args, 3)
            return LetStmt(self.var(args[0]), self.expr(args[1], d), self.stmt(args[2], d))
        if kind == "if":
            self._arity(kind, args, 3)
            other = None if args[2] is None else self.stmt(args[2], d)
            return IfThenElse(self.expr(args[0], d), self.stmt(args[1], d), other)
        if kind == "alloc":
            self._arity(kind, args, 2)
            return Allocate(self.buffer(args[0]), self.stmt(args[1], d))
        if kind == "eval":
            self._arity(kind, args, 1)
            return Evaluate(self.expr(args[0], d))
        raise _Bad(f"unknown statement kind {kind!r}")

    def func(self, rec: Any) -> tuple[str, PrimFunc]:
        _need(isinstance(rec, dict), "a function must be an object")
        params = [self.var(p) for p in _list(rec["params"], "params")]
        buffer_map = {}
        for pair in _list(rec["buffer_map"], "buffer_map"):
            _need(isinstance(pair, list) and len(pair) == 2, "a buffer_map entry is malformed")
            buffer_map[self.var(pair[0])] = self.buffer(pair[1])
        body = self.stmt(rec["body"], 0)
        attrs = _decode_attrs(rec["attrs"], "function attributes")
        return _str(rec["name"], "a kernel name"), PrimFunc(params, body, buffer_map, attrs)


def _decode_attrs(value: Any, what: str) -> dict[str, Any]:
    _need(isinstance(value, dict), f"{what} must be an object")
    for key, item in value.items():
        _need(isinstance(item, _JSON_SCALARS), f"{what}: {key!r} is not a JSON scalar")
    return dict(value)


def decode(data: bytes) -> list[tuple[str, PrimFunc]]:
    """The named PrimFuncs :func:`encode` wrote; executes nothing from ``data``.

    Raises
    ------
    ExecutableFormatError
        Malformed, inconsistent or ill-typed TIR (the message says what and where).
    """
    try:
        inflater = zlib.decompressobj()
        text = inflater.decompress(bytes(data), MAX_TIR_BYTES)
        if inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
            raise _Bad(f"not one complete zlib stream of at most {MAX_TIR_BYTES} bytes")
        root = json.loads(text.decode("utf-8"))
        _need(isinstance(root, dict), "the TIR is not a JSON object")
        _need(root.get("v") == TIR_VERSION, f"TIR encoding version {root.get('v')!r}")
        decoder = _Decoder(root)
        funcs = [decoder.func(rec) for rec in _list(root.get("funcs"), "funcs")]
    except RecursionError:
        raise ExecutableFormatError("llvm module: the kernels' TIR is nested too deeply") from None
    except (
        _Bad,
        KeyError,
        TypeError,
        ValueError,
        ArithmeticError,
        zlib.error,
        RelaxVMError,
    ) as err:
        raise ExecutableFormatError(
            f"llvm module: malformed kernel TIR ({type(err).__name__}: {err})"
        ) from None
    names = [name for name, _ in funcs]
    if len(set(names)) != len(names):
        raise ExecutableFormatError("llvm module: malformed kernel TIR (two kernels share a name)")
    return funcs
