"""Entry point of the CUDA target plugin (``[project.entry-points.relaxvm] cuda``).

Loading the plugin (every process that uses relaxvm's plugins does) must stay cheap and must
work without a GPU: it imports neither llvmlite nor ``libcuda.so.1``. The target's code
generator loads on the first build, the driver on the first allocation, copy or launch.
"""

from __future__ import annotations

from typing import Any

from relaxvm import hookimpl
from relaxvm.registry import FunctionRegistrar, TargetKind, TargetRegistrar

from .options import TARGET_OPTIONS


def _build(mod, target):  # type: ignore[no-untyped-def]
    from .target import build

    return build(mod, target)


def _default_attrs():  # type: ignore[no-untyped-def]
    from .target import default_attrs

    return default_attrs()


def _serialize(module):  # type: ignore[no-untyped-def]
    from .target import serialize

    return serialize(module)


def _load(data, target):  # type: ignore[no-untyped-def]
    from .target import load

    return load(data, target)


def _relax_passes(target):  # type: ignore[no-untyped-def]
    # The GPU schedules bind the fused kernels' loops to blocks and threads, after fusion.
    from .schedule import schedule_pass

    return [schedule_pass(target)]


def _device_api() -> Any:
    from .device import cuda_device_api

    return cuda_device_api()


@hookimpl
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register ``device_api.cuda`` (the API object itself needs no driver)."""
    registry.register("device_api.cuda", _device_api)


@hookimpl
def relaxvm_register_targets(register: TargetRegistrar) -> None:
    """Register the ``cuda`` target kind."""
    register.register(
        TargetKind(
            name="cuda",
            device="cuda",
            build=_build,
            default_attrs=_default_attrs,
            relax_passes=_relax_passes,
            serialize=_serialize,
            load=_load,
            doc="NVIDIA GPU kernels: TIR -> LLVM NVPTX -> PTX, run through the CUDA driver",
            options=dict(TARGET_OPTIONS),
        )
    )
