"""The relaxvm exception hierarchy.

Every error raised on purpose by relaxvm derives from :class:`RelaxVMError`, and also from the
built-in exception TVM raises in the same situation (``ValueError``, ``TypeError`` or
``RuntimeError``), so code written against TVM's behaviour keeps working::

    RelaxVMError
    ├── RegistryError (ValueError)          bad or duplicate registrations
    │   └── FunctionNotFoundError           a name nobody registered
    ├── PluginError (RuntimeError)          a plugin is missing, blocked or misbehaves
    │   └── PluginConflictError             two plugins claim one name
    ├── DeviceError (ValueError)            unknown device kind, device without an API
    ├── BytecodeError (ValueError)          a malformed program (builder or validator)
    ├── ExecutableFormatError (ValueError)  corrupt, truncated, foreign or wrong-version bytes
    ├── CompileError (ValueError)           a module that cannot be compiled (names function,
    │                                       binding and reason)
    ├── VMError (RuntimeError)              run-time failures: arity, checks, recursion, memory
    ├── VMTypeError (TypeError)             a value of the wrong kind reached a builtin
    ├── VMValueError (ValueError)           a value of the right kind but wrong content
    ├── VMIndexError (IndexError)           an index past the end of a tuple
    ├── FrontendError (ValueError)          a model file an importer cannot read or convert
    │   └── OpNotImplemented (+NotImplementedError)  operators or attributes not supported
    ├── MissingDependencyError (ImportError)  an optional dependency is not installed
    └── NotSupportedError                   a TVM API present for imports that relaxvm cannot run
        ├── RPCNotSupportedError            tvm.rpc's remote sessions (no transport)
        └── CompilerNotSupportedError       tvm.contrib.cc (no C toolchain step)
"""

from __future__ import annotations

__all__ = [
    "BytecodeError",
    "CompileError",
    "CompilerNotSupportedError",
    "DeviceError",
    "ExecutableFormatError",
    "FrontendError",
    "FunctionNotFoundError",
    "MissingDependencyError",
    "NotSupportedError",
    "OpNotImplemented",
    "PluginConflictError",
    "PluginError",
    "RPCNotSupportedError",
    "RegistryError",
    "RelaxVMError",
    "VMError",
    "VMIndexError",
    "VMTypeError",
    "VMValueError",
]


class RelaxVMError(Exception):
    """Base class of every error relaxvm raises on purpose."""


class RegistryError(RelaxVMError, ValueError):
    """A registration was rejected (duplicate name, bad name, not callable)."""


class FunctionNotFoundError(RegistryError):
    """A global function was looked up by a name that nobody registered."""


class PluginError(RelaxVMError, RuntimeError):
    """A plugin could not be loaded, is missing, blocked, or broke the plugin rules."""


class PluginConflictError(PluginError):
    """Two plugins registered the same name without ``override=True``, or both overrode it.

    A :class:`PluginError`, not a :class:`RegistryError`: the plugins failed to load, and code
    that turns a ``RegistryError`` from a lookup into its own message (an unknown target kind,
    say) must not mistake a broken installation for a mistake in its input. The message names
    both plugins and says how to skip one.
    """


class DeviceError(RelaxVMError, ValueError):
    """An unknown device kind, or a device whose API is not available."""


class BytecodeError(RelaxVMError, ValueError):
    """A bytecode program is malformed (raised by ExecBuilder and the executable validator)."""


class ExecutableFormatError(RelaxVMError, ValueError):
    """Executable bytes are corrupt, truncated, foreign or of another format version."""


class VMError(RelaxVMError, RuntimeError):
    """A failure while the virtual machine runs (TVM raises these as ``RuntimeError``)."""


class VMTypeError(RelaxVMError, TypeError):
    """A builtin or VM entry point received a value of the wrong type."""


class VMValueError(RelaxVMError, ValueError):
    """A builtin or VM entry point received a value with the wrong content."""


class VMIndexError(RelaxVMError, IndexError):
    """An index past the end of a tuple (TVM raises ``IndexError`` there too)."""


class CompileError(RelaxVMError, ValueError):
    """A module cannot be compiled: an op without a legalization for the target, an unbound
    symbolic variable, an ill-formed function... The message names the function, the binding
    (or kernel) and the reason, and the pass that found it."""


class FrontendError(RelaxVMError, ValueError):
    """A model an importer (``relaxvm.frontend``) cannot read or convert: a malformed file, an
    input named in ``shape_dict`` that the graph lacks, an operator used against its spec."""


class OpNotImplemented(FrontendError, NotImplementedError):
    """Operators (or attributes of them) an importer does not support. The message lists every
    unsupported node of the model, not only the first (TVM raises ``tvm.error.OpNotImplemented``
    for the same case)."""


class MissingDependencyError(RelaxVMError, ImportError):
    """An optional dependency (``onnx``, ``torch``...) is not installed; the message says which
    ``pip install`` brings it."""


class NotSupportedError(RelaxVMError):
    """A TVM API that relaxvm provides so TVM code imports, but cannot run; the message says
    what to use instead. Deliberately not a ``RuntimeError``: code that expects TVM's runtime
    failure must not take this for one."""


class RPCNotSupportedError(NotSupportedError):
    """A remote-session entry point of ``relaxvm.rpc`` (TVM's ``tvm.rpc``) was called: relaxvm
    has no RPC transport; ``rpc.LocalSession`` is the session it offers."""


class CompilerNotSupportedError(NotSupportedError):
    """A ``relaxvm.contrib.cc`` compiler function was called: relaxvm has no C toolchain step
    (``export_library`` writes complete files itself)."""
