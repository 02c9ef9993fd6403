"""What the CLI's commands share: the user-error type, the one-line error format and the
readers of executables and arrays. Every other module of :mod:`relaxvm.cli` may import this
one; it imports none of them."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from ..errors import RelaxVMError
from ..vm.executable import Executable
from ..vm.executable.format import MAGIC

__all__ = [
    "CLIError",
    "format_ms",
    "load_executable",
    "load_npy",
    "load_npz",
    "np_load",
    "one_line",
]

# ``model.py:7:13: error: ...`` followed by the source line and a caret line: a diagnostic
# whose layout is its meaning, printed as it is.
_DIAGNOSTIC = re.compile(r"^\S[^\n]*:\d+:\d+: [^\n]*\n")
# What the start of a model source file looks like (an executable starts with MAGIC).
_SOURCE_HINTS = (b"import ", b"from ", b"@I.ir_module", b"#", b'"""', b"'''")


class CLIError(RelaxVMError, ValueError):
    """A user error detected by the command line itself (bad file, bad option, bad value)."""


def one_line(err: BaseException) -> str:
    """An exception as one line: its message, plus where in the VM program it happened.

    A ``file:line:col`` diagnostic with its source line and caret (a script error) is the
    exception: it is returned as it is, since squashing it would misplace the caret.
    """
    if isinstance(err, FileNotFoundError) and err.filename is not None:
        return f"no such file: {err.filename}"
    if isinstance(err, OSError) and err.strerror and err.filename is not None:
        return f"{err.strerror}: {err.filename}"
    message = str(err)
    if isinstance(err, RelaxVMError) and _DIAGNOSTIC.match(message):
        return message.rstrip()
    text = " ".join(message.split()) or type(err).__name__
    if not isinstance(err, RelaxVMError | ValueError | TypeError):
        # Not one of ours: the type helps the user search or report it.
        text = f"{type(err).__name__}: {text}"
    # The VM adds one note per frame as the exception unwinds; the first is the innermost.
    vm_notes = [n.strip() for n in getattr(err, "__notes__", ()) if "in VM function" in n]
    if vm_notes:
        text += f" ({vm_notes[0]})"
    return text


def load_executable(path: str) -> Executable:
    """Load an executable file, refusing a model source file with what to do instead.

    Raises
    ------
    CLIError
        No such file, a directory, or a Python model file given where an executable belongs.
    """
    if not os.path.exists(path):
        raise CLIError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a directory, not an executable file")
    output = os.path.splitext(path)[0] + ".rvm"
    if path.endswith(".onnx"):
        raise CLIError(
            f"{path} is an ONNX model, not an executable: compile it first "
            f"(relaxvm compile {path} -o {output})"
        )
    if _is_source_file(path):
        raise CLIError(
            f"{path} is a model source file, not an executable: compile it first "
            f"(relaxvm compile {path} -o {output})"
        )
    return Executable.load(path)


def _is_source_file(path: str) -> bool:
    with open(path, "rb") as file:
        head = file.read(4096)
    if head.startswith(MAGIC):
        return False
    if path.endswith((".py", ".pyw")):
        return True
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return head.lstrip().startswith(_SOURCE_HINTS) and "relaxvm" in text


def load_npy(path: str, what: str = "") -> np.ndarray:
    """One array from a ``.npy`` file (``what`` says where the path came from, for errors)."""
    value = np_load(path, "a .npy", what)
    if not isinstance(value, np.ndarray):
        value.close()
        raise CLIError(f"{what}{path} holds several arrays; pass an .npz file with --params")
    return value


def load_npz(path: str, what: str) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file by key (``what``: the option, for errors)."""
    loaded = np_load(path, "an .npz", what)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise CLIError(f"{what}{path}: expected an .npz file (np.savez), got a single array")
    with loaded:
        try:
            return {key: loaded[key] for key in loaded.files}
        except (ValueError, OSError, EOFError) as err:
            raise CLIError(f"cannot read {path} as an .npz file: {one_line(err)}") from err


def np_load(path: str, kind: str, what: str = "") -> Any:
    """``np.load`` that never unpickles (an input file is data and must not run code)."""
    if not os.path.exists(path):
        raise CLIError(f"{what}no such file: {path}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise CLIError(f"cannot read {path} as {kind} file: {one_line(err)}") from err


def format_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f} ms"
