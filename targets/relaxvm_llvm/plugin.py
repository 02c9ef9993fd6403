"""Entry point of the LLVM target plugin (``[project.entry-points.relaxvm] llvm``)."""

from __future__ import annotations

from relaxvm import hookimpl
from relaxvm.registry import TargetKind, TargetRegistrar


def _build(mod, target):  # type: ignore[no-untyped-def]
    from .target import build  # llvmlite is imported only when something is compiled

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
    # The default schedules run after fusion, on the kernels the VM will call.
    from .schedule import schedule_pass

    return [schedule_pass(target)]


def _export_shared(path, payload, modules):  # type: ignore[no-untyped-def]
    from .shared_lib import export_shared

    export_shared(path, payload, modules)


@hookimpl
def relaxvm_register_targets(register: TargetRegistrar) -> None:
    """Register the ``llvm`` target kind."""
    register.register(
        TargetKind(
            name="llvm",
            device="cpu",
            build=_build,
            default_attrs=_default_attrs,
            relax_passes=_relax_passes,
            serialize=_serialize,
            load=_load,
            export_shared=_export_shared,
            doc="CPU kernels compiled with LLVM (llvmlite): vectorized, multi-threaded",
            # The same names as relaxvm_llvm.schedule.config.TARGET_ATTRS (not imported:
            # loading the plugin must stay cheap), which the target checks attributes against.
            options={
                "mcpu": "LLVM CPU name (default: the host CPU)",
                "mattr": "LLVM CPU features (default: the host's)",
                "fastmath": "fast-math flags: contract,reassoc,nsz (default), fast or strict",
                "num-threads": "threads the schedules plan for (default: the CPUs)",
                "vector-bits": "schedule vector width: 128, 256 or 512 (default: the CPU's)",
                "tile": "matmul register tile ROWSxVECTORS (default: from the registers)",
                "l2-bytes": "per-core L2 size (default: from sysfs, else 512K)",
                "l1-bytes": "per-core L1d size (default: from sysfs, else 32K)",
                "pack": "pack matmul operands into panels: 1 (default) or 0",
            },
        )
    )
