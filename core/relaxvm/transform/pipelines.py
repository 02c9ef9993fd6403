"""The built-in pipelines: ``"zero"``, ``"default"`` and its alias ``"default_build"``.

``"zero"`` (TVM's ``zero_pipeline``): legalize every op into TIR kernels and fuse them::

    LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR

``"default"`` (TVM's ``default_build_pipeline``, but fusing, which TVM's CPU default does not):
``LambdaLift`` (so local functions and closures compile), the ``"zero"`` passes, the target
kind's ``relax_passes(target)``, then the lowering to the VM::

    RewriteDataflowReshape, ToNonDataflow, RemovePurityChecking, CallTIRRewrite,
    StaticPlanBlockMemory, LowerAllocTensor, KillAfterLastUse, LowerRuntimeBuiltin,
    ComputePrimValue, VMShapeLower, AttachGlobalSymbol

``get_pipeline("default", fuse=False)`` leaves out FuseOps and FuseTIR (one kernel per op).
A pass whose module is missing makes building the pipeline fail with a
:class:`~relaxvm.errors.CompileError` naming it; no pass is ever skipped silently.
"""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from .pass_infra import Pass, Sequential
from .pipeline import register_pipeline

__all__ = ["LOWER_PASSES", "ZERO_PASSES", "default_pipeline", "zero_pipeline"]

#: The passes of the "zero" pipeline, in order.
ZERO_PASSES = ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR")
#: The lowering passes that end the "default" pipeline, in order.
LOWER_PASSES = (
    "RewriteDataflowReshape",
    "ToNonDataflow",
    "RemovePurityChecking",
    "CallTIRRewrite",
    "StaticPlanBlockMemory",
    "LowerAllocTensor",
    "KillAfterLastUse",
    "LowerRuntimeBuiltin",
    "ComputePrimValue",
    "VMShapeLower",
    "AttachGlobalSymbol",
)
_FUSION = ("FuseOps", "FuseTIR")


def _make(name: str, pipeline: str) -> Pass:
    from .. import transform

    try:
        factory = getattr(transform, name)
    except (ImportError, AttributeError) as err:
        raise CompileError(
            f"pipeline {pipeline!r}: the pass {name} is not available ({type(err).__name__}: {err})"
        ) from err
    made = factory()
    if not isinstance(made, Pass):
        raise CompileError(f"pipeline {pipeline!r}: {name}() returned {made!r}, not a Pass")
    return made


def _target_passes(target: Any) -> list[Pass]:
    if target is None:
        return []
    kind = getattr(target, "kind", None)
    hook = getattr(kind, "relax_passes", None)
    if hook is None:
        return []
    passes = list(hook(target))
    for index, item in enumerate(passes):
        if not isinstance(item, Pass):
            raise CompileError(
                f"target {kind.name!r}: relax_passes returned {type(item).__name__} at "  # type: ignore[union-attr]
                f"position {index}, not a Pass"
            )
    return passes


@register_pipeline("zero")
def zero_pipeline(target: Any = None, fuse: bool = True) -> Pass:
    """Legalize and fuse (see the module docstring)."""
    names = [n for n in ZERO_PASSES if fuse or n not in _FUSION]
    return Sequential([_make(n, "zero") for n in names], name="zero")


def default_pipeline(target: Any = None, fuse: bool = True) -> Pass:
    """Everything from Relax ops to VM-ready functions (see the module docstring)."""
    names = ["LambdaLift", *(n for n in ZERO_PASSES if fuse or n not in _FUSION)]
    passes = [_make(n, "default") for n in names]
    passes += _target_passes(target)
    passes += [_make(n, "default") for n in LOWER_PASSES]
    return Sequential(passes, name="default")


register_pipeline("default", default_pipeline)
register_pipeline("default_build", default_pipeline)
