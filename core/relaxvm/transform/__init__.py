"""Relax passes and the pass infrastructure (TVM's ``relax.transform``).

``relaxvm.transform.LegalizeOps()`` and friends return :class:`Pass` objects; apply them to an
IRModule (``mod = LegalizeOps()(mod)``), compose them with :class:`Sequential`, and run them
under a :class:`PassContext`. Named pipelines come from :func:`get_pipeline`. Each pass lives
in its own module and is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .pass_infra import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    PassTimingInstrument,
    PrintIRInstrument,
    Sequential,
    function_pass,
    module_pass,
)
from .pipeline import get_pipeline, list_pipelines, register_pipeline

#: Pass constructor name -> the module (relative to relaxvm) that defines it.
_PASS_MODULES: dict[str, str] = {
    # graph-level passes
    "Normalize": ".transform.normalize",
    "LegalizeOps": ".transform.legalize_ops",
    "AnnotateTIROpPattern": ".transform.annotate_op_pattern",
    "FoldConstant": ".transform.fold_constant",
    "FuseOps": ".transform.fuse_ops",
    "FuseTIR": ".transform.fuse_tir",
    "DeadCodeElimination": ".transform.dead_code",
    "LambdaLift": ".transform.lambda_lift",
    "CanonicalizeBindings": ".transform.canonicalize_bindings",
    "BindParams": ".transform.bind_params",
    "RewriteDataflowReshape": ".transform.rewrite_dataflow_reshape",
    # lowering towards the VM
    "ToNonDataflow": ".transform.to_non_dataflow",
    "RemovePurityChecking": ".transform.remove_purity_checking",
    "CallTIRRewrite": ".transform.call_tir_rewrite",
    "StaticPlanBlockMemory": ".transform.static_plan_block_memory",
    "LowerAllocTensor": ".transform.lower_alloc_tensor",
    "KillAfterLastUse": ".transform.kill_after_last_use",
    "LowerRuntimeBuiltin": ".transform.lower_runtime_builtin",
    "ComputePrimValue": ".transform.compute_prim_value",
    "AttachGlobalSymbol": ".transform.attach_global_symbol",
    "VMShapeLower": ".backend.vm_shape_lower",
}


def __getattr__(name: str) -> Any:
    module_name = _PASS_MODULES.get(name)
    if module_name is None:
        raise AttributeError(f"module 'relaxvm.transform' has no attribute {name!r}")
    module = importlib.import_module(module_name, "relaxvm")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PASS_MODULES])


__all__ = [
    "FunctionPass",
    "ModulePass",
    "Pass",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "PassTimingInstrument",
    "PrintIRInstrument",
    "Sequential",
    "function_pass",
    "get_pipeline",
    "list_pipelines",
    "module_pass",
    "register_pipeline",
    *_PASS_MODULES,
]
