"""``relaxvm.relax.build`` and ``relaxvm.compile``: an IRModule to an Executable.

The steps follow TVM's ``relax.build``:

1. run the Relax pipeline (``"default"`` unless told otherwise) under a
   :class:`~relaxvm.transform.PassContext` whose ``target`` is the build target;
2. :class:`~relaxvm.backend.vm_codegen.VMCodeGen` writes every Relax function as VM bytecode;
3. the PrimFuncs left in the module (kernels and host shape functions) are compiled by the
   target kind's ``build`` into a runtime module that the executable imports;
4. the executable records its ``exec_mode`` ("bytecode" or "compiled"), which every VM that
   loads it (now or from a file) honours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import CompileError, RegistryError
from ..ir.relax import Function, GlobalVar, IRModule
from ..ir.relax.well_formed import WellFormedError, well_formed
from ..ir.tir import PrimFunc, lower_blocks
from ..target import Target
from ..transform.pass_infra import Pass, PassContext
from ..vm.executable.executable import EXEC_MODES, Executable
from .vm_codegen import VMCodeGen, function_symbol

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["build", "compile"]


def _as_target(target: Any) -> Target | None:
    if target is None or isinstance(target, Target):
        return target
    try:
        return Target(target)
    except RegistryError as err:
        raise CompileError(f"build: invalid target {target!r}: {err}") from None


def _pipeline(relax_pipeline: Any, target: Target | None) -> Pass | None:
    if relax_pipeline is None:
        return None
    if isinstance(relax_pipeline, Pass):
        return relax_pipeline
    if isinstance(relax_pipeline, str):
        from ..transform.pipeline import get_pipeline

        return get_pipeline(relax_pipeline, target=target)
    raise CompileError(
        f"build: relax_pipeline must be a pipeline name, a Pass or None, got "
        f"{type(relax_pipeline).__name__}"
    )


def _check_input(mod: Any) -> IRModule:
    if isinstance(mod, Function):
        return IRModule({"main": mod})
    if not isinstance(mod, IRModule):
        raise CompileError(
            f"build: expected an IRModule (or a relax Function), got {type(mod).__name__}"
        )
    try:
        well_formed(mod)
    except WellFormedError as err:
        raise CompileError(f"build: the module is ill-formed: {err}") from None
    return mod


def build(
    mod: IRModule | Function,
    target: str | Mapping[str, Any] | Target | None = None,
    params: Mapping[str, Any] | None = None,
    relax_pipeline: str | Pass | None = "default",
    exec_mode: str = "bytecode",
) -> Executable:
    """Compile ``mod`` for ``target`` (TVM's ``relax.build``).

    Parameters
    ----------
    mod : IRModule or relax.Function
        Relax functions (and optionally PrimFuncs) to compile; a lone Relax function is
        compiled as ``main``.
    target : str, dict, Target or None
        ``"llvm"``, ``Target("llvm -mcpu=...")``... With ``None``, the target of the enclosing
        ``with Target(...):`` block (:meth:`Target.current`), as in TVM; outside one, a module
        that needs kernels is built for ``llvm`` when that kind is installed, and a module
        without kernels needs no target. The build runs inside the target's scope, so passes
        and target builders see it as :meth:`Target.current`. With a target, a module compiled
        before in the same way is loaded from the whole-module cache instead
        (:mod:`relaxvm.backend.module_cache`; ``RELAXVM_MODULE_CACHE=0`` turns it off).
    params : mapping of str to array, optional
        Values bound to ``main``'s parameters of those names (``BindParams``) before the
        pipeline.
    relax_pipeline : str, Pass or None
        A registered pipeline name, a Pass, or None to run no pass (the module must then be
        lowered already).
    exec_mode : {"bytecode", "compiled"}
        How the VM runs the functions: the dispatch loop, or Python generated from the
        bytecode when the executable is loaded.

    Returns
    -------
    Executable

    Raises
    ------
    ValueError
        ``exec_mode`` is unknown.
    CompileError
        The module cannot be compiled; the message names the function, the binding and why.
    """
    if exec_mode not in EXEC_MODES:
        raise ValueError(f"Unknown exec_mode {exec_mode!r}; expected one of {EXEC_MODES}")
    mod = _check_input(mod)
    digest = None
    if target is not None or Target.current() is not None:
        from . import module_cache

        if module_cache.enabled():
            digest = module_cache.start_ir_digest(mod)  # meanwhile, the target initializes
    resolved = _as_target(target) if target is not None else Target.current()
    if resolved is None:
        return _build(mod, None, params, relax_pipeline, exec_mode)
    with resolved:
        return _cached_build(mod, resolved, params, relax_pipeline, exec_mode, digest)


def _cached_build(
    mod: IRModule,
    resolved: Target,
    params: Mapping[str, Any] | None,
    relax_pipeline: str | Pass | None,
    exec_mode: str,
    digest: Future[str] | None,
) -> Executable:
    """:func:`_build` through the whole-module cache (:mod:`.module_cache`): a module compiled
    before, the same way, is loaded instead of compiled. ``digest``: the module's digest,
    started by the caller (None: the cache is off)."""
    from . import module_cache

    key = None
    if digest is not None:
        key = module_cache.module_key(mod, resolved, params, relax_pipeline, exec_mode, digest)
    if key is not None:
        found = module_cache.lookup(key, resolved)
        if found is not None:
            return found
    executable = _build(mod, resolved, params, relax_pipeline, exec_mode)
    if key is not None:
        module_cache.store(key, executable, resolved)
    return executable


def _build(
    mod: IRModule,
    resolved: Target | None,
    params: Mapping[str, Any] | None,
    relax_pipeline: str | Pass | None,
    exec_mode: str,
) -> Executable:
    if params:
        from ..transform.bind_params import BindParams

        bound: dict[Any, Any] = dict(params)  # names or Relax Vars, as BindParams takes
        mod = BindParams("main", bound)(mod)
    passes = _pipeline(relax_pipeline, resolved)
    if passes is not None:
        current = PassContext.current()
        context = PassContext(
            opt_level=current.opt_level,
            config=current.config,
            required_pass=current.required_pass,
            disabled_pass=current.disabled_pass,
            instruments=current.instruments,
            target=resolved,
        )
        with context:
            mod = passes(mod)
    executable = VMCodeGen().run(mod)
    kernels = {gvar: func for gvar, func in mod.functions.items() if isinstance(func, PrimFunc)}
    if kernels:
        kernel_target = resolved if resolved is not None else _default_target(kernels)
        _link_kernels(executable, kernels, kernel_target)
    executable.exec_mode = exec_mode
    return executable


def _default_target(kernels: Mapping[Any, PrimFunc]) -> Target:
    from ..registry.extensions import list_target_kinds

    if "llvm" in list_target_kinds():
        return Target("llvm")
    names = ", ".join(sorted(g.name_hint for g in kernels))
    raise CompileError(
        f"build: the module has kernels ({names}) but no target was given and the 'llvm' "
        "target kind is not installed; pass target=... naming an installed kind"
    )


def _link_kernels(executable: Executable, kernels: Mapping[Any, PrimFunc], target: Target) -> None:
    """Build the PrimFuncs with the target's kind and import the result."""
    named: dict[GlobalVar | str, PrimFunc] = {}
    for gvar, func in kernels.items():
        func = lower_blocks(func)  # every target kind gets loop nests, never TIR blocks
        symbol = function_symbol(gvar, func)
        if func.attrs.get("global_symbol") != symbol:
            func = func.with_attr("global_symbol", symbol)
        named[symbol] = func
    prim_mod = IRModule(named)
    try:
        module = target.kind.build(prim_mod, target)
    except CompileError:
        raise
    except Exception as err:
        raise CompileError(
            f"build: target {target.kind.name!r} failed to build the kernels "
            f"({', '.join(sorted(map(str, named)))}): {type(err).__name__}: {err}"
        ) from err
    executable.import_module(module)
    executable.kernel_libs.append((target.kind.name, str(target), module))


def compile(
    mod: IRModule | Function,
    target: str | Mapping[str, Any] | Target | None = None,
    *,
    relax_pipeline: str | Pass | None = "default",
    params: Mapping[str, Any] | None = None,
    exec_mode: str = "bytecode",
) -> Executable:
    """Compile a Relax module into an :class:`~relaxvm.Executable` (TVM's ``tvm.compile``).

    :func:`build` with keyword-only options (see it for the parameters); ``target`` may be
    ``None``, ``"llvm"``, ``"cuda"``, a dict or a :class:`~relaxvm.target.Target`.
    """
    return build(mod, target, params, relax_pipeline, exec_mode)
