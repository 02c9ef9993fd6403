"""Mutations of an exported executable for the loader fuzz test; not a test module.

Every mutation is a pure function of ``(rng, file bytes)``: a case is replayed from its seed,
class and number alone. The layout parsed here is the executable format's
(``relaxvm.vm.executable.format``: 24-byte header with the body's CRC-32 and length, function
table, memory scopes, constants, instruction offsets and words, extension records) and the
llvm kernel library's (``relaxvm_llvm.serialize``: prefix, JSON header, TIR, object code and,
from format 2, a 32-byte tag). Mutations that get past a checksum recompute it, exactly as an
attacker editing the file would: the outer CRC-32 and lengths, the header length and the
object code's SHA-256. Only the tag, which needs the user's key, is never recomputed.
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relaxvm.vm.executable import codec
from relaxvm.vm.executable.format import HEADER_SIZE, MAGIC

_U64 = struct.Struct("<Q")
_LLVM_PREFIX = struct.Struct("<8sII")

#: Values that reach interesting branches when written over an 8-byte field.
INTERESTING_WORDS = [0, 1, 2, 3, 4, -1, -2, 7, 65, 1 << 31, 1 << 54, (1 << 54) + 1, 1 << 62]
INTERESTING_WORDS += [(1 << 63) - 1, -(1 << 63), (1 << 56) | 1, (2 << 56) | 1, 3 << 56]
_EDITS = ["flip"] * 3 + ["byte"] * 2 + ["word"] * 2 + ["insert", "delete", "truncate", "copy"]


def edit_bytes(rng: random.Random, data: bytes, edits: int = 3) -> bytes:
    """One to ``edits`` random byte-level edits (bit flips, bytes, words, splices)."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, edits)):
        edit = rng.choice(_EDITS)
        pos = rng.randrange(len(buf) + 1)
        if edit == "flip" and buf:
            buf[min(pos, len(buf) - 1)] ^= 1 << rng.randrange(8)
        elif edit == "byte" and buf:
            buf[min(pos, len(buf) - 1)] = rng.randrange(256)
        elif edit == "word" and len(buf) >= 8:
            struct.pack_into("<q", buf, min(pos, len(buf) - 8), rng.choice(INTERESTING_WORDS))
        elif edit == "insert":
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
        elif edit == "delete":
            del buf[pos : pos + rng.randint(1, 16)]
        elif edit == "truncate":
            del buf[pos:]
        else:
            start = rng.randrange(len(buf) + 1)
            buf[pos:pos] = buf[start : start + rng.randint(1, 24)]
    return bytes(buf)


def with_header(version: int, body: bytes) -> bytes:
    """An executable header with the CRC-32 and length of ``body`` recomputed."""
    return MAGIC + struct.pack("<IIQ", version, zlib.crc32(body), len(body)) + body


@dataclass
class Layout:
    """Byte ranges of one executable: sections, function table entries, extensions."""

    version: int
    body: bytes
    sections: list[tuple[int, int]]  # table, scopes, constants, instr_offset, instr_data, ext
    entries: list[tuple[int, int]]  # function table entries (body offsets)
    extensions: list[tuple[str, bytes]]


def parse(data: bytes) -> Layout:
    """Split a valid executable into its parts (offsets relative to the body)."""
    version = struct.unpack_from("<I", data, 8)[0]
    body = data[HEADER_SIZE:]
    pos = 0

    def u64() -> int:
        nonlocal pos
        value = _U64.unpack_from(body, pos)[0]
        pos += 8
        return value

    def skip_string() -> None:
        nonlocal pos
        size = u64()  # not `pos += u64()`: that adds to the value of pos before the call
        pos += size

    sections: list[tuple[int, int]] = []
    entries: list[tuple[int, int]] = []
    start = pos
    for _ in range(u64()):  # kind, name, 4 x i64, parameter names
        entry = pos
        pos += 4
        skip_string()
        pos += 32
        for _ in range(u64()):
            skip_string()
        entries.append((entry, pos))
    sections.append((start, pos))
    start = pos
    for _ in range(u64()):  # memory scopes: const index, scope
        pos += 8
        skip_string()
    sections.append((start, pos))
    reader = codec._Reader(memoryview(body), pos, len(body))
    codec._read_constants(reader)
    sections.append((pos, reader.pos))
    pos = reader.pos
    for _ in range(2):  # instr_offset, instr_data
        start = pos
        count = u64()
        pos += 8 * count
        sections.append((start, pos))
    extensions: list[tuple[str, bytes]] = []
    if pos < len(body):
        start = pos
        for _ in range(u64()):
            size = u64()
            key = body[pos : pos + size].decode("utf-8")
            pos += size
            size = u64()
            extensions.append((key, body[pos : pos + size]))
            pos += size
        sections.append((start, pos))
    return Layout(version, body, sections, entries, extensions)


def encode_extensions(extensions: list[tuple[str, bytes]]) -> bytes:
    out = [_U64.pack(len(extensions))]
    for key, data in extensions:
        raw = key.encode("utf-8")
        out += [_U64.pack(len(raw)), raw, _U64.pack(len(data)), data]
    return b"".join(out)


# ---- the kernel library inside the kernel_lib extension -------------------------------------
@dataclass
class KernelLib:
    """One kernel_lib extension split into its parts."""

    kind: bytes
    target: bytes
    version: int
    header: dict[str, Any]
    tir: bytes
    obj: bytes
    trailer: bytes  # the tag (format 2), empty before


def split_kernel_lib(record: bytes) -> KernelLib:
    pos = 0
    parts = []
    for _ in range(2):
        size = _U64.unpack_from(record, pos)[0]
        parts.append(record[pos + 8 : pos + 8 + size])
        pos += 8 + size
    payload = record[pos + 8 :]
    _magic, version, size = _LLVM_PREFIX.unpack_from(payload)
    start = _LLVM_PREFIX.size
    header = json.loads(payload[start : start + size])
    rest = payload[start + size :]
    tir_size = int(header.get("tir_size", 0))
    obj_end = tir_size + int(header["object_size"])
    return KernelLib(
        parts[0], parts[1], version, header, rest[:tir_size], rest[tir_size:obj_end], rest[obj_end:]
    )


def join_kernel_lib(lib: KernelLib, rehash: bool = True) -> bytes:
    """The extension record of ``lib``; ``rehash``: object size and SHA-256 recomputed."""
    header = dict(lib.header)
    if rehash:
        header["object_size"] = len(lib.obj)
        header["object_sha256"] = hashlib.sha256(lib.obj).hexdigest()
        if "tir_size" in header:
            header["tir_size"] = len(lib.tir)
    raw = json.dumps(header, sort_keys=True).encode("utf-8")
    payload = b"".join(
        (_LLVM_PREFIX.pack(b"RVMLLVM\x00", lib.version, len(raw)), raw, lib.tir, lib.obj)
    )
    payload += lib.trailer
    out = [_U64.pack(len(lib.kind)), lib.kind, _U64.pack(len(lib.target)), lib.target]
    return b"".join([*out, _U64.pack(len(payload)), payload])


def _rebuild(layout: Layout, extensions: list[tuple[str, bytes]]) -> bytes:
    start = layout.sections[-1][0] if layout.extensions else len(layout.body)
    return with_header(layout.version, layout.body[:start] + encode_extensions(extensions))


def _with_lib(layout: Layout, edit: Callable[[KernelLib], None], rehash: bool = True) -> bytes:
    extensions = list(layout.extensions)
    index = next(i for i, (key, _) in enumerate(extensions) if key == "kernel_lib")
    lib = split_kernel_lib(extensions[index][1])
    edit(lib)
    extensions[index] = ("kernel_lib", join_kernel_lib(lib, rehash))
    return _rebuild(layout, extensions)


# ---- the mutation classes -------------------------------------------------------------------
def raw(rng: random.Random, data: bytes) -> bytes:
    """Byte edits anywhere, checksums left as they were."""
    return edit_bytes(rng, data)


def rechecksummed(rng: random.Random, data: bytes) -> bytes:
    """Byte edits in the program (before the extensions), CRC-32 and length recomputed."""
    layout = parse(data)
    end = layout.sections[4][1]
    program = edit_bytes(rng, layout.body[:end])
    return with_header(layout.version, program + layout.body[end:])


def section_swap(rng: random.Random, data: bytes) -> bytes:
    """Two sections swapped, one copied over another, or the extension records reordered."""
    layout = parse(data)
    body = layout.body
    pieces = [body[a:b] for a, b in layout.sections]
    choice = rng.random()
    if choice < 0.2 and len(layout.extensions) > 1:
        return _rebuild(layout, list(reversed(layout.extensions)))
    i, j = rng.sample(range(len(pieces)), 2)
    if choice < 0.6:
        pieces[i], pieces[j] = pieces[j], pieces[i]
    else:
        pieces[i] = pieces[j]
    return with_header(layout.version, b"".join(pieces))


def func_swap(rng: random.Random, data: bytes) -> bytes:
    """Two function table entries (or their names, ranges or parameter lists) swapped."""
    layout = parse(data)
    body = layout.body
    parsed = [_split_entry(body[a:b]) for a, b in layout.entries]
    what = rng.choice(["entry", "name", "range", "kind"])
    field = {"entry": None, "name": 1, "range": 2, "kind": 0}[what]

    def key(k: int) -> bytes:
        return b"".join(parsed[k]) if field is None else parsed[k][field]

    # Only pairs that differ in the swapped part: most packed entries share kind and range.
    pairs = [(i, j) for i in range(len(parsed)) for j in range(i) if key(i) != key(j)]
    i, j = rng.choice(pairs)
    if field is None:
        parsed[i], parsed[j] = parsed[j], parsed[i]
    else:
        parsed[i][field], parsed[j][field] = parsed[j][field], parsed[i][field]
    entries = [b"".join(p) for p in parsed]
    table_start, table_end = layout.sections[0]
    table = body[table_start : table_start + 8] + b"".join(entries)
    return with_header(layout.version, body[:table_start] + table + body[table_end:])


def _split_entry(entry: bytes) -> list[bytes]:
    """kind, name (with length), the four integers, parameter names."""
    size = _U64.unpack_from(entry, 4)[0]
    name_end = 12 + size
    return [entry[:4], entry[4:name_end], entry[name_end : name_end + 32], entry[name_end + 32 :]]


_CPUS = ["x86-64", "x86-64-v4", "generic", "skylake-avx512", "", "no such cpu", "a" * 300, "-"]
_FEATURES = ["avx2", "+avx2,-sse2", "+", ",", "+avx512f,+avx512bw", "!!", "-sse2,-x87", ""]
_FEATURES += ["+amx-tile,+amx-int8", "+avx2" * 200, "+sse2,,+avx"]


_HEADER_OPS = ["symbols", "signatures", "names", "shape", "dtype", "flag", "params", "cpu"]
_HEADER_OPS += ["features", "features", "triple", "fastmath", "sizes", "drop", "text", "tag"]


def kernel_header(rng: random.Random, data: bytes) -> bytes:
    """An edit of the kernel library's JSON header (symbols, signatures, cpu, features, ...)."""
    layout = parse(data)
    op = rng.choice(_HEADER_OPS)

    def edit(lib: KernelLib) -> None:
        kernels = lib.header["kernels"]
        i, j = rng.sample(range(len(kernels)), 2) if len(kernels) > 1 else (0, 0)
        k = kernels[i]
        buffers = [p for p in k["params"] if p["kind"] == "buffer"]
        if op in ("symbols", "names"):
            key = "symbol" if op == "symbols" else "name"
            kernels[i][key], kernels[j][key] = kernels[j][key], kernels[i][key]
        elif op == "signatures":
            kernels[i]["params"], kernels[j]["params"] = kernels[j]["params"], k["params"]
        elif op == "shape" and buffers:
            param = rng.choice(buffers)
            dim = rng.randrange(len(param["shape"])) if param["shape"] else None
            value = rng.choice([0, 1, 2, 3, 1 << 40, -1, ["v", 0], ["v", 7], ["mul", 2, 3]])
            if dim is None:
                param["shape"] = [value]
            else:
                param["shape"][dim] = value
        elif op == "dtype" and buffers:
            rng.choice(buffers)["dtype"] = rng.choice(["float64", "int8", "float16", "bool"])
        elif op == "flag":
            target = rng.choice([*buffers, k]) if buffers else k
            key = "noalias" if target is k else "written"
            target[key] = rng.choice([True, False, 1, None, "no"])
        elif op == "params":
            if k["params"] and rng.random() < 0.5:
                del k["params"][rng.randrange(len(k["params"]))]
            elif k["params"]:
                k["params"].append(dict(rng.choice(k["params"])))
        elif op == "cpu":
            lib.header["cpu"] = rng.choice(_CPUS)
        elif op == "features":
            lib.header["features"] = rng.choice(_FEATURES)
        elif op == "triple":
            lib.header["triple"] = rng.choice(["", "aarch64-unknown-linux-gnu", "x86_64", "?"])
        elif op == "fastmath":
            lib.header["fastmath"] = rng.choice([["fast"], ["reassoc", "bogus"], [], [1]])
        elif op == "sizes":
            key = rng.choice(["object_size", "tir_size", "format_version"])
            lib.header[key] = rng.choice([0, 1, -1, 1 << 40, lib.header.get(key, 0) + 1])
        elif op == "drop":
            del lib.header[rng.choice(sorted(lib.header))]
        elif op == "tag" and lib.trailer:
            tag = bytearray(lib.trailer)
            tag[rng.randrange(len(tag))] ^= 1 << rng.randrange(8)
            lib.trailer = bytes(tag)

    if op == "text":  # raw damage to the JSON text, lengths and checksums recomputed
        extensions = list(layout.extensions)
        index = next(i for i, (key, _) in enumerate(extensions) if key == "kernel_lib")
        lib = split_kernel_lib(extensions[index][1])
        raw_header = json.dumps(lib.header, sort_keys=True).encode("utf-8")
        damaged = edit_bytes(rng, raw_header)
        payload = _LLVM_PREFIX.pack(b"RVMLLVM\x00", lib.version, len(damaged)) + damaged
        payload += lib.tir + lib.obj + lib.trailer
        record = b"".join(
            (_U64.pack(len(lib.kind)), lib.kind, _U64.pack(len(lib.target)), lib.target)
        )
        extensions[index] = ("kernel_lib", record + _U64.pack(len(payload)) + payload)
        return _rebuild(layout, extensions)
    # "sizes" keeps the wrong size: recomputing would undo the edit.
    return _with_lib(layout, edit, rehash=op not in ("sizes",))


#: Byte patterns planted in object code: int3, ud2, a ret, a jump to itself, zeros.
_PLANTS = [b"\xcc" * 8, b"\x0f\x0b" * 4, b"\xc3", b"\xeb\xfe", bytes(16), b"\xff" * 16]


def object_code(rng: random.Random, data: bytes) -> bytes:
    """The object code edited (bits, planted instructions, resized), its SHA-256 and size
    recomputed."""
    layout = parse(data)

    def edit(lib: KernelLib) -> None:
        obj = bytearray(lib.obj)
        choice = rng.random()
        if choice < 0.4:
            for _ in range(rng.randint(1, 8)):
                obj[rng.randrange(len(obj))] ^= 1 << rng.randrange(8)
        elif choice < 0.75:
            plant = rng.choice(_PLANTS)
            pos = rng.randrange(max(1, len(obj) - len(plant)))
            obj[pos : pos + len(plant)] = plant
        else:
            obj = bytearray(edit_bytes(rng, bytes(obj)))
        lib.obj = bytes(obj)

    return _with_lib(layout, edit)


_TIR_INTS = [0, 1, -1, 2, 3, 7, 64, 1 << 31, 1 << 40, -(1 << 62), (1 << 63) - 1]


def _nodes(tree: Any, out: list[tuple[Any, Any]]) -> None:
    """Every (container, key) slot of a JSON tree."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for key, value in items:
        out.append((tree, key))
        if isinstance(value, (list, dict)):
            _nodes(value, out)


def tir(rng: random.Random, data: bytes) -> bytes:
    """The kernels' TIR edited (integers, subtrees, kind names), its size recomputed and the
    tag left wrong: the loader must rebuild from it or refuse, never crash."""
    layout = parse(data)

    def edit(lib: KernelLib) -> None:
        try:
            compressed = lib.tir[:1] == b"x"
            tree = json.loads(zlib.decompress(lib.tir) if compressed else lib.tir)
        except (ValueError, zlib.error):
            lib.tir = edit_bytes(rng, lib.tir)  # an encoding this fuzzer does not know
            return
        slots: list[tuple[Any, Any]] = []
        _nodes(tree, slots)
        for _ in range(rng.randint(1, 3)):
            parent, key = rng.choice(slots)
            value = parent[key]
            choice = rng.random()
            if isinstance(value, bool) or choice < 0.2:
                other_parent, other_key = rng.choice(slots)  # graft another subtree here
                parent[key] = json.loads(json.dumps(other_parent[other_key]))
            elif isinstance(value, int):
                parent[key] = rng.choice(_TIR_INTS)
            elif isinstance(value, str):
                parent[key] = rng.choice(["Add", "load", "For", "v", "i", "f", "int8", "", value])
            elif isinstance(value, list) and value and choice < 0.6:
                del value[rng.randrange(len(value))]
        raw = json.dumps(tree).encode("utf-8")
        lib.tir = zlib.compress(raw) if compressed else raw

    return _with_lib(layout, edit)


CLASSES: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "raw": raw,
    "rechecksummed": rechecksummed,
    "section_swap": section_swap,
    "func_swap": func_swap,
    "kernel_header": kernel_header,
    "object_code": object_code,
    "tir": tir,
}
