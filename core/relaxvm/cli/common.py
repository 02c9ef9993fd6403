"""What the CLI's commands share: the user-error type and the readers of executables and
input arrays. Both :mod:`~relaxvm.cli.commands` and :mod:`~relaxvm.cli.build` import this
module, never each other at module level."""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from ..errors import RelaxVMError
from ..vm.executable import Executable

__all__ = [
    "CLIError",
    "format_ms",
    "load_executable",
    "load_npy",
    "np_load",
    "one_line",
    "read_inputs",
]


class CLIError(RelaxVMError):
    """A user error detected by the command line itself (bad file, bad option combination)."""


def one_line(err: BaseException) -> str:
    """An exception as one line: its message, plus where in the VM program it happened."""
    if isinstance(err, FileNotFoundError) and err.filename is not None:
        return f"no such file: {err.filename}"
    if isinstance(err, OSError) and err.strerror and err.filename is not None:
        return f"{err.strerror}: {err.filename}"
    text = " ".join(str(err).split()) or type(err).__name__
    if not isinstance(err, RelaxVMError | ValueError | TypeError):
        # Not one of ours: the type helps the user search or report it.
        text = f"{type(err).__name__}: {text}"
    # The VM adds one note per frame as the exception unwinds; the first is the innermost.
    vm_notes = [n.strip() for n in getattr(err, "__notes__", ()) if "in VM function" in n]
    if vm_notes:
        text += f" ({vm_notes[0]})"
    return text


def load_executable(path: str) -> Executable:
    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory, not an executable file")
    return Executable.load(path)


def read_inputs(
    options: argparse.Namespace, params: list[str]
) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Positional arrays from .npy files, or positional/keyword arrays from one .npz file."""
    if not options.npz:
        return [load_npy(path) for path in options.inputs], {}
    path = options.npz
    loaded = np_load(path, "an .npz")
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise CLIError(f"--inputs {path}: expected an .npz file (np.savez), got a single array")
    with loaded:
        try:
            arrays = {key: loaded[key] for key in loaded.files}
        except (ValueError, OSError, EOFError) as err:
            raise CLIError(f"cannot read {path} as an .npz file: {one_line(err)}") from err
    keys = set(arrays)
    if keys <= set(params):
        return [], arrays
    positional = [f"arr_{i}" for i in range(len(arrays))]
    if keys == set(positional):
        return [arrays[key] for key in positional], {}
    unknown = sorted(keys - set(params))
    raise CLIError(
        f"{path}: keys {', '.join(unknown)} are not parameters of {options.func} "
        f"({', '.join(params)}); use parameter names or arr_0, arr_1, ..."
    )


def load_npy(path: str) -> np.ndarray:
    value = np_load(path, "a .npy")
    if not isinstance(value, np.ndarray):
        value.close()
        raise CLIError(f"{path} holds several arrays; pass an .npz file with --inputs")
    return value


def np_load(path: str, kind: str) -> Any:
    """``np.load`` that never unpickles (an input file is data and must not run code)."""
    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise CLIError(f"cannot read {path} as {kind} file: {one_line(err)}") from err


def format_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f} ms"
