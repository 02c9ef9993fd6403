"""ONNX files on the command line: ``relaxvm compile model.onnx --shape x=N,3,224,224``.

:func:`load_onnx` imports an ``.onnx`` file with :func:`relaxvm.frontend.onnx.from_onnx`, with
the input shapes given by ``--shape NAME=DIMS`` options; the importer's errors become
:class:`~relaxvm.cli.common.CLIError` s that name the file, so the CLI prints them as its one
line. Imported lazily by :mod:`relaxvm.cli.build`: the importer (and ``onnx``) load only when an
ONNX file is given.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from ..errors import FrontendError
from .common import CLIError

__all__ = ["add_shape_argument", "is_onnx_file", "load_onnx", "parse_shapes"]

SHAPE_HELP = (
    "the shape of ONNX input NAME, overriding the model's: comma-separated dims, each a size, "
    "a name for a symbolic dim shared by every input that uses it (N,3,224,224), or ? for a "
    "fresh symbolic dim; may be repeated (ONNX models only)"
)


def add_shape_argument(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--shape NAME=DIMS`` option."""
    parser.add_argument(
        "--shape", action="append", default=[], metavar="NAME=DIMS", help=SHAPE_HELP
    )


def is_onnx_file(path: str) -> bool:
    """Whether ``path`` names an ONNX model (by its ``.onnx`` suffix)."""
    return path.lower().endswith(".onnx")


def parse_shapes(specs: Sequence[str]) -> dict[str, list[int | str | None]]:
    """``["x=N,3,224,224", "mask=N,?"]`` -> ``{"x": ["N", 3, 224, 224], "mask": ["N", None]}``.

    Raises
    ------
    CLIError
        A spec without ``=``, an empty name, a dim that is neither a size, a name nor ``?``,
        or a name given twice.
    """
    shapes: dict[str, list[int | str | None]] = {}
    for spec in specs:
        name, equals, text = spec.rpartition("=")
        if not equals or not name:
            raise CLIError(f"--shape {spec}: expected NAME=DIMS, e.g. input=N,3,224,224")
        if name in shapes:
            raise CLIError(f"--shape {spec}: the shape of {name!r} is given twice")
        dims: list[int | str | None] = []
        for item in (d.strip() for d in text.split(",")) if text.strip() else ():
            dims.append(_dim(item, spec))
        shapes[name] = dims
    return shapes


def _dim(item: str, spec: str) -> int | str | None:
    if item == "?":
        return None
    if item.isidentifier():
        return item
    try:
        size = int(item)
    except ValueError:
        size = -1
    if size < 0:
        raise CLIError(
            f"--shape {spec}: dim {item!r} must be a size (0 or more), a name or ? (a symbolic dim)"
        )
    return size


def load_onnx(path: str, shape_specs: Sequence[str] = ()) -> tuple[str, Any]:
    """Import the ONNX file ``path``; returns ``(name, IRModule)``, the name being the file's.

    Raises
    ------
    CLIError
        The file is missing, is not an ONNX model, has unsupported operators (all of them
        listed), or a ``--shape`` does not fit it.
    relaxvm.errors.MissingDependencyError
        ``onnx`` is not installed (the message says how to install it).
    """
    shapes = parse_shapes(shape_specs)
    if not os.path.isfile(path):
        raise CLIError(f"no such model file: {path}")
    from ..frontend.onnx import from_onnx

    try:
        mod = from_onnx(path, shape_dict=shapes or None)
    except FrontendError as err:
        # The importer lists every unsupported node on its own line: keep them apart with
        # "; " since the CLI prints one line.
        lines = [line.strip(" -") for line in str(err).splitlines() if line.strip()]
        text = "; ".join(lines).replace(":;", ":", 1).removeprefix("from_onnx: ")
        raise CLIError(f"cannot import {path}: {text}") from err
    return os.path.basename(path), mod
